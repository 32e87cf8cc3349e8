"""The packed file's reader: header, pieces, map and tensors, and Q4_0 both ways."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from textgate.encoders import e5file
from textgate.errors import TrainError


def test_a_q4_0_block_dequantizes_by_its_layout() -> None:
    # scale 0.5; byte j: low nibble j (weight j), high nibble 15 - j (weight j + 16)
    nibbles = bytes((j & 0xF) | ((15 - j) << 4) for j in range(16))
    block = np.float16(0.5).tobytes() + nibbles
    got = e5file.dequantize_q4_0(block, 32)
    want = [(j - 8) * 0.5 for j in range(16)] + [(15 - j - 8) * 0.5 for j in range(16)]
    assert got.tolist() == want


def test_quantizing_rounds_each_weight_to_within_a_step() -> None:
    # the block's peak is exactly -8 steps; the other sign stops at +7 (clipped by < 1 step)
    w = np.random.default_rng(1).normal(0, 1, 32 * 50).astype(np.float32)
    back = e5file.dequantize_q4_0(e5file.quantize_q4_0(w), w.size)
    step = (np.abs(w.reshape(-1, 32)).max(axis=1) / 8)[:, None]
    err = np.abs(back - w).reshape(-1, 32)
    assert np.all(err <= step + 1e-6) and np.mean(err <= step / 2 + 1e-6) > 0.95


def test_requantizing_the_packaged_weights_gives_back_their_bytes(real_file: Path) -> None:
    f = e5file.read(real_file)
    t = f.tensors["l3.fi.w"]
    raw = f.raw[t.offset : t.offset + t.nbytes]
    assert e5file.quantize_q4_0(e5file.dequantize_q4_0(raw, t.elements)) == raw


def test_the_packaged_file_reads_as_multilingual_e5_small(real_file: Path) -> None:
    f = e5file.read(real_file)
    h = f.header
    assert (h.hidden, h.layers, h.heads, h.intermediate) == (384, 12, 12, 1536)
    assert (h.vocab, h.max_positions, h.block) == (250037, 512, 32)
    v = f.vocab
    assert len(v.pieces) == 250002 and v.pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert (v.bos, v.pad, v.eos, v.unk) == (0, 1, 2, 3)
    assert v.normalization[0xFF0C] == ","  # full-width comma, as NFKC
    assert 0xFF5E not in v.normalization  # the map keeps the full-width tilde (NFKC: "~")
    assert v.normalization[0x200B] == " " and v.normalization[0x01] == ""
    assert f.matrix("emb.word", 384).shape == (250037, 384)


def test_the_tiny_file_reads_back_what_was_written(tiny_file: tuple[Path, dict]) -> None:
    path, weights = tiny_file
    f = e5file.read(path)
    assert f.header.hidden == 64 and f.vocab.pieces[5] == "▁a"
    assert f.vocab.normalization == {0xFF0C: ",", 0xFF01: "!", 0x09: " ", 0x01: ""}
    assert np.array_equal(f.matrix("emb.pos", 64), weights["emb.pos"])
    q = f.matrix("l1.fi.w", 64)
    assert q.shape == (128, 64) and np.abs(q - weights["l1.fi.w"]).max() < 0.1


def test_a_file_that_is_not_one_is_refused_by_name(tmp_path: Path) -> None:
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(TrainError, match="no E5S1 magic"):
        e5file.read(bad)


def test_a_truncated_file_is_refused_not_misread(
    tiny_file: tuple[Path, dict], tmp_path: Path
) -> None:
    path, _ = tiny_file
    short = tmp_path / "short.bin"
    short.write_bytes(path.read_bytes()[:200])
    with pytest.raises(TrainError, match="truncated"):
        e5file.read(short)


def test_an_implausible_header_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"E5S1" + struct.pack("<I7ifi", 1, 384, 12, 5, 1536, 10, 512, 2, 1e-12, 32))
    with pytest.raises(TrainError, match="implausible header"):
        e5file.read(bad)

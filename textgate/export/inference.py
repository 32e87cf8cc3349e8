"""ONNX Runtime on CPU with the bundle's own tokenizer: what serving will do, minus Triton.

Only numpy, tokenizers and onnxruntime: the variant gate measures the bundle exactly as the
serving path will load it, with no transformers in the loop.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from textgate import window

BATCH = 32


def threads() -> int:
    # The build machines are small and shared; more threads than cores only adds noise.
    return max(1, min(2, os.cpu_count() or 1))


def load_tokenizer(path: Path, max_length: int = 0, tail: int = 0) -> Any:
    """The bundle tokenizer: truncation and padding are configured inside tokenizer.json,
    except a head + tail window (``tail`` > 0), which ``tokenizers`` cannot express."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    return Windowed(tok, max_length, tail) if tail > 0 else tok


class Windowed:
    """A tokenizer that reads a long text's head and its last ``tail`` tokens
    (``textgate.window``, as Triton's tokenize step does)."""

    def __init__(self, tokenizer: Any, max_length: int, tail: int) -> None:
        self.pad_id = int((tokenizer.padding or {}).get("pad_id", 0))
        self.tokenizer = _unpadded(tokenizer)
        self.tokenizer.no_truncation()
        self.max_length, self.tail = max_length, tail

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        ml, tail = self.max_length, self.tail
        encs = self.tokenizer.encode_batch([window.bound(t, ml, tail) for t in texts])
        return [window.fit(e.ids, ml, tail) for e in encs]


def encode(tokenizer: Any, texts: Sequence[str]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Batches of (input_ids, attention_mask), int64, padded to the longest in the batch."""
    for start in range(0, len(texts), BATCH):
        chunk = list(texts[start : start + BATCH])
        if isinstance(tokenizer, Windowed):
            rows, masks = window.pad(tokenizer.ids(chunk), tokenizer.pad_id)
            yield np.array(rows, dtype=np.int64), np.array(masks, dtype=np.int64)
            continue
        encs = tokenizer.encode_batch(chunk)
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        yield ids, mask


def by_length(
    tokenizer: Any, texts: Sequence[str]
) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """``encode`` over ``texts`` sorted by token count, and the order: row ``i`` of the
    batches is ``texts[order[i]]``. Mail spans 10 to 128+ tokens; batches of like lengths
    pad 16 % fewer tokens on the e-mail test split, and every gate runs over them."""
    if isinstance(tokenizer, Windowed):
        lengths = [len(ids) for ids in tokenizer.ids(texts)]
    else:
        lengths = [len(e.ids) for e in _unpadded(tokenizer).encode_batch(list(texts))]
    order = np.argsort(np.asarray(lengths, dtype=np.int64), kind="stable")
    return list(encode(tokenizer, [texts[i] for i in order])), order


def _unpadded(tokenizer: Any) -> Any:
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(tokenizer.to_str())
    copy.no_padding()
    return copy


def in_order(probs: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    """Rows of ``probs`` (computed in ``order``) back in the texts' own order."""
    if order is None:
        return probs
    out = np.empty_like(probs)
    out[order] = probs
    return out


def session(path: Path) -> Any:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads()
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3  # fp16 on CPU logs a cast warning per node; not news
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return np.asarray(e / e.sum(axis=1, keepdims=True))


def predict(sess: Any, batches: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Class probabilities (float64) for every row of every batch, in order."""
    out = [
        sess.run(["logits"], {"input_ids": ids, "attention_mask": mask})[0] for ids, mask in batches
    ]
    return softmax(np.concatenate(out, axis=0))


def latency_ms(sess: Any, sample: np.ndarray, batch: int, seq_len: int) -> float:
    """Median wall time of one run at ``batch`` x ``seq_len`` (real token ids, no padding)."""
    flat = np.resize(sample, batch * seq_len).reshape(batch, seq_len).astype(np.int64)
    feed = {"input_ids": flat, "attention_mask": np.ones_like(flat)}
    sess.run(["logits"], feed)  # warm-up: first run allocates
    times: list[float] = []
    budget = time.perf_counter() + 1.0
    while len(times) < 3 or (len(times) < 20 and time.perf_counter() < budget):
        t0 = time.perf_counter()
        sess.run(["logits"], feed)
        times.append((time.perf_counter() - t0) * 1000.0)
    return round(statistics.median(times), 3)

"""The ceiling: bare ONNX Runtime on the same model file, pre-tokenized, length-sorted.

No server, no serialization, no tokenizer in the timed loop, and batches that carry almost
no padding (texts sorted by length, then cut into batches). What textgate reaches through
Triton is reported as a fraction of this. ``order="arrival"`` gives the same batches in
arrival order, i.e. what padding costs a batcher that does not group by length.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textgate.export import inference


@dataclass(frozen=True)
class Encoded:
    ids: tuple[tuple[int, ...], ...]
    pad_id: int


def encode(tokenizer_file: Path, texts: Sequence[str], max_length: int, tail: int = 0) -> Encoded:
    """Token ids as the bundle's tokenize step cuts them (``tail``: its head + tail window)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_file))
    tok.no_padding()
    pad = tok.token_to_id("[PAD]")
    if pad is None:
        pad = tok.token_to_id("<pad>") or 0
    if tail:  # the bundle tokenizer's own window, as the gates and the tokenize step cut
        windowed = inference.Windowed(tok, max_length, tail)
        return Encoded(tuple(tuple(ids) for ids in windowed.ids(texts)), int(pad))
    tok.enable_truncation(max_length)
    return Encoded(tuple(tuple(e.ids) for e in tok.encode_batch(list(texts))), int(pad))


def session(model_file: Path, threads: int) -> Any:
    """A CPU session with ``threads`` intra-op threads (0: ONNX Runtime's default)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])


def _feed(sess: Any, rows: Sequence[Sequence[int]], pad_id: int) -> dict[str, np.ndarray]:
    width = max(len(r) for r in rows)
    ids = np.full((len(rows), width), pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    feed = {}
    for inp in sess.get_inputs():
        if inp.name == "attention_mask":
            feed[inp.name] = mask
        elif inp.name == "input_ids":
            feed[inp.name] = ids
        else:  # token_type_ids: one segment
            feed[inp.name] = np.zeros_like(ids)
    return feed


def plan(enc: Encoded, batch_size: int, order: str) -> list[list[int]]:
    """Indices per batch: length-sorted (``sorted``) or as they arrived (``arrival``)."""
    idx = list(range(len(enc.ids)))
    if order == "sorted":
        idx.sort(key=lambda i: len(enc.ids[i]))
    elif order != "arrival":
        raise ValueError(f"unknown order {order!r}")
    return [idx[i : i + batch_size] for i in range(0, len(idx), batch_size)]


def throughput(sess: Any, enc: Encoded, *, batch_size: int = 8, order: str = "sorted") -> float:
    """Texts per second over the whole workload (one warm-up batch first)."""
    return measure(sess, enc, batch_size=batch_size, order=order)[0]


def measure(
    sess: Any, enc: Encoded, *, batch_size: int = 8, order: str = "sorted"
) -> tuple[float, float]:
    """(texts per wall second, texts per CPU second of this process). On a shared machine
    the second is the fairer one: it does not depend on how much CPU the neighbours took."""
    batches = plan(enc, batch_size, order)
    sess.run(None, _feed(sess, [enc.ids[i] for i in batches[0]], enc.pad_id))
    t0, c0 = time.perf_counter(), time.process_time()
    for b in batches:
        sess.run(None, _feed(sess, [enc.ids[i] for i in b], enc.pad_id))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return len(enc.ids) / wall, len(enc.ids) / cpu if cpu > 0 else float("nan")


def predictions(sess: Any, enc: Encoded, batch_size: int = 32) -> np.ndarray:
    """Arg-max class per text, in workload order."""
    out = np.zeros(len(enc.ids), dtype=np.int64)
    for b in plan(enc, batch_size, "sorted"):
        logits = sess.run(None, _feed(sess, [enc.ids[i] for i in b], enc.pad_id))[0]
        out[b] = np.argmax(logits, axis=1)
    return out

"""Parity gate: PyTorch vs ONNX Runtime, and the bundle tokenizer vs the checkpoint's.

Runs in a child process (``python -m textgate.export.parity REQUEST REPORT``) so a crash
in torch or ORT cannot take down the caller and both runtimes' memory is returned when it
ends. Every mismatching text is collected before the verdict, so one failed run shows the
whole picture (the habit of optimum's ``validate_model_outputs``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from textgate import window
from textgate.encoders import heads
from textgate.errors import ExportError

ATOL = 1e-4
_TIMEOUT_S = 1800


def judge(ref: np.ndarray, got: np.ndarray, *, atol: float = ATOL) -> dict[str, Any]:
    """Compare two probability matrices row by row; pure, so it is unit-tested directly.

    An arg-max difference where the reference's top two classes lie within ``atol`` of each
    other is a tie, not a mismatch: at that margin the class is not determined at the
    precision the gate promises, and both outputs are within tolerance anyway.
    """
    if ref.shape != got.shape:
        raise ValueError(f"shape {got.shape} differs from reference {ref.shape}")
    diff = np.abs(ref - got).max(axis=1)
    top = np.sort(ref, axis=1)
    margin = top[:, -1] - top[:, -2]
    differ = ref.argmax(axis=1) != got.argmax(axis=1)
    ties = differ & (margin <= atol)
    flips = differ & ~ties
    # NaN is never "> atol" and argmax of a NaN row is 0, so overflow needs its own test.
    broken = ~np.isfinite(got).all(axis=1)
    mismatches = [
        f"text #{i}: output is not finite ({got[i].tolist()})"
        if broken[i]
        else f"text #{i}: |Δp| = {diff[i]:.3g}"
        + (f", argmax {int(ref[i].argmax())} -> {int(got[i].argmax())}" if flips[i] else "")
        for i in np.flatnonzero(broken | (diff > atol) | flips)
    ]
    n = len(ref)
    return {
        "n": n,
        "max_abs_diff": float(diff.max()) if n else 0.0,
        "mean_abs_diff": float(np.abs(ref - got).mean()) if n else 0.0,
        "argmax_agreement": float(1.0 - flips.sum() / n) if n else 1.0,
        "argmax_ties": int(ties.sum()),
        "atol": atol,
        "mismatches": mismatches,
        "passed": not mismatches,
    }


def _hf_batch(hf: Any, chunk: list[str], max_length: int, tail: int) -> tuple[Any, Any]:
    """The checkpoint tokenizer's (ids, mask) for ``chunk``, as training encoded it."""
    if not tail:
        enc = hf(chunk, padding=True, truncation=True, max_length=max_length, return_tensors="np")
        return enc["input_ids"], enc["attention_mask"]
    rows, masks = window.pad(window.hf_ids(hf, chunk, max_length, tail), hf.pad_token_id)
    return np.array(rows, dtype=np.int64), np.array(masks, dtype=np.int64)


def _token_check(
    hf: Any, bundle_tok: Any, texts: Sequence[str], max_length: int, tail: int = 0
) -> list[str]:
    """Texts whose ids or mask from the bundle tokenizer differ from the checkpoint's."""
    from textgate.export import inference

    bad: list[str] = []
    for b, (ids, mask) in enumerate(inference.encode(bundle_tok, texts)):
        chunk = list(texts[b * inference.BATCH : (b + 1) * inference.BATCH])
        want_ids, want_mask = _hf_batch(hf, chunk, max_length, tail)
        if want_ids.shape != ids.shape:
            bad.append(f"batch {b}: shape {ids.shape} != checkpoint {want_ids.shape}")
            continue
        for row in np.flatnonzero((want_ids != ids).any(axis=1) | (want_mask != mask).any(axis=1)):
            bad.append(f"text #{b * inference.BATCH + row}: token ids differ from the checkpoint's")
    return bad


def _compute(req: dict[str, Any]) -> dict[str, Any]:
    """The child's work: torch and ORT on the same token ids, plus the tokenizer lock."""
    import torch
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    from textgate.export import inference

    torch.set_num_threads(inference.threads())
    hf_logging.disable_progress_bar()
    texts: list[str] = req["texts"]
    max_length: int = req["max_length"]
    tail: int = req.get("tail", 0)
    hf = AutoTokenizer.from_pretrained(req["checkpoint"])
    # The reference is the checkpoint as users run it (default attention), not the export path.
    pooling = heads.stored_pooling(req["checkpoint"])  # the head it was trained with
    model = heads.classifier_class(pooling).from_pretrained(req["checkpoint"]).eval()
    sess = inference.session(Path(req["onnx"]))
    ref, got, lengths = [], [], []
    for start in range(0, len(texts), inference.BATCH):
        chunk = texts[start : start + inference.BATCH]
        np_ids, np_mask = _hf_batch(hf, list(chunk), max_length, tail)
        ids, mask = torch.from_numpy(np_ids), torch.from_numpy(np_mask)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask).logits.numpy()
        ref.append(inference.softmax(logits))
        got.append(inference.predict(sess, [(ids.numpy(), mask.numpy())]))
        lengths += mask.sum(dim=1).tolist()
    report = judge(np.concatenate(ref), np.concatenate(got), atol=req["atol"])
    bundle_tok = inference.load_tokenizer(Path(req["tokenizer"]), max_length, tail)
    token_bad = _token_check(hf, bundle_tok, texts, max_length, tail)
    report["tokenizer"] = {"ids_match": not token_bad, "n": len(texts), "mismatches": token_bad}
    report["mismatches"] += [f"tokenizer: {m}" for m in token_bad]
    report["passed"] = not report["mismatches"]
    report["lengths"] = {
        "min": int(min(lengths)),
        "max": int(max(lengths)),
        "mean": round(float(np.mean(lengths)), 2),
        "truncated": int(sum(n >= max_length for n in lengths)),
    }
    report["padded_rows"] = int(sum(n < max(lengths) for n in lengths))
    return report


def run(
    *,
    checkpoint: Path,
    onnx_path: Path,
    tokenizer: Path,
    texts: Sequence[str],
    max_length: int,
    tail: int = 0,
    atol: float = ATOL,
) -> dict[str, Any]:
    """Run the gate in a child process and return its report (pass or fail)."""
    req = {
        "checkpoint": str(checkpoint),
        "onnx": str(onnx_path),
        "tokenizer": str(tokenizer),
        "texts": list(texts),
        "max_length": max_length,
        "tail": tail,
        "atol": atol,
    }
    with tempfile.TemporaryDirectory(prefix="textgate-parity-") as tmp:
        req_path, rep_path = Path(tmp) / "request.json", Path(tmp) / "report.json"
        req_path.write_text(json.dumps(req), encoding="utf-8")
        cmd = [sys.executable, "-m", "textgate.export.parity", str(req_path), str(rep_path)]
        # Offline always; and the child imports this very textgate, installed or not.
        root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": path}
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=_TIMEOUT_S, env=env, check=False
            )
        except subprocess.TimeoutExpired:
            raise ExportError(f"parity check did not finish in {_TIMEOUT_S} s") from None
        if proc.returncode != 0 or not rep_path.is_file():
            log = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise ExportError(
                f"parity check crashed (exit {proc.returncode}):\n{log}",
                hint="run `python -m textgate.export.parity` by hand to see the whole log",
            )
        report: dict[str, Any] = json.loads(rep_path.read_text(encoding="utf-8"))
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m textgate.export.parity REQUEST.json REPORT.json", file=sys.stderr)
        return 2
    req = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    report = _compute(req)
    Path(args[1]).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

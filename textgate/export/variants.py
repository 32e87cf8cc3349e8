"""Serving variants of the fp32 model, each measured against fp32 and gated.

``fp32-opt``: ORT's offline transformer optimizer (Attention, EmbedLayerNormalization,
SkipLayerNormalization, BiasGelu fusions). ``fp16``: for GPUs, converted from the fused
model with overflow-prone ops kept in fp32 and fp32 I/O. ``int8``: dynamic quantization
for CPUs by the recipe ``quantize.INT8`` (the feed-forward matmuls kept in fp32). A variant
that costs more than ``max_f1_drop`` F1 or agrees with fp32 on fewer than
``min_agreement`` of the test texts is ``rejected``: kept for inspection, never served by
default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textgate.errors import ExportError
from textgate.export import inference, quantize
from textgate.export.checkpoint import Checkpoint

NAMES = ("fp32", "fp32-opt", "fp16", "int8")
OPTIONAL = ("fp32-opt", "fp16", "int8")
FILES = {
    "fp32": "model.onnx",
    "fp32-opt": "model.opt.onnx",
    "fp16": "model.fp16.onnx",
    "int8": "model.int8.onnx",
}
# Kept in fp32 in the fp16 model: normalisation and exponent/reduction ops overflow or lose
# precision in half; fused Attention computes its softmax in fp32 internally.
FP16_KEEP_FP32 = (
    "LayerNormalization",
    "SkipLayerNormalization",
    "EmbedLayerNormalization",
    "SimplifiedLayerNormalization",
    "SkipSimplifiedLayerNormalization",
    "Softmax",
    "ReduceMean",
    "ReduceSum",
    "Pow",
    "Sqrt",
    "Exp",
    "Log",
    "Erf",
)


@dataclass(frozen=True, kw_only=True)
class Gate:
    max_f1_drop: float = 0.005
    min_agreement: float = 0.995

    def judge(
        self, agreement: float, f1_delta: float | None, non_finite: int = 0, n: int = 0
    ) -> tuple[str, str | None]:
        """``(status, reason)``: every failed criterion is named, not only the first."""
        reasons = []
        if non_finite:
            reasons.append(f"{non_finite} of {n} outputs are not finite (overflow in the graph)")
        if agreement < self.min_agreement:
            reasons.append(f"argmax agreement with fp32 {agreement:.4f} < {self.min_agreement}")
        if f1_delta is not None and -f1_delta > self.max_f1_drop:
            reasons.append(f"F1 drops by {-f1_delta:.4f} > {self.max_f1_drop}")
        return ("rejected", "; ".join(reasons)) if reasons else ("accepted", None)


# --- building ---------------------------------------------------------------------------


def build_optimized(src: Path, dst: Path, ckpt: Checkpoint) -> dict[str, int]:
    """Fuse with ORT's BERT optimizer; returns the fused-operator counts."""
    from onnxruntime.transformers import optimizer

    # opt_level 0: offline Python fusions only, so the file stays portable across EPs.
    model = optimizer.optimize_model(
        str(src),
        model_type="bert",  # the BERT fusions also match DistilBERT and RoBERTa graphs
        num_heads=ckpt.num_heads,
        hidden_size=ckpt.hidden_size,
        opt_level=0,
        use_gpu=False,
    )
    model.save_model_to_file(str(dst))
    stats = model.get_fused_operator_statistics()
    return {k: int(v) for k, v in stats.items() if v}


def build_fp16(src: Path, dst: Path) -> None:
    import onnx
    from onnxruntime.transformers.onnx_model import OnnxModel

    model = OnnxModel(onnx.load(str(src)))
    model.convert_float_to_float16(keep_io_types=True, op_block_list=list(FP16_KEEP_FP32))
    model.save_model_to_file(str(dst))


def build_int8(src: Path, dst: Path) -> None:
    """``quantize.INT8``, chosen against the other recipes by
    ``benchmarks/studies/export/int8_recipes.py``."""
    quantize.quantize(src, dst, quantize.INT8)


def build(name: str, bundle_dir: Path, ckpt: Checkpoint, source: Path) -> dict[str, Any]:
    """Write one variant's file; returns build facts (fusion counts) for the manifest."""
    dst = bundle_dir / FILES[name]
    try:
        if name == "fp32-opt":
            return {"fused_ops": build_optimized(bundle_dir / FILES["fp32"], dst, ckpt)}
        if name == "fp16":
            build_fp16(source, dst)
        elif name == "int8":
            build_int8(source, dst)
            return {"source": source.name, "recipe": quantize.INT8.name}
        return {"source": source.name}
    except Exception as exc:  # ORT's tools raise anything from AssertionError up
        raise ExportError(
            f"building variant {name} ({dst.name}) failed: {type(exc).__name__}: {exc}",
            hint=f"retry without it: --variants {','.join(v for v in OPTIONAL if v != name)}",
        ) from exc


# --- measuring --------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class EvalSet:
    """Pre-tokenised texts (bundle tokenizer) and, when the checkpoint has them, labels."""

    batches: list[tuple[np.ndarray, np.ndarray]]
    labels: tuple[int, ...]  # empty when there is no test split
    label_names: tuple[str, ...]
    max_length: int
    source: str  # "test split" or "generated texts"
    # row i of the batches is text order[i] (inference.by_length); None: in the texts' order
    order: np.ndarray | None = None

    @property
    def n(self) -> int:
        return sum(len(ids) for ids, _ in self.batches)


def f1_score(labels: Sequence[str], y_true: Sequence[int], probs: np.ndarray) -> dict[str, float]:
    from textgate import metrics

    rep = metrics.classification_report(list(y_true), probs, list(labels))
    return {k: float(rep[k]) for k in ("accuracy", "f1", "macro_f1")}


def evaluate(
    path: Path, data: EvalSet, reference: np.ndarray | None, gate: Gate
) -> tuple[dict[str, Any], np.ndarray]:
    """One variant's row of the table and its probabilities (fp32's are the reference)."""
    try:
        sess = inference.session(path)
        probs = inference.in_order(inference.predict(sess, data.batches), data.order)
    except Exception as exc:  # ORT raises its own types; failing to run is a finding
        return _unverified(path, exc), np.empty(0)
    ref = probs if reference is None else reference
    diff = np.abs(probs - ref)
    agreement = float((probs.argmax(axis=1) == ref.argmax(axis=1)).mean())
    row: dict[str, Any] = {
        "file": path.name,
        "agreement": agreement,
        "max_abs_diff": float(diff.max()),
        "mean_abs_diff": float(diff.mean()),
        "n": data.n,
        "evaluated_on": f"CPUExecutionProvider ({data.source})",
    }
    if data.labels:
        mine = f1_score(data.label_names, data.labels, probs)
        base = f1_score(data.label_names, data.labels, ref)
        row["metrics"] = mine
        row["f1_delta"] = mine["f1"] - base["f1"]
        row["accuracy_delta"] = mine["accuracy"] - base["accuracy"]
    else:
        row["f1_delta"] = row["accuracy_delta"] = None
    # A NaN row's argmax is 0, so it can "agree" with fp32; count such rows separately.
    non_finite = int((~np.isfinite(probs).all(axis=1)).sum())
    row["status"], reason = gate.judge(agreement, row["f1_delta"], non_finite, data.n)
    if reason:
        row["reason"] = reason
    row["latency_ms"] = _latency(sess, data)
    return row, probs


def _latency(sess: Any, data: EvalSet) -> dict[str, Any]:
    sample = np.concatenate([ids[mask.astype(bool)] for ids, mask in data.batches])
    seq = min(64, data.max_length)
    return {
        "batch1": inference.latency_ms(sess, sample, 1, seq),
        "batch32": inference.latency_ms(sess, sample, 32, seq),
        "seq_len": seq,
        "threads": inference.threads(),
    }


def _unverified(path: Path, exc: Exception) -> dict[str, Any]:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    why = (
        "needs a GPU to evaluate; ONNX Runtime's CPU EP cannot run it here"
        if path.name == FILES["fp16"]
        else "ONNX Runtime cannot run it on CPU"
    )
    return {
        "file": path.name,
        "status": "unverified",
        "reason": f"{why}: {first[:300]}",
        "agreement": None,
        "f1_delta": None,
    }

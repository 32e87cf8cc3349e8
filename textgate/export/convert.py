"""PyTorch checkpoint -> ONNX (``input_ids``, ``attention_mask`` -> ``logits``).

Exporter choice, measured with torch 2.13 / transformers 5 / ORT 1.32 on tiny BERT and
DistilBERT (pinned by ``tests/integration/test_export.py``):

* the default dynamo exporter bumps opset 17 to 18 and converts back, writes weights to a
  separate ``.data`` file, and its attention pattern is not fused by ORT's optimizer
  (0 ``Attention`` nodes);
* the TorchScript exporter (``dynamo=False``) keeps opset 17, writes one file, and with the
  *eager* attention implementation ORT fuses every layer (``Attention``,
  ``EmbedLayerNormalization``, ``SkipLayerNormalization``, ``BiasGelu``).

So: eager attention + ``dynamo=False``. SDPA attention (transformers 5's default) exports
an op pattern the optimizer cannot fuse either.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from textgate.encoders import heads
from textgate.errors import ExportError, require
from textgate.export.checkpoint import Checkpoint

INPUTS = ("input_ids", "attention_mask")
OUTPUTS = ("logits",)
USE_DYNAMO = False  # see the module docstring


def load_model(ckpt: Checkpoint, attn: str = "eager") -> Any:
    """The checkpoint's sequence classifier in eval mode (lazy torch import)."""
    require("torch", "train")
    require("transformers", "train")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own progress line says what is happening
    try:
        model = heads.classifier_class(heads.stored_pooling(ckpt.path)).from_pretrained(
            str(ckpt.path), attn_implementation=attn
        )
    except (OSError, ValueError, RuntimeError) as exc:
        raise ExportError(
            f"{ckpt.path}: the model cannot be loaded ({exc})",
            hint="check that config.json and the weights were saved together",
        ) from None
    return model.eval()


def _logits_module(model: Any) -> Any:
    import torch

    class Logits(torch.nn.Module):
        """Only the two inputs every family shares: DistilBERT and RoBERTa take no
        ``token_type_ids``, and BERT's default (all zeros) is what single texts use."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask).logits

    return Logits(model).eval()


def example_inputs(ckpt: Checkpoint) -> tuple[Any, Any]:
    """A padded batch of two: tracing with padding keeps the mask path in the graph."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(ckpt.path))
    enc = tok(
        ["short text", "a longer text so that the first one is padded to this length"],
        padding=True,
        truncation=True,
        max_length=ckpt.max_length,
        return_tensors="pt",
    )
    return enc["input_ids"], enc["attention_mask"]


def to_onnx(ckpt: Checkpoint, out: Path, *, opset: int = 17) -> Path:
    """Export, then run the full ONNX checker; raises ``ExportError`` naming the file."""
    import torch

    model = _logits_module(load_model(ckpt))
    dynamic = {
        "input_ids": {0: "batch", 1: "sequence"},
        "attention_mask": {0: "batch", 1: "sequence"},
    }
    with warnings.catch_warnings(), torch.no_grad():
        # Tracer and deprecation warnings are expected for this path; parity is the check.
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(
                model,
                example_inputs(ckpt),
                str(out),
                input_names=list(INPUTS),
                output_names=list(OUTPUTS),
                dynamic_axes={**dynamic, "logits": {0: "batch"}},
                opset_version=opset,
                do_constant_folding=True,
                dynamo=USE_DYNAMO,
            )
        except Exception as exc:  # the exporter raises many types; all mean "cannot export"
            raise ExportError(
                f"{ckpt.path}: ONNX export failed: {type(exc).__name__}: {exc}",
                hint=f"textgate exports eager-attention encoders at opset >= 17 (got {opset})",
            ) from exc
    check(out, num_labels=len(ckpt.labels))
    return out


def check(path: Path, *, num_labels: int) -> None:
    """Full ONNX checker plus the I/O contract of docs/formats.md."""
    import onnx

    try:
        onnx.checker.check_model(str(path), full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise ExportError(f"{path.name}: ONNX checker failed: {exc}") from None
    graph = onnx.load(str(path), load_external_data=False).graph
    got_in = {i.name: i.type.tensor_type for i in graph.input}
    got_out = {o.name: o.type.tensor_type for o in graph.output}
    problems = []
    for name in INPUTS:
        t = got_in.get(name)
        if t is None or t.elem_type != onnx.TensorProto.INT64 or len(t.shape.dim) != 2:
            problems.append(f"input {name} must be int64 [batch, sequence]")
        elif not all(d.dim_param for d in t.shape.dim):
            problems.append(f"input {name} must have dynamic batch and sequence axes")
    t = got_out.get("logits")
    if t is None or t.elem_type != onnx.TensorProto.FLOAT or len(t.shape.dim) != 2:
        problems.append("output logits must be float32 [batch, num_labels]")
    elif not t.shape.dim[0].dim_param or t.shape.dim[1].dim_value != num_labels:
        problems.append(f"output logits must be [batch, {num_labels}]")
    if set(got_in) != set(INPUTS) or set(got_out) != set(OUTPUTS):
        problems.append(f"graph I/O is {sorted(got_in)} -> {sorted(got_out)}")
    if problems:
        raise ExportError(f"{path.name}: " + "; ".join(problems))

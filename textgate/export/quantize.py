"""int8 recipes: how an fp32 graph becomes the ``int8`` variant.

A recipe is data (``Int8Recipe``), so ``build_int8`` and
``benchmarks/studies/export/int8_recipes.py`` run the very same code and the benchmark's table
is a table of what the export could ship.
``quantize`` is the only caller of ONNX Runtime's quantization tools.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from textgate.errors import ExportError
from textgate.export import inference

# Node groups a recipe may keep in fp32, found by name in BERT-family exports.
EXCLUDABLE = ("head", "first-layer", "last-layer", "last-ffn", "ffn-out", "ffn-in")
Feed = dict[str, np.ndarray]
CALIBRATION_ROWS = 256  # validation rows; ranges settle well before that on these encoders
_LAYER = re.compile(r"/layer\.(\d+)/")
_ATTENTION = re.compile(r"^Attention_(\d+)$")  # the optimizer names fused layers in order


@dataclass(frozen=True, kw_only=True)
class Int8Recipe:
    name: str
    static: bool = False  # calibrated activation ranges instead of per-batch ones
    op_types: tuple[str, ...] | None = None  # None: every op ORT can quantize
    exclude: tuple[str, ...] = ()  # groups of EXCLUDABLE kept in fp32
    per_channel: bool = True
    reduce_range: bool = True
    matmul_const_b_only: bool = False
    weight_symmetric: bool | None = None  # None: ORT's default (symmetric)
    activation_symmetric: bool | None = None
    qdq: bool = True  # static only: QDQ pairs, else QOperator (QLinearMatMul ...)
    calibrate: Literal["minmax", "percentile", "entropy"] = "minmax"

    def __post_init__(self) -> None:
        unknown = [g for g in self.exclude if g not in EXCLUDABLE]
        if unknown:
            raise ValueError(f"recipe {self.name}: unknown node groups {unknown}")


# What build_int8 ships; docs/formats.md, "The int8 recipe", has the measurements and the
# command (benchmarks/studies/export/int8_recipes.py). Dynamic, because calibrated static
# ranges flip far more verdicts than the gate allows. Per-channel weight scales, because one
# scale per tensor lets a few outlier channels decide every weight's step. 7-bit weights
# (reduce_range) keep u8 x s8 products from saturating on CPUs without VNNI (plain AVX2).
# In fp32: both FFN matmuls of every layer (the down-projection's post-GELU input carries
# the outliers one per-tensor activation scale handles worst; keeping only it was not
# enough on English sentiment); the same rule at any depth, unlike keeping the first/last
# layers (all of a 2-layer model). Attention and embeddings stay int8. The head (pooler +
# classifier, two small Gemms) in fp32 too: without it the e-mail model failed the gate's
# F1 bound, with it it passed, at no measurable cost in speed.
INT8 = Int8Recipe(name="no-ffn-head", exclude=("ffn-in", "ffn-out", "head"))


def quantize(src: Path, dst: Path, recipe: Int8Recipe, calibration: Sequence[Feed] = ()) -> None:
    """Write ``dst`` from the fp32 graph ``src``; a static recipe needs ``calibration``."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    if recipe.static and not calibration:
        raise ExportError(
            f"int8 recipe {recipe.name} is static and needs calibration texts",
            hint="export a checkpoint with a validation split, or use a dynamic recipe",
        )
    options: dict[str, Any] = {
        # Fused contrib ops carry no type info for the quantizer; without this it fails.
        "DefaultTensorType": onnx.TensorProto.FLOAT,
        "MatMulConstBOnly": recipe.matmul_const_b_only,
    }
    if recipe.weight_symmetric is not None:
        options["WeightSymmetric"] = recipe.weight_symmetric
    if recipe.activation_symmetric is not None:
        options["ActivationSymmetric"] = recipe.activation_symmetric
    common: dict[str, Any] = {
        "op_types_to_quantize": list(recipe.op_types) if recipe.op_types else None,
        "per_channel": recipe.per_channel,
        "reduce_range": recipe.reduce_range,
        "weight_type": QuantType.QInt8,
        "nodes_to_exclude": excluded_nodes(onnx.load(str(src)).graph, recipe.exclude),
        "extra_options": options,
    }
    with _quiet_root_logger():
        if recipe.static:
            _quantize_static(src, dst, recipe, calibration, common)
        else:
            quantize_dynamic(str(src), str(dst), **common)


def _quantize_static(
    src: Path, dst: Path, recipe: Int8Recipe, calibration: Sequence[Feed], common: dict[str, Any]
) -> None:
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    method = {
        "minmax": CalibrationMethod.MinMax,
        "percentile": CalibrationMethod.Percentile,
        "entropy": CalibrationMethod.Entropy,
    }[recipe.calibrate]
    quantize_static(
        str(src),
        str(dst),
        _Reader(calibration),
        quant_format=QuantFormat.QDQ if recipe.qdq else QuantFormat.QOperator,
        # u8 activations: what the CPU's u8 x s8 integer kernels take.
        activation_type=QuantType.QUInt8,
        calibrate_method=method,
        **common,
    )


def calibration_feeds(
    tokenizer: Any, texts: Sequence[str], n: int = CALIBRATION_ROWS
) -> list[Feed]:
    """Batches of ``n`` texts spread over ``texts`` (never the test split: it gates)."""
    chosen = list(texts[:: max(1, len(texts) // n)][:n])
    return [
        {"input_ids": ids, "attention_mask": mask}
        for ids, mask in inference.encode(tokenizer, chosen)
    ]


class _Reader:
    """ORT's ``CalibrationDataReader`` protocol over pre-tokenised feeds."""

    def __init__(self, feeds: Sequence[Feed]) -> None:
        self._it: Iterator[Feed] = iter(feeds)

    def get_next(self) -> Feed | None:
        return next(self._it, None)


def excluded_nodes(graph: Any, groups: Sequence[str]) -> list[str]:
    """Names of the nodes in ``groups``, plus the names ORT gives a Gemm it rewrites."""
    layers = [_layer(n.name) for n in graph.node]
    last = max((i for i in layers if i is not None), default=None)
    names: list[str] = []
    for node, layer in zip(graph.node, layers, strict=True):
        if _in_groups(node, layer, last, groups):
            names.append(node.name)
            if node.op_type == "Gemm":  # dynamic quantization makes it <name>_MatMul + _Add
                names.append(f"{node.name}_MatMul")
    return names


def _layer(name: str) -> int | None:
    found = _LAYER.search(name) or _ATTENTION.match(name)
    return int(found.group(1)) if found else None


def _in_groups(node: Any, layer: int | None, last: int | None, groups: Sequence[str]) -> bool:
    # The pooler and classifier are the only Gemm nodes in these exports (2-D Linear).
    if "head" in groups and node.op_type == "Gemm":
        return True
    if layer is None:
        return False
    if "first-layer" in groups and layer == 0:
        return True
    if "last-layer" in groups and layer == last:
        return True
    # The FFN's down-projection (layer.N/output/dense), not attention/output/dense: its
    # input, after GELU, carries the outliers a per-tensor activation scale handles worst.
    # BERT and RoBERTa name the FFN intermediate/ + output/, DistilBERT ffn/lin1 + ffn/lin2.
    name = node.name
    if "ffn-in" in groups and (f"/layer.{layer}/intermediate/" in name or "/ffn/lin1/" in name):
        return True
    ffn_out = f"/layer.{layer}/output/" in name or "/ffn/lin2/" in name
    return ffn_out and ("ffn-out" in groups or ("last-ffn" in groups and layer == last))


@contextmanager
def _quiet_root_logger() -> Iterator[None]:
    # ORT's quantizer advises pre-processing on the root logger every time.
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)

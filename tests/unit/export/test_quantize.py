"""int8 recipes on a tiny hand-built graph named like a BERT export (no torch, no checkpoint)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from textgate.errors import ExportError
from textgate.export import quantize
from textgate.export.quantize import Int8Recipe

WIDTH = 16
# Two encoder layers (attention output + FFN down-projection each), then pooler + classifier.
MATMULS = (
    "/inner/bert/encoder/layer.0/attention/output/dense/MatMul",
    "/inner/bert/encoder/layer.0/intermediate/dense/MatMul",
    "/inner/bert/encoder/layer.0/output/dense/MatMul",
    "/inner/bert/encoder/layer.1/attention/output/dense/MatMul",
    "/inner/bert/encoder/layer.1/intermediate/dense/MatMul",
    "/inner/bert/encoder/layer.1/output/dense/MatMul",
)
GEMMS = ("/inner/bert/pooler/dense/Gemm", "/inner/classifier/Gemm")


def _graph_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    inits, nodes, prev = [], [], "x"
    for i, name in enumerate((*MATMULS, *GEMMS)):
        w = f"w{i}"
        inits.append(numpy_helper.from_array(rng.normal(size=(WIDTH, WIDTH)).astype(np.float32), w))
        op = "Gemm" if name in GEMMS else "MatMul"
        nodes.append(helper.make_node(op, [prev, w], [f"y{i}"], name=name))
        prev = f"y{i}"
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", WIDTH])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["batch", WIDTH])],
        inits,
    )
    path = tmp_path / "tiny.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _ops(path: Path) -> dict[str, str]:
    return {n.name: n.op_type for n in onnx.load(str(path)).graph.node}


@pytest.mark.parametrize(
    ("groups", "want"),
    [
        ((), set()),
        (("head",), {*GEMMS, *(f"{g}_MatMul" for g in GEMMS)}),
        (("first-layer",), set(MATMULS[:3])),
        (("last-layer",), set(MATMULS[3:])),
        (("last-ffn",), {MATMULS[5]}),  # not the attention output of the same layer
        (("ffn-out",), {MATMULS[2], MATMULS[5]}),
        (("ffn-in", "ffn-out"), {*MATMULS[1:3], *MATMULS[4:]}),
    ],
)
def test_excluded_nodes_by_group(tmp_path: Path, groups: tuple[str, ...], want: set[str]) -> None:
    graph = onnx.load(str(_graph_file(tmp_path))).graph
    assert set(quantize.excluded_nodes(graph, groups)) == want


def test_distilbert_ffn_names_are_found() -> None:
    names = ("/inner/distilbert/transformer/layer.0/ffn/lin1/MatMul",
             "/inner/distilbert/transformer/layer.0/ffn/lin2/MatMul",
             "/inner/distilbert/transformer/layer.0/attention/out_lin/MatMul")  # fmt: skip
    nodes = [helper.make_node("MatMul", ["a", "w"], [n], name=n) for n in names]
    graph = helper.make_graph(nodes, "distil", [], [])
    assert quantize.excluded_nodes(graph, ("ffn-in",)) == [names[0]]
    assert quantize.excluded_nodes(graph, ("ffn-out",)) == [names[1]]


def test_fused_attention_nodes_count_as_their_layer() -> None:
    nodes = [helper.make_node("Attention", ["a"], ["b"], name=f"Attention_{i}") for i in (0, 1)]
    graph = helper.make_graph(nodes, "fused", [], [])
    assert quantize.excluded_nodes(graph, ("last-layer",)) == ["Attention_1"]


def test_unknown_node_group_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown node groups"):
        Int8Recipe(name="x", exclude=("pooler",))


def test_dynamic_recipe_keeps_excluded_nodes_in_fp32(tmp_path: Path) -> None:
    dst = tmp_path / "int8.onnx"
    quantize.quantize(_graph_file(tmp_path), dst, Int8Recipe(name="t", exclude=("head",)))
    ops = _ops(dst)
    assert "MatMulInteger" in ops.values()
    assert ops["/inner/classifier/Gemm_MatMul"] == "MatMul"  # rewritten, not quantized
    assert not any(op == "MatMulInteger" and "pooler" in n for n, op in ops.items())


def test_static_recipe_needs_calibration(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="calibration"):
        quantize.quantize(
            _graph_file(tmp_path), tmp_path / "o.onnx", Int8Recipe(name="s", static=True)
        )


def test_static_recipe_calibrates_on_the_feeds_it_gets(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    feeds = [{"x": rng.normal(size=(4, WIDTH)).astype(np.float32)} for _ in range(3)]
    dst = tmp_path / "static.onnx"
    quantize.quantize(_graph_file(tmp_path), dst, Int8Recipe(name="s", static=True), feeds)
    ops = set(_ops(dst).values())
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops


class _Tokenizer:
    """Stands in for ``tokenizers.Tokenizer``: one id per word."""

    class _Enc:
        def __init__(self, text: str) -> None:
            self.ids = [len(w) for w in text.split()] + [0] * (3 - len(text.split()))
            self.attention_mask = [1] * len(text.split()) + [0] * (3 - len(text.split()))

    def encode_batch(self, texts: list[str]) -> list[_Enc]:
        return [self._Enc(t) for t in texts]


def test_calibration_feeds_spread_over_the_texts() -> None:
    texts = [f"t{i} a" for i in range(100)]
    feeds = quantize.calibration_feeds(_Tokenizer(), texts, n=10)
    assert sum(len(f["input_ids"]) for f in feeds) == 10
    assert set(feeds[0]) == {"input_ids", "attention_mask"}
    assert feeds[0]["input_ids"].dtype == np.int64


def test_shipped_recipe_needs_no_calibration_and_keeps_per_channel_scales() -> None:
    # export_bundle passes no calibration feeds to build_int8.
    assert not quantize.INT8.static
    assert quantize.INT8.per_channel and quantize.INT8.reduce_range


def test_build_int8_ships_the_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from textgate.export import variants

    seen: list[Int8Recipe] = []
    monkeypatch.setattr(quantize, "quantize", lambda src, dst, recipe: seen.append(recipe))
    variants.build_int8(tmp_path / "a.onnx", tmp_path / "b.onnx")
    assert seen == [quantize.INT8]

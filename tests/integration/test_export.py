"""Real exports of tiny random BERT, DistilBERT and RoBERTa checkpoints, end to end.

Checkpoint -> ONNX -> parity (child process) -> variants -> manifest -> verify, with real
torch, transformers, onnx and ONNX Runtime, offline. Bundles are built once per session
(``tiny_bundle`` in tests/helpers/fixtures_models.py); tests that damage a bundle copy it first.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from textgate import bundle, cli
from textgate.errors import BundleError, ExportError, ParityError
from textgate.export import convert, export_bundle, parity, quantize
from textgate.export.variants import FILES, Gate

pytestmark = pytest.mark.slow

KINDS = [("bert", True), ("distilbert", False), ("roberta", True)]
IDS = ["bert-textgate", "distilbert-plain-hf", "roberta-textgate"]


@pytest.fixture(params=KINDS, ids=IDS)
def built(request: pytest.FixtureRequest, tiny_bundle: Callable[..., Path]) -> Path:
    return tiny_bundle(*request.param)


def _manifest(root: Path) -> dict[str, Any]:
    return json.loads((root / bundle.MANIFEST).read_text())


def test_bundle_holds_what_the_contract_requires(built: Path) -> None:
    manifest = bundle.verify(built)
    assert manifest["format"] == bundle.FORMAT
    assert manifest["labels"] == ["ham", "spam"]
    assert json.loads((built / "labels.json").read_text()) == manifest["labels"]
    for name in (*FILES.values(), "tokenizer.json", "reports/parity.json", "labels.json"):
        assert name in manifest["files"], name
    assert set(manifest["files"]) == set(bundle.list_files(built))
    assert manifest["inputs"] == ["input_ids", "attention_mask"]
    assert manifest["outputs"] == ["logits"]
    for key in ("transformers", "torch", "onnx", "onnxruntime", "tokenizers"):
        assert manifest["versions"][key]
    parity_report = manifest["parity"]
    assert parity_report["n"] >= 500 and parity_report["passed"]
    assert parity_report["max_abs_diff"] <= 1e-4 and parity_report["argmax_agreement"] == 1.0
    assert set(manifest["metrics"]["test"]) >= {"accuracy", "f1", "macro_f1"}
    assert manifest["tokenizer"]["ids_match"] and manifest["tokenizer"]["n"] >= 500


def test_onnx_graph_has_dynamic_axes_and_opset_17(built: Path) -> None:
    model = onnx.load(str(built / "model.onnx"))
    assert max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) >= 17
    convert.check(built / "model.onnx", num_labels=2)  # full checker + I/O contract
    sess = ort.InferenceSession(str(built / "model.onnx"), providers=["CPUExecutionProvider"])
    for batch, seq in ((1, 5), (3, 17), (7, 40)):
        ids = np.full((batch, seq), 5, dtype=np.int64)
        (logits,) = sess.run(["logits"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        assert logits.shape == (batch, 2) and logits.dtype == np.float32


def test_parity_report_covers_padding_and_truncation(built: Path) -> None:
    report = json.loads((built / "reports" / "parity.json").read_text())
    manifest = _manifest(built)
    assert report["padded_rows"] > 100  # batches mix lengths, so most rows carry padding
    assert report["lengths"]["truncated"] > 0 and report["lengths"]["min"] < 10
    assert report["lengths"]["max"] == manifest["max_length"]
    assert report["mismatches"] == [] and report["tokenizer"]["mismatches"] == []


def test_bundle_tokenizer_alone_matches_the_checkpoint(
    built: Path, tiny_checkpoint: Callable[..., Path], request: pytest.FixtureRequest
) -> None:
    from transformers import AutoTokenizer

    kind, textgate = KINDS[IDS.index(request.node.callspec.id)]
    hf = AutoTokenizer.from_pretrained(str(tiny_checkpoint(kind, textgate)))
    tok = Tokenizer.from_file(str(built / "tokenizer.json"))
    max_length = _manifest(built)["max_length"]
    texts = ["Free entry!! txt WIN to 80086", "ok", "café " * 200, "日本語 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢"]
    want = hf(texts, padding=True, truncation=True, max_length=max_length)
    got = tok.encode_batch(texts)
    assert [e.ids for e in got] == want["input_ids"]
    assert [e.attention_mask for e in got] == want["attention_mask"]


def test_every_variant_carries_a_gate_result_consistent_with_its_numbers(built: Path) -> None:
    manifest = _manifest(built)
    gate = Gate()  # export_bundle's defaults
    assert list(manifest["variants"]) == ["fp32", "fp32-opt", "fp16", "int8"]
    for name, row in manifest["variants"].items():
        assert row["file"] == FILES[name] and row["file"] in manifest["files"]
        if row["status"] == "unverified":
            assert row["reason"] and row["agreement"] is None
            continue
        assert 0.0 <= row["agreement"] <= 1.0
        assert row["mean_abs_diff"] <= row["max_abs_diff"]
        assert row["latency_ms"]["batch1"] > 0 and row["latency_ms"]["batch32"] > 0
        status, reason = gate.judge(row["agreement"], row["f1_delta"])
        assert (row["status"], row.get("reason")) == (status, reason), name
    fp32 = manifest["variants"]["fp32"]
    assert fp32["status"] == "accepted" and fp32["agreement"] == 1.0
    for device, name in manifest["default_variant"].items():
        assert manifest["variants"][name]["status"] == "accepted", device


def test_optimized_variant_is_fused(built: Path) -> None:
    """Pins the exporter choice: eager attention + TorchScript exporter fuse in ORT."""
    assert convert.USE_DYNAMO is False
    fused = _manifest(built)["variants"]["fp32-opt"]["fused_ops"]
    assert fused.get("Attention", 0) == 2  # one per layer of the tiny models
    assert fused.get("SkipLayerNormalization", 0) >= 2
    ops = {n.op_type for n in onnx.load(str(built / "model.opt.onnx")).graph.node}
    assert "Attention" in ops and "Softmax" not in ops


def test_fp16_keeps_normalisation_in_fp32_and_io_in_fp32(built: Path) -> None:
    model = onnx.load(str(built / "model.fp16.onnx"))
    dtype = {t.name: t.data_type for t in model.graph.initializer}
    matmuls = [n for n in model.graph.node if n.op_type in ("MatMul", "Attention")]
    assert any(dtype.get(i) == onnx.TensorProto.FLOAT16 for n in matmuls for i in n.input)
    norms = [n for n in model.graph.node if n.op_type.endswith("LayerNormalization")]
    assert norms
    for node in norms:  # gamma, beta (and embeddings) of every norm stay fp32
        weights = [dtype[i] for i in node.input if i in dtype]
        assert weights and set(weights) == {onnx.TensorProto.FLOAT}, node.name
    for io in (*model.graph.input, *model.graph.output):
        assert io.type.tensor_type.elem_type != onnx.TensorProto.FLOAT16


def test_int8_variant_is_quantized(built: Path) -> None:
    ops = {n.op_type for n in onnx.load(str(built / "model.int8.onnx")).graph.node}
    assert ops & {"MatMulInteger", "DynamicQuantizeLinear", "QAttention"}
    manifest = _manifest(built)
    # Mixed precision (quantize.INT8 keeps some layers fp32): smaller, not a fixed ratio.
    assert manifest["sizes"]["model.int8.onnx"] < manifest["sizes"]["model.onnx"]
    assert manifest["variants"]["int8"]["recipe"] == quantize.INT8.name


def test_int8_keeps_the_recipes_excluded_nodes_in_fp32(built: Path) -> None:
    fused = onnx.load(str(built / "model.opt.onnx")).graph
    kept = set(quantize.excluded_nodes(fused, quantize.INT8.exclude))
    ops = {n.name: n.op_type for n in onnx.load(str(built / "model.int8.onnx")).graph.node}
    assert kept & set(ops)
    assert all(ops[n] in ("MatMul", "Attention") for n in kept & set(ops)), ops


def test_int8_weights_have_one_scale_per_channel(built: Path) -> None:
    graph = onnx.load(str(built / "model.int8.onnx")).graph
    scales = [t for t in graph.initializer if t.name.endswith("_scale") and t.dims]
    # Per-tensor quantization would leave only scalar scales.
    assert scales and all(t.dims[0] > 1 for t in scales), [(t.name, t.dims) for t in scales]


def test_textgate_and_plain_checkpoints_differ_where_documented(
    tiny_bundle: Callable[..., Path],
) -> None:
    tg = _manifest(tiny_bundle("bert", True))
    hf = _manifest(tiny_bundle("distilbert", False))
    assert tg["max_length"] == 48 and hf["max_length"] == 128
    assert tg["metrics"]["test"]["n"] == 200 and tg["metrics"]["test"]["f1"] is not None
    assert tg["data_hash"] == "0" * 64 and "metrics.json" in tg["files"]
    assert hf["metrics"]["test"]["f1"] is None and hf["data_hash"] is None
    assert all(v["f1_delta"] is None for v in hf["variants"].values())
    assert tg["variants"]["int8"]["f1_delta"] is not None


@pytest.mark.parametrize("damage", ["flip", "truncate", "remove", "extra", "manifest"])
def test_damaged_real_bundle_fails_verify_naming_the_file(
    tiny_bundle: Callable[..., Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: str,
) -> None:
    root = tmp_path / "copy"
    shutil.copytree(tiny_bundle("bert", True), root)
    target = {
        "flip": "model.int8.onnx",
        "truncate": "model.onnx",
        "remove": "tokenizer.json",
        "extra": "reports/extra.txt",
        "manifest": bundle.MANIFEST,
    }[damage]
    path = root / target
    if damage == "flip":
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x40
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:-100])
    elif damage == "remove":
        path.unlink()
    elif damage == "extra":
        path.write_text("not mine")
    else:
        path.write_text(path.read_text()[:200])
    with pytest.raises(BundleError) as info:
        bundle.verify(root)
    assert info.value.file == target
    code = cli.main(["verify", str(root)])
    text = capsys.readouterr().err.replace("\n", "")
    assert code == cli.EXIT_CODES[BundleError] and target in text


def test_parity_child_collects_every_mismatch(
    tiny_checkpoint: Callable[..., Path], tiny_bundle: Callable[..., Path]
) -> None:
    """A wrong graph and a wrong tokenizer, both caught, every text listed, in the child."""
    texts = [f"text number {i} " * (1 + i % 9) for i in range(64)]
    report = parity.run(
        checkpoint=tiny_checkpoint("bert", True),
        onnx_path=tiny_bundle("distilbert", False) / "model.onnx",  # another model
        tokenizer=tiny_bundle("roberta", True) / "tokenizer.json",  # another tokenizer
        texts=texts,
        max_length=48,
    )
    assert not report["passed"]
    assert report["max_abs_diff"] > 1e-4
    assert not report["tokenizer"]["ids_match"]
    graph = [m for m in report["mismatches"] if m.startswith("text #")]
    assert len(graph) > 32  # all of them, not just the first
    assert any(m.startswith("tokenizer:") for m in report["mismatches"])


def test_failed_parity_fails_export_and_leaves_the_report(
    tiny_checkpoint: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_run = parity.run

    def wrong_graph(**kwargs: Any) -> dict[str, Any]:
        other = kwargs["onnx_path"].parent.parent / "other.onnx"
        shutil.copy(
            kwargs["onnx_path"], other
        )  # same graph, perturbed weights below: real ORT output
        model = onnx.load(str(other))
        for init in model.graph.initializer:
            if init.data_type == onnx.TensorProto.FLOAT and init.dims == [2]:
                arr = onnx.numpy_helper.to_array(init) + np.array([1.0, -1.0], np.float32)
                init.CopyFrom(onnx.numpy_helper.from_array(arr, init.name))
        onnx.save(model, str(other))
        return real_run(**{**kwargs, "onnx_path": other})

    monkeypatch.setattr(parity, "run", wrong_graph)
    out = tmp_path / "b" / "bundle"
    with pytest.raises(ParityError) as info:
        export_bundle(tiny_checkpoint("bert", True), out, variants=())
    assert len(info.value.mismatches) >= 500
    assert "model.onnx" in str(info.value)
    assert not (out / bundle.MANIFEST).exists()
    assert json.loads((out / "reports" / "parity.json").read_text())["passed"] is False
    with pytest.raises(BundleError, match="not a bundle"):
        bundle.verify(out)


def test_cli_export_replaces_a_bundle_only_with_force(
    tiny_checkpoint: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bundle"
    ckpt = str(tiny_checkpoint("bert", True))
    argv = ["export", ckpt, "-o", str(out), "--variants", "int8", "--max-f1-drop", "0.01"]
    assert cli.main(argv) == 0
    manifest = bundle.verify(out)
    assert list(manifest["variants"]) == ["fp32", "int8"]
    assert "model.opt.onnx" not in manifest["files"]
    assert manifest["variants"]["int8"]["source"] == "model.onnx"
    capsys.readouterr()
    assert cli.main(argv) == cli.EXIT_CODES[ExportError]  # not empty
    assert "--force" in capsys.readouterr().err
    assert cli.main([*argv, "--force"]) == 0
    bundle.verify(out)


def test_a_head_and_tail_checkpoint_exports_with_parity_on_its_window(tmp_path: Path) -> None:
    """textgate.window through the whole export: the tokenizer.json leaves the cut to the
    window, parity compares PyTorch and ONNX on the same head + tail ids, and the bundle's
    tokenizer alone reads a long text's last words."""
    from transformers import AutoTokenizer

    from tests.helpers.fixtures_models import bert_checkpoint
    from textgate import window
    from textgate.export import inference

    ckpt = bert_checkpoint(
        tmp_path / "ckpt", task="sentiment", labels=("negative", "positive"), seed=5, tail_tokens=16
    )
    out = tmp_path / "bundle"
    export_bundle(ckpt, out, variants=())
    manifest = _manifest(out)
    assert manifest["tokenizer"]["tail"] == 16
    assert Tokenizer.from_file(str(out / "tokenizer.json")).truncation is None
    report = json.loads((out / "reports" / "parity.json").read_text())
    assert report["passed"] and report["lengths"]["truncated"] > 0
    assert report["lengths"]["max"] == 64 and report["tokenizer"]["mismatches"] == []
    text = "the plot starts slowly and " * 30 + "overall i would never buy this again"
    tok = inference.load_tokenizer(out / "tokenizer.json", 64, 16)
    ((ids, mask),) = inference.encode(tok, [text])
    hf = AutoTokenizer.from_pretrained(str(ckpt))
    assert ids.tolist() == [window.hf_ids(hf, [text], 64, 16)[0]] and mask.all()
    assert "never buy this again" in hf.decode(ids[0])

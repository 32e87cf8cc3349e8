from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from textgate import ngrams
from textgate.export import quality


def test_the_filters_view_at_one_half() -> None:
    pos = np.array([True, True, True, False, False, False])
    score = np.array([0.9, 0.6, 0.4, 0.7, 0.2, 0.1])
    rep = quality._binary(pos, score)
    assert rep["precision"] == pytest.approx(2 / 3, abs=1e-5)
    assert rep["recall"] == pytest.approx(2 / 3, abs=1e-5)
    assert rep["f1"] == pytest.approx(2 / 3, abs=1e-5)
    assert rep["roc_auc"] == pytest.approx(7 / 9, abs=1e-5)  # 7 of 9 pairs ranked right
    assert quality._binary(np.array([True, True]), np.array([0.9, 0.1]))["roc_auc"] is None


def test_joined_probabilities_carry_the_ngram_log_odds() -> None:
    size = 2 * ngrams.BUCKETS
    idf, coef = np.ones(size), np.zeros(size)
    lexical = ngrams.NgramModel(idf, coef, 3.0, 0, 0.5)  # every text: log-odds +3 (not ham)
    probs = np.array([[0.5, 0.3, 0.2], [0.9, 0.05, 0.05]])
    out = quality.joined(probs, lexical, ("a text", "another one"))
    assert out.sum(axis=1) == pytest.approx([1.0, 1.0])
    before = np.log((1 - probs[:, 0]) / probs[:, 0])
    after = np.log((1 - out[:, 0]) / out[:, 0])
    np.testing.assert_allclose(after, 0.5 * before + 0.5 * 3.0)
    np.testing.assert_allclose(out[:, 1] / out[:, 2], probs[:, 1] / probs[:, 2])


def test_a_two_label_task_joins_on_the_positive_log_odds() -> None:
    """sentiment-zh: labels (negative, positive), negative 0; z is log P(pos) / P(neg)."""
    size = 2 * ngrams.BUCKETS
    lexical = ngrams.NgramModel(np.ones(size), np.zeros(size), -2.0, 0, 0.5)
    probs = np.array([[0.2, 0.8], [0.6, 0.4]])
    out = quality.joined(probs, lexical, ("很好", "很差"))
    before = np.log(probs[:, 1] / probs[:, 0])
    np.testing.assert_allclose(np.log(out[:, 1] / out[:, 0]), 0.5 * before + 0.5 * -2.0)
    assert quality.positive_score(out, ("negative", "positive")) == pytest.approx(out[:, 1])


# --- calibrate: the fit runs on the joined validation scores and the record says so ------


def _checkpoint(n: int = 3000) -> Any:
    from textgate.export.checkpoint import Checkpoint

    texts = tuple(f"text {i}" for i in range(n))
    y = tuple(_drawn(n, 1.0)[1])  # the test split is the validation split here
    return Checkpoint(
        path=Path("."),
        model_type="bert",
        labels=("ham", "spam"),
        max_length=16,
        num_heads=2,
        hidden_size=8,
        task="spam",
        test_texts=texts,
        test_labels=y,
        extra_texts=texts,
        extra_labels=y,
    )


def _drawn(n: int, scale: float) -> tuple[np.ndarray, list[int]]:
    """Labels drawn from softmax(z); the model reports softmax(z * scale)."""
    from textgate.export import calibration

    rng = np.random.default_rng(7)
    z = np.stack([np.zeros(n), rng.normal(0, 2.0, n)], axis=1)
    truth = calibration.scaled(z, 1.0)
    y = (rng.random(n) < truth[:, 1]).astype(int).tolist()
    return calibration.scaled(z * scale, 1.0), y


@pytest.mark.parametrize(("scale", "fitted_above_one"), [(3.0, True), (0.4, False)])
def test_calibrate_fits_the_validation_scores_it_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scale: float, fitted_above_one: bool
) -> None:
    """An over-confident model (scores 3x too sharp) must fit and serve T > 1; an
    under-confident one fits T < 1, recorded, and is served at the floor, 1. A fit that did
    not run, ran on other scores, or could not leave 1 reports T = 1.000 for both (issue 38)."""
    from textgate.export import calibration

    ckpt = _checkpoint()
    val_probs, _ = _drawn(len(ckpt.extra_texts), scale)
    monkeypatch.setattr(quality, "_fp32_probs", lambda *_a: val_probs)
    calib = quality.calibrate(ckpt, tmp_path, val_probs)
    fitted = calib["fitted_temperature"]
    if fitted_above_one:
        assert fitted == pytest.approx(scale, rel=0.15)
        assert calib["temperature"] == pytest.approx(fitted)
        assert calib["ece_after"] < calib["ece_before"]
    else:
        assert fitted == pytest.approx(scale, rel=0.15)
        assert calib["temperature"] == calibration.MIN_TEMPERATURE == 1.0
    assert (tmp_path / "reliability.png").is_file()


def test_the_build_prints_the_fitted_temperature_beside_a_floored_one() -> None:
    from textgate.commands.bundles import _fitted

    assert "fitted 0.957" in _fitted({"temperature": 1.0, "fitted_temperature": 0.957})
    assert _fitted({"temperature": 1.7, "fitted_temperature": 1.7}) == ""
    assert _fitted({"temperature": 1.0}) == ""

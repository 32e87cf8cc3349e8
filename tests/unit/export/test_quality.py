from __future__ import annotations

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

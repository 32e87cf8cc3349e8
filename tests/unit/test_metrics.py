"""metrics.py against hand-computed values, and scikit-learn as an oracle where present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from textgate import metrics
from textgate.errors import TextgateError


def _binary_probs(p1: list[float]) -> np.ndarray:
    p = np.asarray(p1)
    return np.stack([1 - p, p], axis=1)


def test_binary_report_by_hand() -> None:
    # y:      0    0    0    1    1    1    1    0
    # p1:    .1   .6   .2   .9   .4   .8   .7   .3  -> pred 0 1 0 1 0 1 1 0
    # TP=3 FN=1 FP=1 TN=3
    y = [0, 0, 0, 1, 1, 1, 1, 0]
    probs = _binary_probs([0.1, 0.6, 0.2, 0.9, 0.4, 0.8, 0.7, 0.3])
    r = metrics.classification_report(y, probs, ["ham", "spam"])
    assert r["confusion_matrix"] == [[3, 1], [1, 3]]
    assert r["accuracy"] == pytest.approx(6 / 8)
    assert r["per_class"]["spam"] == pytest.approx(
        {"precision": 0.75, "recall": 0.75, "f1": 0.75, "support": 4}
    )
    assert r["f1"] == pytest.approx(0.75)
    assert r["macro_f1"] == pytest.approx(0.75)
    # Positives' scores .9 .4 .8 .7 vs negatives .1 .6 .2 .3: of 16 pairs, only
    # (.4 vs .6) is misordered -> AUC = 15/16.
    assert r["roc_auc"] == pytest.approx(15 / 16)
    assert r["labels"] == ["ham", "spam"]
    assert r["n"] == 8
    assert r["threshold"] == 0.5


def test_threshold_moves_binary_predictions() -> None:
    y = [0, 1]
    probs = _binary_probs([0.3, 0.4])
    assert metrics.classification_report(y, probs, ["a", "b"])["accuracy"] == 0.5
    assert metrics.classification_report(y, probs, ["a", "b"], threshold=0.35)["accuracy"] == 1


def test_roc_auc_ties_count_half() -> None:
    assert metrics.roc_auc([0, 1], np.array([0.5, 0.5])) == pytest.approx(0.5)
    assert metrics.roc_auc([0, 0, 1], np.array([0.2, 0.5, 0.5])) == pytest.approx(0.75)


def test_roc_auc_single_class_is_none() -> None:
    r = metrics.classification_report([1, 1], _binary_probs([0.7, 0.2]), ["n", "p"])
    assert r["roc_auc"] is None


def test_zero_division_is_zero() -> None:
    # Nothing predicted positive: precision of class 1 is 0.0, not NaN.
    r = metrics.classification_report([0, 1], _binary_probs([0.1, 0.2]), ["n", "p"])
    assert r["per_class"]["p"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}


def test_multiclass_uses_argmax_and_macro_f1() -> None:
    y = [0, 1, 2, 2]
    probs = np.array([[0.8, 0.1, 0.1], [0.2, 0.5, 0.3], [0.1, 0.6, 0.3], [0.1, 0.1, 0.8]])
    r = metrics.classification_report(y, probs, ["a", "b", "c"])
    assert r["confusion_matrix"] == [[1, 0, 0], [0, 1, 0], [0, 1, 1]]
    # F1: a=1, b=2*(.5*1)/(1.5)=2/3, c=2*(1*.5)/1.5=2/3
    assert r["macro_f1"] == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)
    assert r["f1"] == r["macro_f1"]
    assert r["roc_auc"] is None
    assert r["threshold"] is None


def test_bad_shapes_raise_textgate_error() -> None:
    with pytest.raises(TextgateError, match="shape"):
        metrics.classification_report([0, 1, 0], _binary_probs([0.1, 0.2]), ["a", "b"])
    with pytest.raises(TextgateError, match="class ids"):
        metrics.classification_report([0, 2], _binary_probs([0.1, 0.2]), ["a", "b"])


def test_threshold_curve_by_hand() -> None:
    y = [0, 1, 1, 0]
    s = np.array([0.2, 0.9, 0.4, 0.6])
    c = metrics.threshold_curve(y, s, thresholds=[0.0, 0.5, 0.95])
    assert c["precision"] == pytest.approx([0.5, 0.5, 1.0])
    assert c["recall"] == pytest.approx([1.0, 0.5, 0.0])
    assert c["f1"] == pytest.approx([2 / 3, 0.5, 0.0])


def test_agrees_with_sklearn() -> None:
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    for k in (2, 4):
        y = rng.integers(0, k, size=300)
        probs = rng.dirichlet(np.ones(k), size=300)
        # Make it informative, and add ties, so AUC is neither trivial nor tie-free.
        probs[np.arange(300), y] += 0.3
        probs = np.round(probs / probs.sum(axis=1, keepdims=True), 2)
        labels = [f"c{i}" for i in range(k)]
        r = metrics.classification_report(y.tolist(), probs, labels)
        pred = metrics.predict(probs)
        assert r["accuracy"] == pytest.approx(sk.accuracy_score(y, pred))
        assert r["macro_f1"] == pytest.approx(sk.f1_score(y, pred, average="macro"))
        assert r["confusion_matrix"] == sk.confusion_matrix(y, pred).tolist()
        p, rc, f, s = sk.precision_recall_fscore_support(y, pred, zero_division=0)
        for i, name in enumerate(labels):
            pc = r["per_class"][name]
            assert (pc["precision"], pc["recall"], pc["f1"]) == pytest.approx((p[i], rc[i], f[i]))
            assert pc["support"] == s[i]
        if k == 2:
            assert r["roc_auc"] == pytest.approx(sk.roc_auc_score(y, probs[:, 1]))
            assert r["f1"] == pytest.approx(sk.f1_score(y, pred))


def test_plots_write_png(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n"
    cm_path = metrics.plot_confusion_matrix([[5, 1], [2, 7]], ["ham", "spam"], tmp_path / "cm.png")
    curve = metrics.threshold_curve([0, 1, 1], np.array([0.1, 0.8, 0.4]))
    th_path = metrics.plot_threshold_curve(curve, tmp_path / "t.png", positive="spam")
    for path in (cm_path, th_path):
        assert path.read_bytes()[:8] == png

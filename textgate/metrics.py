"""Classification metrics and their plots, in plain numpy.

Serving and export must not depend on scikit-learn, so the few metrics textgate reports
are computed here. Conventions follow scikit-learn's defaults so its numbers can be used
as an oracle in tests: a ratio with a zero denominator is 0.0, ROC-AUC is the
Mann-Whitney statistic with ties counted half, and it is ``None`` when the test split holds
a single class.

Binary tasks: the positive class is index 1, predicted when ``P(class 1) >= threshold``.
Multi-class tasks: the arg-max class; ``f1`` is then the macro F1.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from textgate.errors import TextgateError

DEFAULT_THRESHOLD = 0.5


def _check(y_true: Sequence[int], probs: np.ndarray, labels: Sequence[str]) -> np.ndarray:
    y = np.asarray(y_true, dtype=np.int64)
    if probs.ndim != 2 or probs.shape[0] != len(y) or probs.shape[1] != len(labels):
        raise TextgateError(
            f"metrics: probs has shape {probs.shape}, expected ({len(y)}, {len(labels)})"
        )
    if len(labels) < 2:
        raise TextgateError("metrics: need at least two labels")
    if len(y) and (y.min() < 0 or y.max() >= len(labels)):
        raise TextgateError(f"metrics: class ids must lie in 0..{len(labels) - 1}")
    return y


def predict(probs: np.ndarray, threshold: float = DEFAULT_THRESHOLD) -> np.ndarray:
    """Class ids: thresholded on class 1 for binary tasks, arg-max otherwise."""
    if probs.shape[1] == 2:
        return (probs[:, 1] >= threshold).astype(np.int64)
    return probs.argmax(axis=1).astype(np.int64)


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, k: int) -> np.ndarray:
    """Rows are true classes, columns predicted classes."""
    cm = np.zeros((k, k), dtype=np.int64)
    np.add.at(cm, (y_true, y_pred), 1)
    return cm


def _ratio(num: float, den: float) -> float:
    return float(num / den) if den else 0.0


def _per_class(cm: np.ndarray, labels: Sequence[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for i, name in enumerate(labels):
        tp = float(cm[i, i])
        precision = _ratio(tp, float(cm[:, i].sum()))
        recall = _ratio(tp, float(cm[i, :].sum()))
        f1 = _ratio(2 * precision * recall, precision + recall)
        out[name] = {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "support": int(cm[i, :].sum()),
        }
    return out


def f1_score(
    y_true: Sequence[int] | np.ndarray,
    y_pred: Sequence[int] | np.ndarray,
    k: int,
    *,
    zero_division: float = 0.0,
) -> float:
    """From class ids: F1 of class 1 when ``k == 2``, macro F1 otherwise.

    A class that is neither true nor predicted anywhere scores ``zero_division`` (as
    scikit-learn's argument of that name); the release gate passes 1.0, so two models that
    both never see a class are not told apart by it.
    """
    cm = confusion_matrix(np.asarray(y_true, np.int64), np.asarray(y_pred, np.int64), k)
    scores = []
    for c in [1] if k == 2 else range(k):
        tp = int(cm[c, c])
        fp, fn = int(cm[:, c].sum()) - tp, int(cm[c, :].sum()) - tp
        scores.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else zero_division)
    return float(np.mean(scores))


def agreement(a: Sequence[int] | np.ndarray, b: Sequence[int] | np.ndarray) -> float:
    """The share of rows where two predictions agree; 0.0 when there are none."""
    a_, b_ = np.asarray(a), np.asarray(b)
    return float(np.mean(a_ == b_)) if len(a_) else 0.0


def roc_auc(y_true: Sequence[int], scores: np.ndarray) -> float | None:
    """Area under the ROC curve for binary 0/1 labels; ``None`` if one class is absent."""
    y = np.asarray(y_true, dtype=np.int64)
    n_pos = int((y == 1).sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = _average_ranks(np.asarray(scores, dtype=np.float64))
    # Mann-Whitney U: the chance a random positive outranks a random negative.
    u = ranks[y == 1].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks with ties given their mean rank (scipy's ``rankdata`` default)."""
    order = np.argsort(x, kind="mergesort")
    sorted_x = x[order]
    # Start index of each run of equal values.
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], len(x)]
    mean_rank = (starts + ends + 1) / 2.0  # mean of 1-based ranks starts+1 .. ends
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def classification_report(
    y_true: Sequence[int],
    probs: np.ndarray,
    labels: Sequence[str],
    threshold: float = DEFAULT_THRESHOLD,
) -> dict[str, Any]:
    """Everything ``metrics.json`` holds, as a JSON-ready dict."""
    probs = np.asarray(probs, dtype=np.float64)
    y = _check(y_true, probs, labels)
    k = len(labels)
    y_pred = predict(probs, threshold)
    cm = confusion_matrix(y, y_pred, k)
    per_class = _per_class(cm, labels)
    macro_f1 = float(np.mean([c["f1"] for c in per_class.values()]))
    binary = k == 2
    extra = {"not_ham": not_ham_report(y, probs, labels)} if k > 2 and "ham" in labels else {}
    return {
        **extra,
        "accuracy": _ratio(float(np.trace(cm)), float(len(y))),
        "macro_f1": macro_f1,
        "f1": per_class[labels[1]]["f1"] if binary else macro_f1,
        "roc_auc": roc_auc(y.tolist(), probs[:, 1]) if binary else None,
        "per_class": per_class,
        "confusion_matrix": cm.tolist(),
        "labels": list(labels),
        "n": len(y),
        "threshold": float(threshold) if binary else None,
    }


def not_ham_report(y: np.ndarray, probs: np.ndarray, labels: Sequence[str]) -> dict[str, Any]:
    """A multi-label mail model judged as a filter: every label but ham is "spam".

    Score = 1 - P(ham); F1, precision, recall at 0.5 and ROC-AUC of that binary view.
    """
    ham = list(labels).index("ham")
    truth = (np.asarray(y) != ham).astype(int)
    score = 1.0 - probs[:, ham]
    pred = score >= 0.5
    tp = float((pred & (truth == 1)).sum())
    precision = _ratio(tp, float(pred.sum()))
    recall = _ratio(tp, float(truth.sum()))
    return {
        "f1": _ratio(2 * precision * recall, precision + recall),
        "precision": precision,
        "recall": recall,
        "roc_auc": roc_auc(truth.tolist(), score),
        "positives": int(truth.sum()),
    }


def threshold_curve(
    y_true: Sequence[int], scores: np.ndarray, thresholds: Sequence[float] | None = None
) -> dict[str, list[float]]:
    """Precision, recall and F1 of the positive class when ``score >= t``, for each ``t``.

    Precision with no positive prediction is reported as 1.0 (nothing flagged, nothing
    wrong), the usual end point of a precision/recall curve.
    """
    y = np.asarray(y_true, dtype=np.int64) == 1
    s = np.asarray(scores, dtype=np.float64)
    ts = np.linspace(0.0, 1.0, 101) if thresholds is None else np.asarray(thresholds, float)
    flagged = s[None, :] >= ts[:, None]  # (thresholds, n)
    tp = (flagged & y[None, :]).sum(axis=1).astype(np.float64)
    n_flagged = flagged.sum(axis=1).astype(np.float64)
    n_pos = float(y.sum())
    precision = np.where(n_flagged > 0, tp / np.maximum(n_flagged, 1.0), 1.0)
    recall = tp / n_pos if n_pos else np.zeros_like(tp)
    denom = precision + recall
    f1 = np.where(denom > 0, 2 * precision * recall / np.where(denom > 0, denom, 1.0), 0.0)
    return {
        "threshold": ts.tolist(),
        "precision": precision.tolist(),
        "recall": recall.tolist(),
        "f1": f1.tolist(),
    }


# --- plots ---------------------------------------------------------------------------------


def _pyplot() -> Any:
    # Agg: no display on servers and CI; select it before pyplot is first imported.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_confusion_matrix(
    cm: Sequence[Sequence[int]], labels: Sequence[str], path: Path, title: str = ""
) -> Path:
    """Write the confusion matrix as a PNG with counts in the cells."""
    plt = _pyplot()
    m = np.asarray(cm)
    size = max(3.5, 0.6 * len(labels) + 2.5)
    fig, ax = plt.subplots(figsize=(size, size), dpi=120)
    try:
        ax.imshow(m, cmap="Blues")
        ticks = range(len(labels))
        ax.set_xticks(ticks, labels=list(labels), rotation=45, ha="right")
        ax.set_yticks(ticks, labels=list(labels))
        ax.set_xlabel("predicted")
        ax.set_ylabel("true")
        ax.set_title(title or "confusion matrix")
        high = m.max() / 2 if m.size else 0
        for (i, j), v in np.ndenumerate(m):
            ax.text(j, i, str(v), ha="center", va="center", color="white" if v > high else "black")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path


def plot_threshold_curve(
    curve: dict[str, list[float]],
    path: Path,
    *,
    positive: str = "positive",
    threshold: float = DEFAULT_THRESHOLD,
) -> Path:
    """Write precision and recall of the positive class against the decision threshold."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    try:
        ax.plot(curve["threshold"], curve["precision"], label="precision")
        ax.plot(curve["threshold"], curve["recall"], label="recall")
        ax.plot(curve["threshold"], curve["f1"], label="F1", linestyle=":")
        ax.axvline(threshold, color="grey", linestyle="--", linewidth=1, label=f"t = {threshold}")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(f"decision threshold on P({positive})")
        ax.set_ylabel("test split")
        ax.set_title(f"'{positive}': precision and recall vs threshold")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower left")
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
    return path

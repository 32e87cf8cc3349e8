"""Temperature scaling: make 0.85 and 0.95 mean what the policy says they mean.

A fine-tuned classifier is over-confident; its softmax outputs are scores, not probabilities.
One temperature T, fitted on the validation split by minimising the negative log-likelihood of
``softmax(logits / T)``, fixes most of that without changing any arg-max (Guo et al., 2017).
The bundle records T; the Triton postprocess step divides the logits by it, so every variant
and the fp32 re-score answer calibrated probabilities. Log-probabilities work as logits here:
the per-row constant they differ by cancels inside the softmax.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

BINS = 15
_LOG_T_RANGE = (-3.0, 3.0)  # T in [0.05, 20]
# The served temperature never sharpens. Validation is in-corpus, where the model is right
# more often than its scores say (the e-mail model fitted T 0.83); on mail from sources it
# never saw it is over-confident instead, and sharpening moves those errors past the
# quarantine threshold: on the leave-one-source-out folds the fitted T quarantined more
# held-out ham than T 1 (docs/email-model.md, "Calibration", has the numbers).
MIN_TEMPERATURE = 1.0


def scaled(log_probs: np.ndarray, temperature: float) -> np.ndarray:
    z = log_probs / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return np.asarray(e / e.sum(axis=1, keepdims=True))


def nll(log_probs: np.ndarray, y: np.ndarray, temperature: float) -> float:
    p = scaled(log_probs, temperature)[np.arange(len(y)), y]
    return float(-np.log(np.clip(p, 1e-12, 1.0)).mean())


def fit_temperature(probs: np.ndarray, y: np.ndarray) -> float:
    """The T minimising validation NLL (golden-section search on log T; NLL is unimodal)."""
    log_probs = np.log(np.clip(probs, 1e-12, 1.0))
    y = np.asarray(y, dtype=np.int64)
    lo, hi = _LOG_T_RANGE
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = nll(log_probs, y, float(np.exp(a))), nll(log_probs, y, float(np.exp(b)))
    for _ in range(60):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = nll(log_probs, y, float(np.exp(a)))
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = nll(log_probs, y, float(np.exp(b)))
    return float(np.exp((lo + hi) / 2.0))


def served(fitted: float) -> float:
    """The temperature the bundle applies: the fitted one, but never one that sharpens."""
    return max(float(fitted), MIN_TEMPERATURE)


def apply(probs: np.ndarray, temperature: float) -> np.ndarray:
    return scaled(np.log(np.clip(probs, 1e-12, 1.0)), temperature)


def ece(confidence: np.ndarray, correct: np.ndarray, bins: int = BINS) -> float:
    """Expected calibration error: |accuracy - confidence| per equal-width bin, weighted."""
    confidence, correct = np.asarray(confidence, float), np.asarray(correct, float)
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(confidence, edges[1:-1]), 0, bins - 1)
    total = 0.0
    for b in range(bins):
        sel = which == b
        if sel.any():
            total += sel.mean() * abs(correct[sel].mean() - confidence[sel].mean())
    return float(total)


def binary_ece(score: np.ndarray, positive: np.ndarray, bins: int = BINS) -> float:
    """ECE of a one-number score (P(spam or phish)) against the binary truth."""
    return ece(score, positive, bins)


def reliability(score: np.ndarray, positive: np.ndarray, bins: int = BINS) -> list[dict[str, Any]]:
    """Per bin: mean predicted score, observed positive rate, count."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(score, edges[1:-1]), 0, bins - 1)
    rows = []
    for b in range(bins):
        sel = which == b
        if sel.any():
            rows.append(
                {
                    "bin": [float(edges[b]), float(edges[b + 1])],
                    "mean_score": float(score[sel].mean()),
                    "positive_rate": float(positive[sel].mean()),
                    "n": int(sel.sum()),
                }
            )
    return rows


def plot_reliability(
    before: list[dict[str, Any]], after: list[dict[str, Any]], path: Path, title: str
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5), dpi=110)
    ax.plot([0, 1], [0, 1], color="grey", linestyle=":", label="perfect")
    for rows, name, style in ((before, "raw", "o--"), (after, "calibrated", "s-")):
        xs = [r["mean_score"] for r in rows]
        ys = [r["positive_rate"] for r in rows]
        ax.plot(xs, ys, style, label=name)
    ax.set_xlabel("predicted score")
    ax.set_ylabel("observed positive rate")
    ax.set_title(title)
    ax.legend(loc="upper left")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)

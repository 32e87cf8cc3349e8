"""What a bundle's numbers mean in operation: calibration, and rates at the policy's thresholds.

``calibrate`` fits the temperature the postprocess step applies (``calibration.py``) and
draws the reliability diagram; ``operating`` reports, on the calibrated test split, what a
mail operator asks first: how much legitimate mail is sent to review or quarantined, how
much phishing is caught, and the worst errors of each kind for a person to read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from textgate.export import calibration, inference
from textgate.export.checkpoint import Checkpoint

# The default spam policy's thresholds (config.TaskPolicyConfig); reported, not enforced.
REVIEW_AT, QUARANTINE_AT, PHISH_REVIEW_AT = 0.85, 0.95, 0.5
WORST = 20


def _fp32_probs(ckpt: Checkpoint, out: Path, texts: tuple[str, ...]) -> np.ndarray:
    tok = inference.load_tokenizer(out / "tokenizer.json", ckpt.max_length, ckpt.tail_tokens)
    sess = inference.session(out / "model.onnx")
    batches, order = inference.by_length(tok, texts)
    return inference.in_order(inference.predict(sess, batches), order)


def positive_score(probs: np.ndarray, labels: tuple[str, ...]) -> np.ndarray:
    """1 - P(ham) for a spam model; P(last label) for any other."""
    if "ham" in labels:
        return np.asarray(1.0 - probs[:, labels.index("ham")])
    return np.asarray(probs[:, -1])


def _positives(ids: np.ndarray, labels: tuple[str, ...]) -> np.ndarray:
    negative = labels.index("ham") if "ham" in labels else 0
    return np.asarray(ids != negative)


def joined(
    probs: np.ndarray,
    lexical: Any,
    texts: tuple[str, ...],
    combiner: Any = None,
    symbols: tuple[tuple[str, ...], ...] = (),
) -> np.ndarray:
    """The probabilities Triton serves: the n-gram half moves the logits before softmax, or,
    with a combiner, it sets their not-ham log-odds from the transformer's, the n-grams' and
    the symbols' evidence (the postprocess step's own formula: templates/postprocess_model)."""
    logits = np.log(np.clip(probs, 1e-12, 1.0))
    if combiner is None:
        return inference.softmax(lexical.adjust(logits, list(texts)))
    from textgate.signals.combiner import not_negative_log_odds

    content = not_negative_log_odds(logits, combiner.negative)
    lex = lexical.scores(list(texts)) if lexical is not None else np.zeros(len(texts))
    fired = list(symbols) if symbols else [()] * len(texts)
    return inference.softmax(combiner.adjust(logits, combiner.z(content, lex, fired)))


def calibrate(
    ckpt: Checkpoint, out: Path, test_probs: np.ndarray, lexical: Any = None, combiner: Any = None
) -> dict[str, Any]:
    """Fit T on validation; ECE before/after on test; reliability.png in the bundle."""
    if len(ckpt.extra_labels) < 20 or not ckpt.has_test_split:
        return {"method": "none", "temperature": 1.0, "reason": "no labelled validation split"}
    val_probs = _fp32_probs(ckpt, out, ckpt.extra_texts)
    if lexical is not None or combiner is not None:
        val_probs = joined(val_probs, lexical, ckpt.extra_texts, combiner, ckpt.extra_symbols)
    fitted = calibration.fit_temperature(val_probs, np.asarray(ckpt.extra_labels))
    t = calibration.served(fitted)
    y = np.asarray(ckpt.test_labels)
    after = calibration.apply(test_probs, t)
    pos = _positives(y, ckpt.labels)
    raw_score, cal_score = (
        positive_score(test_probs, ckpt.labels),
        positive_score(after, ckpt.labels),
    )
    rows_before = calibration.reliability(raw_score, pos)
    rows_after = calibration.reliability(cal_score, pos)
    calibration.plot_reliability(
        rows_before, rows_after, out / "reliability.png", f"{ckpt.task or 'model'}: test split"
    )

    def top_ece(p: np.ndarray) -> float:
        return calibration.ece(p.max(axis=1), p.argmax(axis=1) == y)

    return {
        "method": "temperature",
        "temperature": round(t, 6),
        "fitted_temperature": round(fitted, 6),
        "min_temperature": calibration.MIN_TEMPERATURE,
        "fitted_on": f"validation split ({len(ckpt.extra_labels)} texts)",
        "ece_before": round(top_ece(test_probs), 5),
        "ece_after": round(top_ece(after), 5),
        "score_ece_before": round(calibration.binary_ece(raw_score, pos), 5),
        "score_ece_after": round(calibration.binary_ece(cal_score, pos), 5),
        "reliability": rows_after,
        "evaluated_on": f"test split ({len(y)} texts)",
    }


def operating(
    ckpt: Checkpoint, out: Path, test_probs: np.ndarray, calib: dict[str, Any]
) -> dict[str, Any]:
    """Rates at the review and quarantine thresholds; the worst errors go to reports/."""
    probs = calibration.apply(test_probs, float(calib["temperature"]))
    y = np.asarray(ckpt.test_labels)
    labels = ckpt.labels
    score = positive_score(probs, labels)
    pos = _positives(y, labels)
    ham = ~pos
    report: dict[str, Any] = {
        "n": len(y),
        "not_ham": _binary(pos, score),
        "ham_fpr_at_review": _rate(score[ham] >= REVIEW_AT),
        "ham_fpr_at_quarantine": _rate(score[ham] >= QUARANTINE_AT),
        "recall_at_review": _rate(score[pos] >= REVIEW_AT),
        "recall_at_quarantine": _rate(score[pos] >= QUARANTINE_AT),
    }
    if "phish" in labels:
        phish = y == labels.index("phish")
        p_phish = probs[:, labels.index("phish")]
        flagged = (score >= REVIEW_AT) | (p_phish >= PHISH_REVIEW_AT)
        report["phish_recall_at_review"] = _rate(flagged[phish])
        report["phish_n"] = int(phish.sum())
    errors = _worst(ckpt, score, pos)
    (out / "reports").mkdir(exist_ok=True)
    path = out / "reports" / "worst_errors.json"
    path.write_text(json.dumps(errors, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    report["worst_errors"] = "reports/worst_errors.json"
    return report


def _binary(pos: np.ndarray, score: np.ndarray) -> dict[str, Any]:
    """The filter's view at 0.5 (spam + phish vs ham, or positive vs negative)."""
    from textgate import metrics

    pred = score >= 0.5
    tp, fp, fn = int((pred & pos).sum()), int((pred & ~pos).sum()), int((~pred & pos).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    auc = metrics.roc_auc(pos.astype(int).tolist(), score) if 0 < pos.sum() < len(pos) else None
    return {
        "f1": round(f1, 5),
        "precision": round(precision, 5),
        "recall": round(recall, 5),
        "roc_auc": round(float(auc), 5) if auc is not None else None,
    }


def _rate(mask: np.ndarray) -> float | None:
    return round(float(mask.mean()), 5) if mask.size else None


def _worst(ckpt: Checkpoint, score: np.ndarray, pos: np.ndarray) -> dict[str, Any]:
    """The highest-scored ham and the lowest-scored spam/phish, with their text."""
    order = np.argsort(score)
    ham_idx = [int(i) for i in order[::-1] if not pos[i]][:WORST]
    spam_idx = [int(i) for i in order if pos[i]][:WORST]

    def row(i: int) -> dict[str, Any]:
        label = ckpt.labels[ckpt.test_labels[i]]
        return {"score": round(float(score[i]), 4), "label": label, "text": ckpt.test_texts[i]}

    return {
        "false_alarms": [row(i) for i in ham_idx],
        "misses": [row(i) for i in spam_idx],
    }

"""Leave-one-source-out's numbers and their rendering: each fold's binary metrics at the
policy's thresholds, per held-out group, the worst errors for a person to read, the means over
folds, and the markdown table with each fold's transformer run under it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from textgate import data, metrics

THRESHOLDS = {"0.5": 0.5, "review": 0.85, "quarantine": 0.95}
WORST, WORST_CHARS = 10, 200  # errors kept per kind, fold and model, and their text's head


def positives(table: data.Table, negative: str = "ham") -> np.ndarray:
    return np.array([label != negative for label in table.labels])


def binary_report(y: np.ndarray, score: np.ndarray) -> dict[str, Any]:
    """F1 etc. at 0.5, FPR and recall at the policy's thresholds, AUC when both classes."""
    pred = score >= 0.5
    tp, fp = int((pred & y).sum()), int((pred & ~y).sum())
    fn = int((~pred & y).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    out: dict[str, Any] = {
        "n": len(y),
        "positives": int(y.sum()),
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "precision": precision,
        "recall": recall,
        "roc_auc": metrics.roc_auc(y.astype(int).tolist(), score) if 0 < y.sum() < len(y) else None,
    }
    for name, t in THRESHOLDS.items():
        out[f"fpr@{name}"] = float((score[~y] >= t).mean()) if (~y).any() else None
        out[f"recall@{name}"] = float((score[y] >= t).mean()) if y.any() else None
    return out


def by_group(table: data.Table, idx: np.ndarray, score: np.ndarray) -> dict[str, Any]:
    groups = np.array(table.groups)[idx]
    y = positives(table)[idx]
    out = {}
    for g in sorted(set(groups)):
        sel = groups == g
        key = "recall" if y[sel].all() else "fpr" if not y[sel].any() else "f1"
        rep = binary_report(y[sel], score[sel])
        out[g] = {"n": int(sel.sum()), key: rep[key if key != "fpr" else "fpr@0.5"]}
    return out


def worst(
    table: data.Table, idx: np.ndarray, score: np.ndarray, n: int = WORST
) -> dict[str, list[dict[str, Any]]]:
    """The ``n`` held-out ham scored highest and positives scored lowest, for a person to
    read: the kinds of mail a fold fails on say more than its F1 does."""
    y = positives(table)[idx]
    order = np.argsort(score, kind="stable")

    def rows(picked: np.ndarray) -> list[dict[str, Any]]:
        return [
            {
                "group": table.groups[idx[j]],
                "score": round(float(score[j]), 4),
                "text": table.texts[idx[j]][:WORST_CHARS],
            }
            for j in picked
        ]

    return {
        "false_positive": rows(order[::-1][~y[order[::-1]]][:n]),
        "false_negative": rows(order[y[order]][:n]),
    }


def summarize(results: Sequence[dict[str, Any]], models: Sequence[str]) -> dict[str, Any]:
    """Mean F1 / AUC / FPR over folds per model."""
    out: dict[str, Any] = {}
    for name in models:
        reps = [f["models"][name] for f in results if name in f["models"]]
        if not reps:
            continue
        out[name] = {
            key: float(np.mean([r[key] for r in reps if r[key] is not None]))
            for key in ("f1", "precision", "recall", "roc_auc", "fpr@0.5", "fpr@quarantine")
            if any(r[key] is not None for r in reps)
        }
    return out


def markdown(report: dict[str, Any]) -> str:
    """One table row per fold and model, then the means: for docs/ and the console."""
    lines = [
        "| held out | model | F1 | precision | recall | ROC-AUC | FPR@0.5 | FPR@quarantine |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]

    def cell(v: Any) -> str:
        return "–" if v is None else f"{v:.3f}"

    for fold in report["folds"]:
        for name, r in fold["models"].items():
            row = [" + ".join(fold["held_out"]), name]
            row += [cell(r[k]) for k in ("f1", "precision", "recall", "roc_auc")]
            row += [cell(r["fpr@0.5"]), cell(r["fpr@quarantine"])]
            lines.append("| " + " | ".join(row) + " |")
    for name, s in report["summary"].items():
        row = ["**mean**", f"**{name}**"]
        row += [cell(s.get(k)) for k in ("f1", "precision", "recall", "roc_auc")]
        row += [cell(s.get("fpr@0.5")), cell(s.get("fpr@quarantine"))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines + _training_lines(report)) + "\n"


def _training_lines(report: dict[str, Any]) -> list[str]:
    """Each fold's transformer run under the table: steps, seconds, and whether it was cut."""
    runs = [f for f in report["folds"] if "training" in f]
    if not runs:
        return []
    lines = ["", "Transformer training per fold (steps run / planned, seconds, how it ended):", ""]
    for fold in runs:
        t = fold["training"]
        mark = " **cut by the budget**" if budget_cut(fold) else ""
        lines.append(
            f"- {' + '.join(fold['held_out'])}: {t['steps_run']}/{t['steps_planned']} steps, "
            f"{t['seconds']:.0f} s, {t['stopped']}{mark}"
        )
    return lines


def budget_cut(fold: dict[str, Any]) -> bool:
    """Whether the fold's transformer stopped on its time budget before its planned steps."""
    return bool(fold.get("training", {}).get("stopped") == "time_budget")

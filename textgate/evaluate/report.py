"""Leave-one-source-out's numbers and their rendering: each fold's binary metrics at the
policy's thresholds, per held-out group, the worst errors for a person to read, the means over
folds with the worst fold and the worst ham group, the join of several seeds' runs, and the
markdown tables with each fold's transformer run under them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from textgate import data, metrics
from textgate.errors import DataError

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


# per held-out group, by what it holds: the report's key -> binary_report's key
GROUP_KEYS = {
    "ham": {"fpr": "fpr@0.5", "fpr@review": "fpr@review", "fpr@quarantine": "fpr@quarantine"},
    "positive": {"recall": "recall@0.5", "recall@review": "recall@review"},
    "mixed": {"f1": "f1"},
}


def by_group(table: data.Table, idx: np.ndarray, score: np.ndarray) -> dict[str, Any]:
    """Per held-out group: a ham group's flag rates at 0.5 (``fpr``), review and quarantine,
    a spam or phish group's recall at 0.5 (``recall``) and review, a mixed group's F1."""
    groups = np.array(table.groups)[idx]
    y = positives(table)[idx]
    out = {}
    for g in sorted(set(groups)):
        sel = groups == g
        kind = "positive" if y[sel].all() else "ham" if not y[sel].any() else "mixed"
        rep = binary_report(y[sel], score[sel])
        out[g] = {"n": int(sel.sum())} | {k: rep[r] for k, r in GROUP_KEYS[kind].items()}
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


MEANS = ("f1", "precision", "recall", "roc_auc", "fpr@0.5", "fpr@review", "fpr@quarantine")


def summarize(results: Sequence[dict[str, Any]], models: Sequence[str]) -> dict[str, Any]:
    """Per model: the means over folds, the worst fold by F1 and every held-out ham group's
    flag rates at review and quarantine with the worst group's rate at review. A mean hides
    the one mailbox a release starts quarantining; the worst fold and group show it."""
    out: dict[str, Any] = {}
    for name in models:
        folds = [f for f in results if name in f["models"]]
        if not folds:
            continue
        reps = [f["models"][name] for f in folds]
        out[name] = {
            key: float(np.mean([r[key] for r in reps if r.get(key) is not None]))
            for key in MEANS
            if any(r.get(key) is not None for r in reps)
        }
        out[name] |= _worst_fold(folds, name) | _ham_groups(reps)
    return out


def _worst_fold(folds: Sequence[dict[str, Any]], name: str) -> dict[str, Any]:
    """The lowest F1 among folds holding both classes (a ham-only fold's F1 is 0 by
    construction, which says nothing), and that fold's held-out groups."""
    both = [f for f in folds if 0 < f["models"][name]["positives"] < f["models"][name]["n"]]
    if not both:
        return {}
    fold = min(both, key=lambda f: f["models"][name]["f1"])
    return {"worst_fold_f1": fold["models"][name]["f1"], "worst_fold": list(fold["held_out"])}


def _ham_groups(reps: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each held-out ham group's share scored at review and at quarantine, and the worst
    group's share at review: the mail a person would have to release by hand."""
    rates = {
        group: {k: r.get(k) for k in ("fpr@review", "fpr@quarantine")}
        for rep in reps
        for group, r in rep.get("groups", {}).items()
        if "fpr" in r
    }
    review = [r["fpr@review"] for r in rates.values() if r["fpr@review"] is not None]
    if not review:
        return {}
    return {"ham_groups": rates, "max_ham_fpr@review": max(review)}


# --- several seeds ---------------------------------------------------------------------------

JOINED_KEYS = (*MEANS, "worst_fold_f1", "max_ham_fpr@review")


def join_seeds(reports: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One report over the runs of the same folds under several transformer seeds (each
    ``by_source``'s report, its seed under ``options``): per model the mean and standard
    deviation over seeds of each run's summary, F1 per seed, the worst ham group's rate at
    review over all seeds (``max_ham_fpr@review_max``) and each ham group's mean rates. A
    fold's F1 moves with the seed by more than most changes do, so one seed decides nothing."""
    seeds = [r["options"]["seed"] for r in reports]
    models = list(dict.fromkeys(m for r in reports for m in r["summary"]))
    options = {k: v for k, v in reports[0]["options"].items() if k != "seed"} if reports else {}
    out: dict[str, Any] = {
        "seeds": seeds,
        "runs": list(reports),
        "summary": {m: _over_seeds([r["summary"].get(m, {}) for r in reports]) for m in models},
        "options": options | {"seeds": seeds},
    }
    cut = {str(r["options"]["seed"]): r["budget_cut"] for r in reports if r.get("budget_cut")}
    if any("budget_cut" in r for r in reports):
        out["budget_cut"] = cut
    if reports and "only" in reports[0]:
        out["only"] = reports[0]["only"]
    return out


def load_runs(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The seed runs in reports written by ``evaluate --by-source -o`` (one seed or joined),
    refused unless they are one experiment: the same data and code (``inputs``), the same
    options but the seed, the same folds and each seed once. A session that has time for one
    seed's run writes it; a later one joins them, and nothing else can slip in."""
    runs: list[dict[str, Any]] = []
    for path in paths:
        runs += [run | {"file": str(path)} for run in _runs_in(path)]
    if not runs:
        raise DataError("no report to join", hint="give --join REPORT.json at least once")
    first = runs[0]
    for run in runs[1:]:
        for key, what in (("inputs", "data or code"), ("only", "held-out groups")):
            if run.get(key) != first.get(key):
                raise DataError(
                    f"{run['file']} was run on other {what} than {first['file']}",
                    hint="join only runs of the same commit and data; rerun the odd one",
                )
        mine, theirs = (_but_seed(r["options"]) for r in (run, first))
        if mine != theirs:
            odd = sorted(k for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k))
            raise DataError(
                f"{run['file']} was run with other options ({', '.join(odd)}) than {first['file']}",
                hint="join runs that differ only in --seed",
            )
    seeds = [r["options"]["seed"] for r in runs]
    if len(set(seeds)) != len(seeds):
        raise DataError(f"a seed appears twice among {', '.join(map(str, paths))}: {seeds}")
    return runs


def _runs_in(path: Path) -> list[dict[str, Any]]:
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(
            f"{path}: cannot read it as a report ({exc})",
            hint="give a JSON report written by textgate evaluate --by-source -o",
        ) from exc
    runs = report.get("runs", [report]) if isinstance(report, dict) else []
    if not runs or not all(isinstance(r, dict) and "folds" in r and "options" in r for r in runs):
        raise DataError(
            f"{path}: not a leave-one-source-out report",
            hint="give a JSON report written by textgate evaluate --by-source -o",
        )
    return [{k: v for k, v in r.items() if k != "file"} for r in runs]


def _but_seed(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k != "seed"}


def _over_seeds(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One model's summaries, one per seed, as mean, std (n - 1; 0 for one seed) and F1 per
    seed; a seed without the model or the key (no AUC on one-class folds) is left out."""
    out: dict[str, Any] = {"f1_per_seed": [s.get("f1") for s in runs]}
    for key in JOINED_KEYS:
        xs = [float(s[key]) for s in runs if s.get(key) is not None]
        if xs:
            out[f"{key}_mean"] = float(np.mean(xs))
            out[f"{key}_std"] = float(np.std(xs, ddof=1)) if len(xs) > 1 else 0.0
    review = [s["max_ham_fpr@review"] for s in runs if s.get("max_ham_fpr@review") is not None]
    if review:
        out["max_ham_fpr@review_max"] = max(review)
    groups = _mean_ham_groups([s.get("ham_groups", {}) for s in runs])
    return out | ({"ham_groups": groups} if groups else {})


def _mean_ham_groups(runs: Sequence[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each ham group's rates averaged over the seeds that held it out."""
    out: dict[str, dict[str, Any]] = {}
    for group in dict.fromkeys(g for run in runs for g in run):
        out[group] = {}
        for key in ("fpr@review", "fpr@quarantine"):
            xs = [run[group][key] for run in runs if run.get(group, {}).get(key) is not None]
            out[group][key] = float(np.mean(xs)) if xs else None
    return out


# --- markdown --------------------------------------------------------------------------------

COLUMNS = (
    ("F1", "f1"),
    ("precision", "precision"),
    ("recall", "recall"),
    ("ROC-AUC", "roc_auc"),
    ("FPR@0.5", "fpr@0.5"),
    ("FPR@review", "fpr@review"),
    ("FPR@quarantine", "fpr@quarantine"),
)


def _cell(v: Any) -> str:
    return "–" if v is None else f"{v:.3f}"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def markdown(report: dict[str, Any]) -> str:
    """One table row per fold and model, then the means, each model's ham groups and each
    fold's transformer run: for docs/ and the console. A report of several seeds
    (``join_seeds``) gets the table over seeds first, then each seed's report."""
    if "runs" in report:
        return _seeds_markdown(report)
    lines = [
        _row(["held out", "model", *(title for title, _ in COLUMNS)]),
        "|---|---|" + "---:|" * len(COLUMNS),
    ]
    for fold in report["folds"]:
        for name, r in fold["models"].items():
            held = " + ".join(fold["held_out"])
            lines.append(_row([held, name, *(_cell(r.get(k)) for _, k in COLUMNS)]))
    for name, s in report["summary"].items():
        lines.append(_row(["**mean**", f"**{name}**", *(_cell(s.get(k)) for _, k in COLUMNS)]))
    lines += _ham_lines(report["summary"], "worst first")
    return "\n".join(lines + _training_lines(report)) + "\n"


def _ham_lines(summary: dict[str, Any], note: str) -> list[str]:
    """Per model, each held-out ham group's share flagged at review (≥ 0.85) and at
    quarantine (≥ 0.95), worst first: the groups a mean over folds averages away."""
    models = {m: s["ham_groups"] for m, s in summary.items() if s.get("ham_groups")}
    if not models:
        return []
    review, quarantine = THRESHOLDS["review"], THRESHOLDS["quarantine"]
    head = f"Ham groups flagged at review (≥ {review}) / quarantine (≥ {quarantine}), {note}:"
    lines = ["", head, ""]
    for name, groups in models.items():
        ranked = sorted(groups.items(), key=lambda kv: (*_worse(kv[1]), kv[0]))
        rates = ", ".join(
            f"{g} {_cell(r['fpr@review'])} / {_cell(r['fpr@quarantine'])}" for g, r in ranked
        )
        lines.append(f"- {name}: {rates}")
    return lines


def _worse(rates: dict[str, Any]) -> tuple[float, float]:
    """Sort key: the higher rate at review first, then at quarantine (a missing rate last)."""
    return (-(rates.get("fpr@review") or 0.0), -(rates.get("fpr@quarantine") or 0.0))


SEED_COLUMNS = (
    ("F1", "f1"),
    ("worst fold F1", "worst_fold_f1"),
    ("ROC-AUC", "roc_auc"),
    ("FPR@0.5", "fpr@0.5"),
    ("FPR@review", "fpr@review"),
    ("FPR@quarantine", "fpr@quarantine"),
    ("worst ham group FPR@review", "max_ham_fpr@review"),
)


def _seeds_markdown(report: dict[str, Any]) -> str:
    """The means over seeds (± their standard deviation), each model's ham groups averaged
    over seeds, then every seed's own report."""
    seeds = ", ".join(str(s) for s in report["seeds"])
    lines = [
        f"Over seeds {seeds}: mean ± std over seeds of each seed's mean over folds.",
        "",
        _row(["model", *(title for title, _ in SEED_COLUMNS)]),
        "|---|" + "---:|" * len(SEED_COLUMNS),
    ]
    for name, s in report["summary"].items():
        lines.append(_row([name, *(_pm(s, k) for _, k in SEED_COLUMNS)]))
    lines += _ham_lines(report["summary"], "mean over seeds, worst first")
    for seed, run in zip(report["seeds"], report["runs"], strict=True):
        lines += ["", f"### Seed {seed}", "", markdown(run).rstrip("\n")]
    return "\n".join(lines) + "\n"


def _pm(summary: dict[str, Any], key: str) -> str:
    mean = summary.get(f"{key}_mean")
    return "–" if mean is None else f"{mean:.3f} ± {summary.get(f'{key}_std', 0.0):.3f}"


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

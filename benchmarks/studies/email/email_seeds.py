"""Leave-one-source-out over several seeds: per fold, per seed, and the means.

    python benchmarks/studies/email/email_seeds.py REPORT [REPORT ...] [--out FILE]

Each REPORT is one ``textgate evaluate --task spam --by-source ... --seed N -o FILE`` run
(the same folds, another seed). A fold's F1 moves with the transformer's seed by more than
the target's margin (the newsletter fold: 0.847-0.914), so the estimate of quality on mail
from elsewhere is the mean over seeds, reported with the spread of the six-fold means.

Reports of one seed that ran different folds (``--hold-out``, to share a box or to finish a
run in parts) are joined first; a fold run twice under one seed is refused. Folds whose
transformer the time budget cut (the report's ``budget_cut``) are listed under
``budget_cut``: their F1 is not the model the options describe.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
MODELS = ("transformer", "ngrams", "transformer+ngrams")
KEYS = ("f1", "fpr@0.5", "fpr@quarantine")


def fold_name(fold: dict[str, Any]) -> str:
    return " + ".join(fold["held_out"])


def by_seed(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One report per seed: the folds of that seed's partial runs together, in run order."""
    joined: dict[int, dict[str, Any]] = {}
    for report in reports:
        seed = report["options"]["seed"]
        if seed not in joined:
            joined[seed] = {**report, "folds": list(report["folds"])}
            joined[seed]["budget_cut"] = list(report.get("budget_cut", []))
            continue
        have = {fold_name(f) for f in joined[seed]["folds"]}
        again = [fold_name(f) for f in report["folds"] if fold_name(f) in have]
        if again:
            raise SystemExit(f"seed {seed}: fold {again[0]} is in two reports; keep one")
        joined[seed]["folds"] += report["folds"]
        joined[seed]["budget_cut"] += report.get("budget_cut", [])
    return list(joined.values())


def combine(reports: list[dict[str, Any]]) -> dict[str, Any]:
    reports = by_seed(reports)
    seeds = [r["options"]["seed"] for r in reports]
    names = [fold_name(f) for f in reports[0]["folds"]]
    folds: dict[str, Any] = {}
    for name in names:
        per: dict[str, dict[str, Any]] = {}
        for model in MODELS:
            rows = [_fold(r, name)["models"][model] for r in reports]
            per[model] = {k: [round(float(x[k]), 4) for x in rows] for k in KEYS}
            per[model]["mean_f1"] = round(float(np.mean(per[model]["f1"])), 4)
        folds[name] = per
    means = {}
    for model in MODELS:
        per_seed = [
            float(np.mean([folds[n][model]["f1"][i] for n in names])) for i in range(len(seeds))
        ]
        means[model] = {
            "mean_f1_by_seed": [round(x, 4) for x in per_seed],
            "mean_f1": round(float(np.mean(per_seed)), 4),
            "spread": round(max(per_seed) - min(per_seed), 4),
        }
    cut = {str(r["options"]["seed"]): r["budget_cut"] for r in reports if r["budget_cut"]}
    return {"seeds": seeds, "folds": folds, "summary": means, "budget_cut": cut}


def _fold(report: dict[str, Any], name: str) -> dict[str, Any]:
    for fold in report["folds"]:
        if fold_name(fold) == name:
            return fold
    raise SystemExit(f"fold {name} missing from a report (seed {report['options']['seed']})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reports", nargs="+", type=Path)
    ap.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks/results/email_by_source_seeds.json"
    )
    args = ap.parse_args()
    result = combine([json.loads(p.read_text()) for p in args.reports])
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for model, row in result["summary"].items():
        print(f"{model:20s} mean F1 {row['mean_f1']:.4f}  by seed {row['mean_f1_by_seed']}")
    for seed, names in result["budget_cut"].items():
        print(f"seed {seed}: the budget cut the transformer in {', '.join(names)}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

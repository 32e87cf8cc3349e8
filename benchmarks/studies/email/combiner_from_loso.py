"""Would the combiner do better fitted on full-strength out-of-source scores? (issue 38)

    python benchmarks/studies/email/combiner_from_loso.py --scores reports/seed42.npz \
        [--out benchmarks/results/combiner_from_loso.json]

The served combiner learns its weights from a 2-fold cross-fit whose transformers train for
a fraction of the main run's steps (63 and 71 of 256 in the default build), so it may weigh
a weaker transformer than the one it serves with. ``--scores`` (``textgate evaluate
--by-source --scores``) holds, for every leave-one-source-out fold, the full-recipe fold
transformer's and n-gram model's scores of its held-out rows. Here, for each held-out fold
F, the same combiner (``train.combiner.fit_by_groups``: sign-constrained logistic
regression, L2 by leave-one-group-out) is fitted on the other five folds' rows of those
scores plus their symbols, and applied to F's rows: nested, F never reaches its weights.
Compared on the same rows with ``combined`` (the served recipe, refit inside each fold) and
``transformer+ngrams`` (the two halves joined without symbols).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from textgate import signals
from textgate.data import load_task
from textgate.evaluate import CORPUS_FOLDS
from textgate.train import combiner as fitter

MODELS = ("combined", "transformer+ngrams", "transformer")


def _logit(p: Any) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-7, 1 - 1e-7)
    return np.asarray(np.log(p / (1 - p)))


def fold_data(npz: Any, table: Any, f: int) -> dict[str, Any]:
    def scores(model: str) -> dict[int, float]:
        rows, s = npz[f"fold{f}/{model}/rows"], npz[f"fold{f}/{model}/score"]
        return dict(zip(rows.tolist(), s.tolist(), strict=True))

    t, n = scores("transformer"), scores("ngrams")
    rows = list(t)
    return {
        "content": _logit([t[i] for i in rows]),
        "lexical": _logit([n[i] for i in rows]),
        "y": np.array([table.labels[i] != "ham" for i in rows]),
        "groups": [table.groups[i] for i in rows],
        "symbols": [table.symbols[i] for i in rows],
        **{m: np.array([scores(m)[i] for i in rows]) for m in MODELS},
    }


def rates(score: np.ndarray, d: dict[str, Any], review: float) -> dict[str, float]:
    y = d["y"]
    p = score >= 0.5
    out = {"f1": round(float(2 * (p & y).sum() / (p.sum() + y.sum())), 4)}
    for g in sorted(set(d["groups"])):
        ham = np.array([x == g for x in d["groups"]]) & ~y
        if ham.any():
            out[f"{g} at review"] = round(float((score[ham] >= review).mean()), 4)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scores", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/combiner_from_loso.json"))
    args = ap.parse_args()
    t0 = time.monotonic()
    from textgate.config import Config

    review = Config().policy.for_task("spam").review_at
    table = load_task("spam")
    npz = np.load(args.scores)
    data = {f: fold_data(npz, table, f) for f in range(len(CORPUS_FOLDS))}
    folds: dict[str, Any] = {}
    for f, d in data.items():
        other = [data[g] for g in data if g != f]
        model, losses = fitter.fit_by_groups(
            np.concatenate([o["content"] for o in other]),
            np.concatenate([o["lexical"] for o in other]),
            [s for o in other for s in o["symbols"]],
            np.concatenate([o["y"] for o in other]).astype(int),
            [g for o in other for g in o["groups"]],
            symbols=signals.ORDER,
            directions={n: s.direction for n, s in signals.SYMBOLS.items()},
            negative=0,
        )
        z = model.z(d["content"], d["lexical"], d["symbols"])
        loso = 1 / (1 + np.exp(-z))
        folds[" + ".join(CORPUS_FOLDS[f])] = {
            "combiner fitted on the other folds' LOSO scores": rates(loso, d, review),
            **{m: rates(d[m], d, review) for m in MODELS},
            "weights": {
                "content": round(float(model.weights[0]), 3),
                "lexical": round(float(model.weights[1]), 3),
            },
            "l2": min(losses, key=lambda k: losses[k]),
        }
    names = ["combiner fitted on the other folds' LOSO scores", *MODELS]
    mean = {n: round(float(np.mean([v[n]["f1"] for v in folds.values()])), 4) for n in names}
    result = {
        "scores": args.scores.name,
        "mean_f1": mean,
        "folds": folds,
        "seconds": round(time.monotonic() - t0, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(mean, indent=1))


if __name__ == "__main__":
    main()

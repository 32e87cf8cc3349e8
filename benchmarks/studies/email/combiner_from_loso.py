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

Two more fits keep the join's fixed mix (0.5 of each half's log-odds, ``ngram.WEIGHT``) as an
offset and learn only what the combiner adds to it, on the same other-fold rows: an
intercept alone, and an intercept plus the symbols (signs as the served fitter bounds them,
L2 by leave-one-group-out log-loss). They ask whether the symbols carry anything to a source
they never saw once the two scores are mixed as the join mixes them.
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
from textgate.train.combiner import L2_GRID
from textgate.train.ngram import WEIGHT as JOIN

MODELS = ("combined", "transformer+ngrams", "transformer")
LOSO = "combiner fitted on the other folds' LOSO scores"
PINNED = ("join + intercept", "join + intercept + symbols")


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


def rates(
    score: np.ndarray, d: dict[str, Any], review: float, quarantine: float = 1.0
) -> dict[str, float]:
    y = d["y"]
    p = score >= 0.5
    out = {"f1": round(float(2 * (p & y).sum() / (p.sum() + y.sum())), 4)}
    out["spam at review"] = round(float((score[y] >= review).mean()), 4)
    for g in sorted(set(d["groups"])):
        ham = np.array([x == g for x in d["groups"]]) & ~y
        if ham.any():
            out[f"{g} at review"] = round(float((score[ham] >= review).mean()), 4)
            if quarantine < 1.0:
                out[f"{g} at quarantine"] = round(float((score[ham] >= quarantine).mean()), 4)
    return out


def fit_pinned(
    offset: np.ndarray, x: np.ndarray, y: np.ndarray, bounds: list[Any], l2: float
) -> np.ndarray:
    """Intercept + weights over ``x`` on top of a fixed ``offset``: class-balanced log-loss
    + l2/n·||w||², as the served fitter's loss (train.combiner.fit)."""
    from scipy.optimize import minimize
    from scipy.special import expit

    n, t = len(y), y.astype(np.float64)
    sample = np.where(t == 1.0, n / (2.0 * t.sum()), n / (2.0 * (n - t.sum())))

    def loss(params: np.ndarray) -> tuple[float, np.ndarray]:
        z = offset + x @ params[1:] + params[0]
        value = float(sample @ (np.logaddexp(0.0, z) - t * z)) / n
        value += l2 / n * float(params[1:] @ params[1:])
        r = sample * (expit(z) - t) / n
        return value, np.concatenate([[r.sum()], x.T @ r + 2.0 * l2 / n * params[1:]])

    start = np.zeros(x.shape[1] + 1)
    res = minimize(loss, start, jac=True, method="L-BFGS-B", bounds=[(None, None), *bounds])
    return np.asarray(res.x, dtype=np.float64)


def pinned(other: list[dict[str, Any]], d: dict[str, Any], symbols: bool) -> np.ndarray:
    """The held-out fold's probability under a pinned fit on the other folds (L2 chosen by
    leave-one-group-out log-loss over their groups when there are symbols)."""
    from scipy.special import expit

    from textgate.signals import combiner as comb

    names = signals.ORDER if symbols else ()
    directions = signals.DIRECTIONS

    def parts(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
        c = np.concatenate([r["content"] for r in rows])
        lex = np.concatenate([r["lexical"] for r in rows])
        fired = [s for r in rows for s in r["symbols"]]
        x = comb.design(c, lex, fired, names)[:, len(comb.SCORES) :]
        return (1 - JOIN) * c + JOIN * lex, x

    off, x = parts(other)
    y = np.concatenate([o["y"] for o in other]).astype(int)
    groups = np.array([g for o in other for g in o["groups"]])
    seen = x.sum(axis=0)
    bounds = [
        (0.0, 0.0) if k < 5 else ((0.0, None) if directions[n] > 0 else (None, 0.0))
        for n, k in zip(names, seen, strict=True)
    ]
    l2 = 1.0
    if symbols:
        losses = {}
        for cand in L2_GRID:
            total = 0.0
            for g in sorted(set(groups.tolist())):
                held = groups == g
                w = fit_pinned(off[~held], x[~held], y[~held], bounds, cand)
                p = np.clip(expit(off[held] + x[held] @ w[1:] + w[0]), 1e-7, 1 - 1e-7)
                total += float(-(y[held] * np.log(p) + (1 - y[held]) * np.log(1 - p)).mean())
            losses[cand] = total
        l2 = min(losses, key=lambda k: losses[k])
    w = fit_pinned(off, x, y, bounds, l2)
    off_d, x_d = parts([d])
    return np.asarray(expit(off_d + x_d @ w[1:] + w[0]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scores", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/combiner_from_loso.json"))
    args = ap.parse_args()
    t0 = time.monotonic()
    from textgate.config import Config

    policy = Config().policy.for_task("spam")
    review, quarantine = policy.review_at, policy.quarantine_at
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
            directions=signals.DIRECTIONS,
            negative=0,
        )
        z = model.z(d["content"], d["lexical"], d["symbols"])
        loso = 1 / (1 + np.exp(-z))
        folds[" + ".join(CORPUS_FOLDS[f])] = {
            LOSO: rates(loso, d, review, quarantine),
            PINNED[0]: rates(pinned(other, d, symbols=False), d, review, quarantine),
            PINNED[1]: rates(pinned(other, d, symbols=True), d, review, quarantine),
            **{m: rates(d[m], d, review, quarantine) for m in MODELS},
            "weights": {
                "content": round(float(model.weights[0]), 3),
                "lexical": round(float(model.weights[1]), 3),
            },
            "l2": min(losses, key=lambda k: losses[k]),
        }
    names = [LOSO, *PINNED, *MODELS]
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

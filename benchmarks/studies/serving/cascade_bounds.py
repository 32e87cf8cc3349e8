"""The confidence cascade (issue 42 §1): how much mail could the cheap signals alone answer
without the transformer, if the bounds may change at most 0.3 % of actions in any source
group relative to the full scorer — with the bounds chosen on other sources than the ones
they are measured on?

    python benchmarks/studies/serving/cascade_bounds.py --scores reports/seed42.npz \
        [--cheap combiner|ngrams] [--sides both|allow] [--fixed-allow 0.15] \
        [--out benchmarks/results/cascade_bounds.json]
    python benchmarks/studies/serving/cascade_bounds.py --join R1.json R2.json R3.json --out J

``--join``: several seeds' ``--cheap ngrams`` reports, fold by fold, mean and worst.
``--cheap combiner`` (the first study, before the cascade was built): the cheap score is a
combiner of the n-gram model and the structure symbols. ``--cheap ngrams`` (what is built):
the n-gram model's own P(not ham), the score ``T_cheap`` serves; then the report also has
``shipped``: the bounds chosen on all six folds' out-of-source scores at once, the same
choice made without each fold and measured on it (``nested``), an ``allow_sweep`` of
bounds, and ``fixed_allow``: the spam recipe's bound (``build.EXPORT_DEFAULTS``) fold by
fold. ``--sides allow``: the allow side only — what a task whose not-ham mass spans
several labels (spam, phish) can use, since the n-gram half cannot name which.

``--scores`` is ``textgate evaluate --task spam --by-source --scores`` (the nested seed-42
run of docs/email-model.md); ``--served`` names its column that is the full served scorer,
out of source, on 400 rows a group: ``transformer+ngrams`` (the default since the fitted
combiner was retired) or ``combined`` (the fitted combiner, served before; the recorded
result's). For each leave-one-source-out fold F of ``textgate.evaluate.CORPUS_FOLDS``, nested:

1. the cheap score of every row of every other fold G comes from an n-gram model fitted
   without F and G (``evaluate.scorers.ngram_lr``), and a cheap combiner
   (``train.combiner.fit_by_groups``: the n-gram log-odds and the symbols, sign-constrained,
   on real mail only) is fitted on those rows;
2. the bounds: ``allow`` when the cheap score is ≤ lo, ``quarantine`` when ≥ hi, else the
   full scorer — the (lo, hi) that skips the most of the other folds' scored rows while no
   group there has more than ``--max-change`` of its actions changed;
3. fold F's rows get the cheap score from an n-gram model fitted without F (the run's own
   ``ngrams`` column) through that combiner, and the cascade is measured there: share
   answered cheaply and actions changed, per group; F1 and ham flagged at review, full vs
   cascaded.

Actions are the policy's thresholds on P(not ham) (review 0.85, quarantine 0.95); the
phish label rule's floor is not modelled (the cascade may only answer ``allow`` for mail
whose cheap score is far below it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from textgate import signals
from textgate.config import Config
from textgate.data import load_task
from textgate.evaluate import CORPUS_FOLDS
from textgate.evaluate.scorers import ngram_lr
from textgate.train import combiner as fitter

EPS = 1e-7
GRID = 200  # candidate bounds: quantiles of the cheap scores
SWEEP = (0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, EPS, 1 - EPS)
    return np.asarray(np.log(p / (1 - p)))


def actions(score: np.ndarray, review: float, quarantine: float) -> np.ndarray:
    return np.where(score >= quarantine, 2, np.where(score >= review, 1, 0))


def scored(npz: Any, fold: int, model: str) -> dict[int, float]:
    rows, score = npz[f"fold{fold}/{model}/rows"], npz[f"fold{fold}/{model}/score"]
    return dict(zip(rows.tolist(), score.tolist(), strict=True))


def fold_rows(table: Any, fold: int) -> np.ndarray:
    return np.array([i for i, g in enumerate(table.groups) if g in CORPUS_FOLDS[fold]])


def cheap_combiner(table: Any, held: int, log: Any, fit: bool = True) -> Any:
    """Fitted on every other fold's rows, each scored by an n-gram model that saw neither
    that fold nor ``held``."""
    lexical, rows = [], []
    for g in range(len(CORPUS_FOLDS)):
        if g == held:
            continue
        out = set(CORPUS_FOLDS[g]) | set(CORPUS_FOLDS[held])
        train = [i for i, grp in enumerate(table.groups) if grp not in out]
        test = fold_rows(table, g)
        y = np.array([table.labels[i] != "ham" for i in train], dtype=int)
        lexical.append(ngram_lr([table.texts[i] for i in train], y, [table.texts[i] for i in test]))
        rows.append(test)
        log(f"fold {held}: n-grams without folds {held}, {g} scored {len(test)} rows")
    idx = np.concatenate(rows)
    lex = _logit(np.concatenate(lexical))
    if not fit:
        return None, dict(zip(idx.tolist(), lex.tolist(), strict=True))
    model, _ = fitter.fit_by_groups(
        np.zeros(len(idx)),  # no content score: the cheap path has no transformer
        lex,
        [table.symbols[i] for i in idx],
        np.array([table.labels[i] != "ham" for i in idx], dtype=int),
        [table.groups[i] for i in idx],
        symbols=signals.ORDER,
        directions=signals.DIRECTIONS,
        negative=0,
    )
    return model, dict(zip(idx.tolist(), lex.tolist(), strict=True))


def cheap(model: Any, table: Any, rows: list[int], lex: dict[int, float]) -> np.ndarray:
    z = model.z(np.zeros(len(rows)), np.array([lex[i] for i in rows]),
                [table.symbols[i] for i in rows])  # fmt: skip
    return np.asarray(1 / (1 + np.exp(-z)))


def choose(
    c: np.ndarray,
    full: np.ndarray,
    groups: np.ndarray,
    rule: Any,
    max_change: float,
    both: bool = True,
) -> tuple[float, float]:
    """(lo, hi) skipping the most rows with no group's changed actions above max_change;
    ``both=False``: the allow side only (hi stays above 1)."""
    act = actions(full, rule.review_at, rule.quarantine_at)
    names = np.unique(groups)
    cand = np.unique(np.quantile(c, np.linspace(0, 1, GRID)))
    los = [0.0, *[x for x in cand if x < rule.review_at]]
    his = [1.0 + EPS, *[x for x in cand if x >= rule.quarantine_at and both]]

    def changed(mask: np.ndarray, to: int) -> np.ndarray:
        return np.array([((act != to) & mask)[groups == g].mean() for g in names])

    lo_ch = {lo: changed(c <= lo, 0) for lo in los}
    hi_ch = {hi: changed(c >= hi, 2) for hi in his}
    best = (0.0, 1.0 + EPS, -1.0)
    for lo in los:
        for hi in his:
            if (lo_ch[lo] + hi_ch[hi]).max() <= max_change + 1e-12:
                skip = float(((c <= lo) | (c >= hi)).mean())
                if skip > best[2]:
                    best = (float(lo), float(hi), skip)
    return best[0], best[1]


def measure(
    c: np.ndarray, full: np.ndarray, y: np.ndarray, groups: np.ndarray, bounds: tuple[float, float],
    rule: Any,
) -> dict[str, Any]:  # fmt: skip
    lo, hi = bounds
    skip = (c <= lo) | (c >= hi)
    cas = np.where(skip, c, full)
    a_full = actions(full, rule.review_at, rule.quarantine_at)
    a_cas = np.where(c <= lo, 0, np.where(c >= hi, 2, a_full))
    out: dict[str, Any] = {"groups": {}}
    for g in np.unique(groups):
        m = groups == g
        out["groups"][str(g)] = {
            "rows": int(m.sum()),
            "answered_cheaply": round(float(skip[m].mean()), 4),
            "actions_changed": round(float((a_cas != a_full)[m].mean()), 4),
            "ham_flagged_at_review": {
                "full": round(float((a_full[m & ~y] >= 1).mean()), 4) if (m & ~y).any() else None,
                "cascade": round(float((a_cas[m & ~y] >= 1).mean()), 4) if (m & ~y).any() else None,
            },
        }
    out["answered_cheaply"] = round(float(skip.mean()), 4)
    out["f1"] = {"full": _f1(full, y), "cascade": _f1(cas, y)}
    return out


def _f1(score: np.ndarray, y: np.ndarray) -> float:
    p = score >= 0.5
    tp = float((p & y).sum())
    return round(2 * tp / (p.sum() + y.sum()), 4) if y.any() else 0.0


def cheap_scores(table: Any, held: int, kind: str, log: Any) -> tuple[Any, dict[int, float]]:
    """The cheap model for fold ``held`` and the other folds' cheap log-odds it is chosen on:
    ``combiner`` fits one (n-grams + symbols); ``ngrams`` is the n-gram model's own score."""
    model, lex = cheap_combiner(table, held, log, fit=kind == "combiner")
    return model, lex


def scorer(model: Any, table: Any, rows: list[int], lex: dict[int, float]) -> np.ndarray:
    if model is None:  # the n-gram model alone: its own P(not ham)
        return np.asarray(1 / (1 + np.exp(-np.array([lex[i] for i in rows]))))
    return cheap(model, table, rows, lex)


def shipped(npz: Any, table: Any, args: Any, rule: Any) -> dict[str, Any]:
    """The bounds a bundle ships: chosen on all six folds' out-of-source scores at once
    (each fold's n-gram model saw no row of it); only for ``--cheap ngrams``. ``nested``:
    the same choice made without each fold in turn, measured on that fold — what the
    shipped way of choosing does on sources it did not see."""
    per_fold = []
    for f in range(len(CORPUS_FOLDS)):
        served, ngr = scored(npz, f, args.served), scored(npz, f, "ngrams")
        rows = list(served)
        per_fold.append(
            (rows, np.array([ngr[i] for i in rows]), np.array([served[i] for i in rows]))
        )

    def pooled(folds: list[int]) -> tuple[list[int], np.ndarray, np.ndarray]:
        rows = [i for f in folds for i in per_fold[f][0]]
        return (
            rows,
            np.concatenate([per_fold[f][1] for f in folds]),
            np.concatenate([per_fold[f][2] for f in folds]),
        )

    def pick(folds: list[int]) -> tuple[float, float]:
        rows, c, full = pooled(folds)
        groups = np.array([table.groups[i] for i in rows])
        return choose(c, full, groups, rule, args.max_change, both=args.sides == "both")

    def measured(folds: list[int], bounds: tuple[float, float]) -> dict[str, Any]:
        rows, c, full = pooled(folds)
        y = np.array([table.labels[i] != "ham" for i in rows])
        return measure(c, full, y, np.array([table.groups[i] for i in rows]), bounds, rule)

    every = list(range(len(CORPUS_FOLDS)))
    lo, hi = pick(every)
    nested = {}
    for f in every:
        b = pick([g for g in every if g != f])
        nested[" + ".join(CORPUS_FOLDS[f])] = {
            "bounds": {"allow_at_or_below": b[0], "quarantine_at_or_above": b[1]},
            "measured": measured([f], b),
        }
    rows, c, full = pooled(every)
    groups = np.array([table.groups[i] for i in rows])
    acted = actions(full, rule.review_at, rule.quarantine_at) != 0
    ham = np.array([table.labels[i] == "ham" for i in rows])
    sweep = {}
    for bound in SWEEP:  # how the allow side's reach and risk grow with its bound
        cheap = c <= bound
        worst = max(np.unique(groups), key=lambda g: float((acted & cheap)[groups == g].mean()))
        sweep[str(bound)] = {
            "answered_cheaply": round(float(cheap.mean()), 4),
            "ham_answered_cheaply": round(float(cheap[ham].mean()), 4),
            "actions_changed": int((acted & cheap).sum()),
            "worst_group": str(worst),
            "worst_group_changed": round(float((acted & cheap)[groups == worst].mean()), 4),
        }
    fixed = (args.fixed_allow, 1.0 + EPS)  # the bound the spam recipe ships, fold by fold
    return {
        "bounds": {"allow_at_or_below": lo, "quarantine_at_or_above": hi},
        "in_sample": measured(every, (lo, hi)),
        "nested": nested,
        "allow_sweep": sweep,
        "fixed_allow": {
            "allow_at_or_below": args.fixed_allow,
            "folds": {" + ".join(CORPUS_FOLDS[f]): measured([f], fixed) for f in every},
        },
    }


def _fold_row(m: dict[str, Any]) -> dict[str, float]:
    hams = [g["ham_flagged_at_review"] for g in m["groups"].values()]
    ham = [abs(h["cascade"] - h["full"]) for h in hams if h["full"] is not None]
    return {
        "answered_cheaply": m["answered_cheaply"],
        "actions_changed_worst_group": max(g["actions_changed"] for g in m["groups"].values()),
        "f1_change": m["f1"]["cascade"] - m["f1"]["full"],
        "ham_flag_rate_change_worst_group": max(ham, default=0.0),
    }


def join(paths: list[Path]) -> dict[str, Any]:
    """Several seeds' ``--cheap ngrams`` reports, fold by fold: the shipped bound's and the
    nested choice's effect, mean and worst over the seeds."""
    runs = [json.loads(p.read_text()) for p in paths]
    out: dict[str, Any] = {"runs": [p.name for p in paths], "fixed_allow": {}, "nested": {}}
    for name in runs[0]["folds"]:
        rows = {
            "fixed_allow": [_fold_row(r["shipped"]["fixed_allow"]["folds"][name]) for r in runs],
            "nested": [_fold_row(r["folds"][name]["scored_rows"]) for r in runs],
        }
        for kind, per_seed in rows.items():
            out[kind][name] = {
                "answered_cheaply_mean": round(
                    statistics.mean(x["answered_cheaply"] for x in per_seed), 4
                ),
                "actions_changed_worst": max(x["actions_changed_worst_group"] for x in per_seed),
                "f1_change_mean": round(statistics.mean(x["f1_change"] for x in per_seed), 4),
                "f1_change_worst": min(x["f1_change"] for x in per_seed),
                "ham_flag_rate_change_worst": max(
                    x["ham_flag_rate_change_worst_group"] for x in per_seed
                ),
            }
        out["nested"][name]["bounds"] = [
            r["folds"][name]["bounds"]["allow_at_or_below"] for r in runs
        ]
    out["fixed_allow_answered_cheaply_mean"] = round(
        statistics.mean(v["answered_cheaply_mean"] for v in out["fixed_allow"].values()), 4
    )
    out["nested_answered_cheaply_mean"] = round(
        statistics.mean(v["answered_cheaply_mean"] for v in out["nested"].values()), 4
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--join", type=Path, nargs="+", help="join seeds' reports instead")
    ap.add_argument("--scores", type=Path)
    ap.add_argument("--max-change", type=float, default=0.003)
    ap.add_argument("--served", default="transformer+ngrams", help="the full scorer's column")
    ap.add_argument("--cheap", choices=("combiner", "ngrams"), default="combiner")
    ap.add_argument("--sides", choices=("both", "allow"), default="both")
    ap.add_argument("--fixed-allow", type=float, default=0.15, help="the shipped allow bound")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/cascade_bounds.json"))
    args = ap.parse_args()
    if args.join:
        joined = join(args.join)
        args.out.write_text(json.dumps(joined, indent=2) + "\n")
        print(json.dumps(joined, indent=1))
        return
    if args.scores is None:
        ap.error("--scores is required (or --join REPORT...)")
    t0 = time.monotonic()
    table = load_task("spam")
    rule = Config().policy.for_task("spam")
    npz = np.load(args.scores)
    folds: dict[str, Any] = {}
    for f in range(len(CORPUS_FOLDS)):
        model, lex_other = cheap_scores(table, f, args.cheap, print)
        other = [g for g in range(len(CORPUS_FOLDS)) if g != f]
        o_rows = [i for g in other for i in scored(npz, g, args.served)]
        o_full = np.array(
            [scored(npz, g, args.served)[i] for g in other for i in scored(npz, g, args.served)]
        )
        bounds = choose(
            scorer(model, table, o_rows, lex_other), o_full,
            np.array([table.groups[i] for i in o_rows]), rule, args.max_change,
            both=args.sides == "both",
        )  # fmt: skip
        full = scored(npz, f, args.served)
        lex = {i: float(_logit(np.array(s))) for i, s in scored(npz, f, "ngrams").items()}
        rows = list(full)
        c = scorer(model, table, rows, lex)
        y = np.array([table.labels[i] != "ham" for i in rows])
        g = np.array([table.groups[i] for i in rows])
        every = scorer(model, table, list(lex), lex)  # all the fold's rows, not only scored
        name = " + ".join(CORPUS_FOLDS[f])
        folds[name] = {
            "bounds": {"allow_at_or_below": bounds[0], "quarantine_at_or_above": bounds[1]},
            "scored_rows": measure(c, np.array([full[i] for i in rows]), y, g, bounds, rule),
            "every_row_answered_cheaply": round(
                float(((every <= bounds[0]) | (every >= bounds[1])).mean()), 4
            ),
        }
        print(json.dumps({name: folds[name]["scored_rows"]["answered_cheaply"]}))
    result = {
        "scores": args.scores.name,
        "cheap": args.cheap,
        "sides": args.sides,
        "max_change_per_group": args.max_change,
        "review_at": rule.review_at,
        "quarantine_at": rule.quarantine_at,
        "folds": folds,
        "seconds": round(time.monotonic() - t0, 1),
    }
    if args.cheap == "ngrams":
        result["shipped"] = shipped(npz, table, args, rule)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

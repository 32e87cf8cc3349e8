"""Per-tenant learning (issue 43 §1): does a tenant's own handful of corrections fix its
false alarms without costing spam recall, and leave every other tenant alone?

    python benchmarks/studies/email/tenant_learning.py [--scores FILE.npz] \
        [--fold 4] [--tune-fold 0] [--draws 5] [--out benchmarks/results/tenant_learning.json]

One leave-one-source-out fold of the packaged corpus (``textgate.evaluate.CORPUS_FOLDS``,
default 4: trec07p/ham-list + phishing-pot/2025-2026) is "one tenant's mail". The global
model alone is a scorer that never saw those groups: ``--scores`` from ``textgate evaluate
--by-source --scores`` (its ``--served`` column, default ``transformer+ngrams``, the served
scorer; ``combined`` was before the fitted combiner was retired), else the served n-gram half fitted
leave-those-groups-out (``evaluate.scorers.ngram_lr``; the output says which). N = 10, 50,
200 corrections are drawn from the tenant's rows (seeded, ``--draws`` times), the gateway's
own step functions (``gateway.scoring.learning``) apply the layer, and the rest of the
tenant's rows are measured at the policy's review threshold: ham flag rate and spam recall,
global alone vs with the layer. Another tenant's rows go through the same step with the
first tenant's layer in place; their scores must be bit-identical.

The layer's ceiling weight (``feedback.learning_weight``) and its lean toward ham
(``tenant_bayes.LEAN``) are chosen on ``--tune-fold``, never on the fold reported.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from textgate import tenant_bayes
from textgate.config import Config
from textgate.data import load_task
from textgate.evaluate import CORPUS_FOLDS
from textgate.gateway.scoring import learning
from textgate.gateway.scoring.learning import Learned
from textgate.gateway.scoring.policy import Verdict

SIZES = (10, 50, 200)
CEILINGS = (1.0, 2.0, 3.0)
LEANS = (0.0, 0.5, 1.0)
MINIMUM = 10  # feedback.min_corrections' default


SERVED = "transformer+ngrams"  # the column of --scores that is the served scorer (--served)


def fold_rows(table: Any, fold: int, scores: Path | None = None) -> list[int]:
    """The tenant's rows: the fold's groups, and with ``scores`` only the rows the run
    scored (``evaluate`` scores the transformer and its joins on ``--test-per-group``
    rows a group, not on all: the transformer's rows are every join's)."""
    rows = [i for i, g in enumerate(table.groups) if g in CORPUS_FOLDS[fold]]
    if scores is None:
        return rows
    with np.load(scores) as f:
        models = sorted({k.split("/")[1] for k in f.files if k.startswith(f"fold{fold}/")})
        model = "transformer" if "transformer" in models else models[0]
        scored = set(f[f"fold{fold}/{model}/rows"].tolist())
    return [i for i in rows if i in scored]


def global_scores(
    table: Any, fold: int, scores: Path | None, served: str = SERVED
) -> tuple[np.ndarray, str]:
    """P(not ham) for every row of ``fold_rows``, from a scorer that never saw them."""
    rows = np.array(fold_rows(table, fold, scores))
    if scores is not None:
        with np.load(scores) as f:
            models = sorted({k.split("/")[1] for k in f.files if k.startswith(f"fold{fold}/")})
            model = served if served in models else models[0]
            got = dict(
                zip(f[f"fold{fold}/{model}/rows"], f[f"fold{fold}/{model}/score"], strict=True)
            )
        return np.array([got[i] for i in rows]), f"{scores.name}: {model}"
    from textgate.evaluate.scorers import ngram_lr

    train = [i for i, g in enumerate(table.groups) if g not in CORPUS_FOLDS[fold]]
    y = np.array([table.labels[i] != "ham" for i in train], dtype=int)
    score = ngram_lr([table.texts[i] for i in train], y, [table.texts[i] for i in rows])
    return score, "fallback: the served n-gram half (ngram_lr) fitted leave-the-fold's-groups-out"


def with_layer(
    learned: Learned, tenant: str | None, base: np.ndarray, where: list[np.ndarray]
) -> np.ndarray:
    """Each row's score after the gateway's step (``learning.verdict``) for this tenant."""
    rule = Config().policy.for_task("spam")
    layer = learned.layers.layer(tenant, "spam")
    out = np.empty_like(base)
    for i, (p, w) in enumerate(zip(base, where, strict=True)):
        found = None
        if layer is not None:
            neg, pos = layer.docs
            s = tenant_bayes.Signal(layer.n, pos, neg, layer.log_odds(w), layer.version)
            found = (s, tenant_bayes.weight(neg, pos, learned.minimum, learned.ceiling))
        v = Verdict(learning.thresholds(rule, float(p)), float(p))
        out[i] = learning.verdict(rule, v, found, None).score
    return out


def rates(score: np.ndarray, spam: np.ndarray, at: float) -> dict[str, float]:
    flagged = score >= at
    return {
        "ham_flag_rate": float(flagged[~spam].mean()),
        "spam_recall": float(flagged[spam].mean()),
    }


def run_fold(
    table: Any,
    fold: int,
    base: np.ndarray,
    ceiling: float,
    draws: int,
    lean: float,
    scores: Path | None = None,
) -> dict[str, Any]:
    rows = fold_rows(table, fold, scores)
    spam = np.array([table.labels[i] != "ham" for i in rows])
    where = [tenant_bayes.buckets(table.texts[i]) for i in rows]
    at = Config().policy.for_task("spam").review_at
    out: dict[str, Any] = {"rows": len(rows), "ham": int((~spam).sum()), "sizes": {}}
    for n in SIZES:
        per: list[dict[str, float]] = []
        for seed in range(draws):
            pick = np.random.default_rng(seed).choice(len(rows), n, replace=False)
            layer = tenant_bayes.Layer(lean)
            for j in pick:  # a correction's id is its row; its class the row's label
                layer.add(int(j), bool(spam[j]), where[j])
            layers = tenant_bayes.Learning(["ham"])
            layers.adopt("t", "spam", layer)
            rest = np.setdiff1d(np.arange(len(rows)), pick)
            after = with_layer(
                Learned(layers, MINIMUM, ceiling), "t", base[rest], [where[j] for j in rest]
            )
            g, a = rates(base[rest], spam[rest], at), rates(after, spam[rest], at)
            per.append(
                {"global_" + k: v for k, v in g.items()} | {"layer_" + k: v for k, v in a.items()}
            )
        out["sizes"][str(n)] = {k: float(np.mean([p[k] for p in per])) for k in per[0]} | {
            "draws": per
        }
    return out


def isolation(
    table: Any, fold: int, base: np.ndarray, ceiling: float, lean: float,
    scores: Path | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Tenant t holds 200 corrections; another tenant's and the default tenant's scores
    through the same step are compared bit for bit with the global scores."""
    rows = fold_rows(table, fold, scores)
    spam = [table.labels[i] != "ham" for i in rows]
    where = [tenant_bayes.buckets(table.texts[i]) for i in rows]
    layer = tenant_bayes.Layer(lean)
    for j in np.random.default_rng(0).choice(len(rows), 200, replace=False):
        layer.add(int(j), spam[j], where[j])
    layers = tenant_bayes.Learning(["ham"])
    layers.adopt("t", "spam", layer)
    learned = Learned(layers, MINIMUM, ceiling)
    same = {
        str(other): bool(np.array_equal(with_layer(learned, other, base, where), base))
        for other in ("another-tenant", None)
    }
    return {"rows": len(rows), "identical": same}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scores", type=Path, default=None)
    ap.add_argument("--served", default=SERVED, help="the served scorer's column")
    ap.add_argument("--fold", type=int, default=4)
    ap.add_argument("--tune-fold", type=int, default=0)
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/tenant_learning.json"))
    args = ap.parse_args()
    t0 = time.monotonic()
    table = load_task("spam")
    tune_base, source = global_scores(table, args.tune_fold, args.scores, args.served)
    tuning = {
        (lean, c): run_fold(table, args.tune_fold, tune_base, c, args.draws, lean, args.scores)
        for lean in LEANS
        for c in CEILINGS
    }
    lean, ceiling = _best(tuning)
    base, source = global_scores(table, args.fold, args.scores, args.served)
    report = run_fold(table, args.fold, base, ceiling, args.draws, lean, args.scores)
    other = isolation(table, args.tune_fold, tune_base, ceiling, lean, args.scores)
    result = {
        "global_model": source,
        "fold": list(CORPUS_FOLDS[args.fold]),
        "tune_fold": list(CORPUS_FOLDS[args.tune_fold]),
        "min_corrections": MINIMUM,
        "learning_weight": ceiling,
        "lean": lean,
        "review_at": Config().policy.for_task("spam").review_at,
        "tuning_at_50": {
            f"lean {lean} weight {c}": _brief(t["sizes"]["50"]) for (lean, c), t in tuning.items()
        },
        "reported": {n: _brief(s) for n, s in report["sizes"].items()},
        "reported_rows": {"rows": report["rows"], "ham": report["ham"]},
        "draws": args.draws,
        "other_tenant": other,
        "seconds": round(time.monotonic() - t0, 1),
        "details": report,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    _plot(result, args.out.with_suffix(".png"))
    print(json.dumps({k: v for k, v in result.items() if k != "details"}, indent=2))


def _brief(s: dict[str, Any]) -> dict[str, float]:
    return {k: round(v, 4) for k, v in s.items() if k != "draws"}


def _best(tuning: dict[tuple[float, float], dict[str, Any]]) -> tuple[float, float]:
    """(lean, ceiling) with the lowest ham flag rate at 50 corrections among those that cost
    at most 1 point of spam recall (the issue's targets), then the higher recall, on the
    tuning fold."""
    ok = []
    for key, t in tuning.items():
        s = t["sizes"]["50"]
        if s["global_spam_recall"] - s["layer_spam_recall"] <= 0.01 + 1e-9:  # float dust
            ok.append((s["layer_ham_flag_rate"], -s["layer_spam_recall"], key))
    return min(ok)[2] if ok else (0.0, min(CEILINGS))


def _plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [int(n) for n in result["reported"]]
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, key, title in zip(
        axes, ("ham_flag_rate", "spam_recall"), ("ham flagged at review", "spam recall at review"),
        strict=True,
    ):  # fmt: skip
        for kind, style, label in (
            ("global", "--", "global model alone"),
            ("layer", "-o", "with the tenant's layer"),
        ):
            ys = [result["reported"][str(n)][f"{kind}_{key}"] for n in sizes]
            ax.plot(sizes, ys, style, label=label)
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.set_xlabel("the tenant's corrections")
        ax.set_title(title)
    axes[0].legend()
    fig.suptitle(
        " + ".join(result["fold"])
        + f" (weight {result['learning_weight']}, lean {result['lean']}; {result['draws']} draws)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()

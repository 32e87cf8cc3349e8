"""How to join the e-mail model's two halves, measured on leave-one-source-out folds.

    python benchmarks/studies/archive/email_join.py --scores runs/loso/scores.npz [--out FILE]

``textgate evaluate --task spam --by-source --scores FILE`` keeps every held-out row's
transformer score per fold. This script refits the lexical half on each fold's training rows
(a few seconds; the transformer is not trained again) and scores ways of joining the two on
the transformer's held-out rows: the fixed equal weight the bundle serves, other weights, a
weight that shrinks with the share of the text's n-grams the lexical half has never seen
("familiarity"), and the lexical log-odds clipped. Prints a table of mean F1 / FPR; writes
JSON with every fold.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from textgate import data, evaluate, ngrams
from textgate.train import ngram

KEYS = ("f1", "roc_auc", "fpr@0.5", "fpr@review", "fpr@quarantine", "recall@review")


def familiarity(texts: list[str], idf: np.ndarray) -> np.ndarray:
    """Share of each text's character n-gram occurrences inside the vocabulary."""
    out = np.empty(len(texts))
    for i, text in enumerate(texts):
        counts = ngrams.grams(text)
        idx = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        n = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        char = idx >= ngrams.BUCKETS
        total = n[char].sum()
        out[i] = float(n[char][idf[idx[char]] > 0].sum() / total) if total else 0.0
    return out


def join(t: np.ndarray, z: np.ndarray, w: np.ndarray | float) -> np.ndarray:
    """P(not ham) with not-ham log-odds (1 - w)·z_t + w·z (ngrams.adjust on 2 labels)."""
    eps = 1e-7
    t = np.clip(t, eps, 1 - eps)
    zt = np.log(t / (1 - t))
    mixed = (1 - np.asarray(w)) * zt + np.asarray(w) * z
    return 1.0 / (1.0 + np.exp(-mixed))


def variants(t: np.ndarray, z: np.ndarray, fam: np.ndarray) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {"transformer": t, "ngrams": 1 / (1 + np.exp(-z))}
    for w in (0.3, 0.5, 0.7):
        out[f"w{w}"] = join(t, z, w)
    for lo, hi in ((0.5, 0.9), (0.6, 0.9), (0.7, 0.95), (0.8, 1.0)):
        gate = np.clip((fam - lo) / (hi - lo), 0.0, 1.0)
        out[f"w0.5·fam[{lo},{hi}]"] = join(t, z, 0.5 * gate)
    for k in (2.0, 4.0):
        out[f"w0.5·clip{k}"] = join(t, np.clip(z, -k, k), 0.5)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scores", type=Path, required=True)
    ap.add_argument("--c", default="10", help="comma-separated C values of the lexical half")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    table = data.load_task("spam")
    y = evaluate.positives(table)
    groups = np.array(table.groups)
    saved = np.load(args.scores)
    report: dict[str, Any] = {"folds": []}
    for k, held in enumerate(evaluate.folds(table)):
        few = saved[f"fold{k}/transformer/rows"]
        t = saved[f"fold{k}/transformer/score"]
        train_idx = np.flatnonzero(~np.isin(groups, held))
        fold: dict[str, Any] = {"held_out": list(held), "variants": {}}
        train_texts = [table.texts[i] for i in train_idx]
        test_texts = [table.texts[i] for i in few]
        for c in (float(v) for v in args.c.split(",")):
            # the served fit (a fold's featurizing repeats per C: seconds, not worth a cache)
            model, _ = ngram.fit(train_texts, y[train_idx], negative=0, recipe=ngram.Recipe(c=c))
            z, fam = model.scores(test_texts), familiarity(test_texts, model.idf)
            fold.setdefault("familiarity", {})[f"C{c:g}"] = {
                "ham": float(fam[~y[few]].mean()),
                "not_ham": float(fam[y[few]].mean()),
            }
            for name, s in variants(t, z, fam).items():
                rep = evaluate.binary_report(y[few], s)
                fold["variants"][f"C{c:g} {name}"] = {key: rep[key] for key in KEYS}
        print(k, held, {n: round(v["f1"], 3) for n, v in fold["variants"].items()}, flush=True)
        report["folds"].append(fold)
    names = report["folds"][0]["variants"].keys()
    report["mean"] = {
        n: {key: float(np.mean([f["variants"][n][key] for f in report["folds"]])) for key in KEYS}
        for n in names
    }
    print(f"{'variant':34} {'F1':>6} {'AUC':>6} {'FPR.5':>6} {'FPRrev':>6} {'FPRq':>6} {'Rrev':>6}")
    for n, m in report["mean"].items():
        print(
            f"{n:34} {m['f1']:6.3f} {m['roc_auc']:6.3f} {m['fpr@0.5']:6.3f} "
            f"{m['fpr@review']:6.3f} {m['fpr@quarantine']:6.3f} {m['recall@review']:6.3f}"
        )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Naive-Bayes-weighted logistic regression (NBSVM's idea) on the served hashed n-grams.

    python benchmarks/studies/archive/ngram_nb.py [--task sentiment-zh] [--out FILE]

Wang & Manning's NBSVM scales each feature by its log-count ratio between the classes
before the linear fit; on sentiment it often beats plain TF-IDF + LR by a point or two.
The scaling folds into the coefficients (score = (w * r) . x), so a win would change only
the fit in ``textgate.train.ngram``, not the featurizer that Triton runs. Each scheme and
C is fitted on the train split and chosen on validation; test is reported only.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from textgate import data, ngrams
from textgate.train import ngram

ROOT = Path(__file__).resolve().parents[3]
FEATURES = {
    "sentiment-zh": ngrams.Features((1, 3), "char", False),  # its served recipe
    "sentiment": ngrams.DEFAULT,
    "spam": ngrams.DEFAULT,
}
SCHEMES: tuple[tuple[str, float | None, bool], ...] = (
    ("plain", None, False),
    ("nb binary a1", 1.0, True),
    ("nb tf-idf a0.1", 0.1, False),
)
SCHEMES += (("nb tf-idf a1", 1.0, False),)
CS = (1.0, 3.0, 10.0, 30.0)


def ratio(x: Any, y: np.ndarray, alpha: float, binary: bool) -> np.ndarray:
    """log((p / |p|1) / (q / |q|1)), p and q the smoothed feature sums of each class."""
    b = x.copy()
    if binary:
        b.data[:] = 1.0
    p = alpha + np.asarray(b[y == 1].sum(axis=0)).ravel()
    q = alpha + np.asarray(b[y == 0].sum(axis=0)).ravel()
    return np.asarray(np.log((p / p.sum()) / (q / q.sum())))


def run(task: str) -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression

    s = data.split(data.load_task(task))
    features = FEATURES[task]
    rows = [ngrams.grams(t, features) for t in s.train.texts]
    df = np.zeros(2 * ngrams.BUCKETS)
    for counts in rows:
        df[np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))] += 1
    idf = np.log((1 + len(rows)) / (1 + df)) + 1.0  # as textgate.train.ngram.fit
    idf[~ngram._vocabulary(df)] = 0.0
    x = ngram._matrix(rows, idf)
    parts = {
        name: ngram._matrix([ngrams.grams(t, features) for t in getattr(s, name).texts], idf)
        for name in ("validation", "test")
    }
    # label 0 is the negative class of every packaged task (ham, negative)
    y = {name: np.asarray(getattr(s, name).label_ids()) != 0 for name in ("train", *parts)}
    out: list[dict[str, Any]] = []
    for name, alpha, binary in SCHEMES:
        r = np.ones(x.shape[1]) if alpha is None else ratio(x, y["train"], alpha, binary)
        r[idf == 0] = 0.0
        for c in CS:
            t0 = time.monotonic()
            clf = LogisticRegression(C=c, max_iter=3000, class_weight="balanced")
            clf.fit(x.multiply(r).tocsr(), y["train"].astype(int))
            w = clf.coef_[0] * r  # folded: serving keeps w . x
            acc = {
                k: round(float(((m @ w + clf.intercept_[0] > 0) == y[k]).mean()), 4)
                for k, m in parts.items()
            }
            out.append({"scheme": name, "C": c, **acc, "seconds": round(time.monotonic() - t0)})
            print(json.dumps(out[-1]), flush=True)
    best = max(out, key=lambda row: row["validation"])
    return {"task": task, "features": features.describe(), "rows": out, "chosen": best}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="sentiment-zh", choices=sorted(FEATURES))
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    result = run(args.task)
    out = args.out or ROOT / f"benchmarks/results/ngram_nb_{args.task}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"chosen on validation: {result['chosen']}\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

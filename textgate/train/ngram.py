"""Fitting the lexical half (``textgate.ngrams``): idf from the training rows, then a
class-balanced logistic regression, as the TF-IDF baseline of ``textgate.evaluate`` does but
on the hashed features that serving computes."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from textgate import ngrams
from textgate.errors import DependencyError

# Logistic regression's inverse regularization, as the TF-IDF baseline (evaluate.tfidf_lr).
C = 10.0
# The lexical score's share of the not-ham log-odds. Equal weight, not fitted: on the test
# split (in-corpus) the lexical model alone is the stronger one, across held-out sources the
# transformer is (docs/email-model.md), so a weight fitted in-corpus would over-trust it.
WEIGHT = 0.5
MIN_DF = 2  # as the TF-IDF baseline's vectorizers
MAX_FEATURES = 200_000  # per block, as the baseline's


@dataclass(frozen=True)
class Recipe:
    """What one task's lexical half is fitted with: its featurizer and its regularization
    (``TaskDefaults.ngram_recipe``); the defaults are the e-mail model's."""

    features: ngrams.Features = ngrams.DEFAULT
    c: float = C  # logistic regression's C
    weight: float = WEIGHT  # the lexical score's share of the not-negative log-odds


DEFAULT_RECIPE = Recipe()


def _vocabulary(df: np.ndarray) -> np.ndarray:
    """Buckets seen in MIN_DF rows or more, at most MAX_FEATURES per block, most frequent
    first: rare n-grams are one mailbox's names and templates, which held-out sources do
    not share (with all buckets, leave-one-source-out F1 fell ~0.02 below the TF-IDF
    baseline that keeps 200k per block)."""
    keep = df >= MIN_DF
    for start in (0, ngrams.BUCKETS):
        block = slice(start, start + ngrams.BUCKETS)
        if keep[block].sum() > MAX_FEATURES:
            cut = np.sort(df[block][keep[block]])[-MAX_FEATURES]
            keep[block] &= df[block] >= cut
    return keep


def _matrix(rows: Sequence[Any], idf: np.ndarray) -> Any:
    from scipy import sparse

    indptr, indices, values = [0], [], []
    for counts in rows:
        idx, vals = ngrams.weighted(counts, idf)
        indices.append(idx)
        values.append(vals)
        indptr.append(indptr[-1] + len(idx))
    return sparse.csr_matrix(
        (np.concatenate(values), np.concatenate(indices), np.array(indptr)),
        shape=(len(rows), 2 * ngrams.BUCKETS),
    )


def fit(
    texts: Sequence[str],
    positive: np.ndarray,
    *,
    negative: int,
    recipe: Recipe = DEFAULT_RECIPE,
) -> tuple[ngrams.NgramModel, dict[str, Any]]:
    """The fitted model and what to record about the fit (rows, seconds)."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError as exc:
        raise DependencyError(
            "fitting the n-gram model needs scikit-learn", hint="pip install 'textgate[train]'"
        ) from exc
    t0 = time.monotonic()
    features = recipe.features.checked()
    rows = [ngrams.grams(t, features) for t in texts]
    df = np.zeros(2 * ngrams.BUCKETS)
    for counts in rows:
        df[np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))] += 1
    idf = np.log((1 + len(rows)) / (1 + df)) + 1.0  # scikit-learn's smoothed idf
    idf[~_vocabulary(df)] = 0.0  # a bucket outside the vocabulary never counts
    clf = LogisticRegression(C=recipe.c, max_iter=2000, class_weight="balanced")
    clf.fit(_matrix(rows, idf), np.asarray(positive, dtype=int))
    intercept = float(clf.intercept_[0])
    model = ngrams.NgramModel(idf, clf.coef_[0], intercept, negative, recipe.weight, features)
    info = {
        "rows": len(rows),
        "C": recipe.c,
        "min_df": MIN_DF,
        "max_features": MAX_FEATURES,
        "vocabulary": int((idf > 0).sum()),
        "seconds": round(time.monotonic() - t0, 1),
    }
    return model, info

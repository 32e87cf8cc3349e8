"""The models a fold scores, each fitted on the fold's training rows alone: the
fine-tuned transformer, the served n-gram half and their join, and scikit-learn's baselines
(TF-IDF + logistic regression, multinomial naive Bayes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textgate import data
from textgate.errors import DependencyError


@dataclass(frozen=True, kw_only=True)
class FoldOptions:
    """Budget of one fold's transformer: rows per group and minutes of training."""

    per_group: int = 300  # training rows kept per source group (balanced by group)
    test_per_group: int = 400  # held-out rows scored per group (the transformer is slow)
    minutes: float = 3.0
    epochs: int = 1
    seed: int = 42
    base: Path | None = None  # a checkpoint to fine-tune instead of the packaged MiniLM


def _sklearn() -> Any:
    try:
        import sklearn  # noqa: F401
    except ImportError as exc:
        raise DependencyError(
            "the baselines need scikit-learn", hint="pip install 'textgate[train]'"
        ) from exc
    from sklearn import feature_extraction, linear_model, naive_bayes, pipeline

    return feature_extraction.text, linear_model, naive_bayes, pipeline


def tfidf_lr(train_texts: Sequence[str], y: np.ndarray, test_texts: Sequence[str]) -> np.ndarray:
    """Word 1-2-grams + char 3-5-grams, TF-IDF, class-balanced logistic regression."""
    text, linear, _, pipe = _sklearn()
    vec = pipe.make_union(
        text.TfidfVectorizer(ngram_range=(1, 2), min_df=2, max_features=200_000, sublinear_tf=True),
        text.TfidfVectorizer(
            analyzer="char_wb",
            ngram_range=(3, 5),
            min_df=2,
            max_features=200_000,
            sublinear_tf=True,
        ),
    )
    clf = linear.LogisticRegression(C=10, max_iter=2000, class_weight="balanced")
    clf.fit(vec.fit_transform(train_texts), y)
    return np.asarray(clf.predict_proba(vec.transform(test_texts))[:, 1])


def naive_bayes(train_texts: Sequence[str], y: np.ndarray, test_texts: Sequence[str]) -> np.ndarray:
    """Word counts, multinomial naive Bayes: what SpamAssassin's Bayes filter does."""
    text, _, nb, _ = _sklearn()
    vec = text.CountVectorizer()
    clf = nb.MultinomialNB()
    clf.fit(vec.fit_transform(train_texts), y)
    return np.asarray(clf.predict_proba(vec.transform(test_texts))[:, 1])


def ngram_lr(train_texts: Sequence[str], y: np.ndarray, test_texts: Sequence[str]) -> np.ndarray:
    """The lexical half of the served e-mail model (``textgate.ngrams``), fitted on the fold."""
    from textgate.train import ngram

    model, _ = ngram.fit(train_texts, y, negative=0)
    return np.asarray(1.0 / (1.0 + np.exp(-model.scores(list(test_texts)))))


def joined(transformer_score: np.ndarray, ngram_score: np.ndarray) -> np.ndarray:
    """P(not ham) of the served model: the two halves' log-odds mixed as ``ngrams.adjust``."""
    from textgate import ngrams
    from textgate.train import ngram

    eps = 1e-7
    t = np.clip(transformer_score, eps, 1 - eps)
    logits = np.stack([np.log(1 - t), np.log(t)], axis=1)  # [ham, not ham]
    g = np.clip(ngram_score, eps, 1 - eps)
    out = ngrams.adjust(logits, np.log(g / (1 - g)), 0, ngram.WEIGHT)
    return np.asarray(1.0 / (1.0 + np.exp(out[:, 0] - out[:, 1])))


def balanced(table: data.Table, idx: np.ndarray, per_group: int) -> np.ndarray:
    """At most ``per_group`` of the rows ``idx`` from each group (``train.balance_groups``)."""
    from textgate.train import balance_groups

    sub = table.subset(idx.tolist())
    kept = set(balance_groups(sub, per_group).texts)
    return np.array([i for i in idx if table.texts[i] in kept], dtype=np.int64)


def transformer(
    table: data.Table, train_idx: np.ndarray, test_idx: np.ndarray, opts: FoldOptions
) -> tuple[np.ndarray, dict[str, Any]]:
    """Fine-tune the packaged MiniLM on the balanced training rows: P(not ham) of the test,
    and the run's record (steps run of those planned, ``stopped``, seconds)."""
    from textgate import train

    rows = table.subset(train_idx.tolist())
    splits = data.split(rows, (0.9, 0.1, 0.0))
    splits = data.Splits(train=splits.train, validation=splits.validation, test=splits.validation)
    options = train.TrainOptions(
        epochs=opts.epochs,
        max_minutes=opts.minutes,
        seed=opts.seed,
        per_group=opts.per_group,
        progress=False,
    )
    texts = [table.texts[i] for i in test_idx]
    probs, history = train.fit_predict(splits, texts, task="spam", options=options, base=opts.base)
    ham = list(table.label_names).index("ham") if "ham" in table.label_names else 0
    record = {k: v for k, v in history.record().items() if k != "history"}
    return 1.0 - probs[:, ham], record


def combined(
    table: data.Table,
    train_idx: np.ndarray,
    test_idx: np.ndarray,
    halves: tuple[np.ndarray, np.ndarray],
    opts: FoldOptions,
    log: Any = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """P(not ham) of the served scorer: the combiner of transformer, n-grams and symbols,
    fitted inside this fold (its own cross-fit over the fold's training groups, so no
    held-out group reaches its weights), applied to the fold's own transformer and n-gram
    scores ``halves`` of ``test_idx``; and the combiner's record."""
    from textgate import train
    from textgate.train.stacking import cross_fit

    rows = table.subset(balanced(table, train_idx, opts.per_group).tolist())
    # validation as the fold's transformer gets it: a tenth of all its training rows
    held = data.split(table.subset(train_idx.tolist()), (0.9, 0.1, 0.0)).validation
    splits = data.Splits(train=rows, validation=held, test=held)
    part = train.Part(list(rows.texts), rows.label_ids(), rows.symbols, rows.groups)
    options = train.TrainOptions(
        epochs=opts.epochs,
        max_minutes=opts.minutes,
        seed=opts.seed,
        per_group=opts.per_group,
        combiner_folds=2,
        progress=False,
    )
    model, info = cross_fit(
        splits,
        part,
        list(table.label_names),
        options,
        task="spam",
        say=log or (lambda _m: None),
        base=opts.base,
    )
    eps = 1e-7
    content, lexical = (np.clip(h, eps, 1 - eps) for h in halves)
    fired = [table.symbols[i] if table.symbols else () for i in test_idx]
    z = model.z(np.log(content / (1 - content)), np.log(lexical / (1 - lexical)), fired)
    info.pop("_oof", None)
    return np.asarray(1.0 / (1.0 + np.exp(-z))), {**model.describe(), **info}

"""Leave-one-source-out evaluation: the honest estimate of quality on mail from elsewhere.

An in-corpus test split shares mailboxes, senders and templates with training, so it flatters
every model (docs/email-model.md has both kinds of estimate). Each fold instead holds out whole
source groups — an Enron mailbox, a spam feed, TREC's list mail, a honeypot year — trains on
the rest and scores only the held-out groups. For the packaged corpus a fold pairs one ham
group with one spam or phish group, so each fold has both classes and an F1; elsewhere every
group is its own fold and one-label groups report recall (spam) or the false-positive rate
(ham).

    table (texts, labels, groups) ─ folds ─┬─ transformer (fine-tune, short budget per fold)
                                           ├─ n-grams: the hashed TF-IDF + LR the bundle serves
                                           ├─ transformer + n-grams (the served spam model)
                                           ├─ TF-IDF word 1-2 + char 3-5 grams + logistic regr.
                                           └─ multinomial naive Bayes (SpamAssassin's Bayes)
                                 ─ per fold: F1, precision, recall, ROC-AUC, FPR; per group

Binary throughout: positive = any label but the negative one (``ham``), score = 1 - P(ham).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from textgate import data
from textgate.errors import DataError
from textgate.evaluate.report import (
    THRESHOLDS,
    binary_report,
    budget_cut,
    by_group,
    join_seeds,
    load_runs,
    markdown,
    positives,
    summarize,
    worst,
)
from textgate.evaluate.scorers import (
    FoldOptions,
    balanced,
    combined,
    joined,
    naive_bayes,
    ngram_lr,
    tfidf_lr,
    transformer,
)

__all__ = [
    "CORPUS_FOLDS",
    "JOINED",
    "MODELS",
    "THRESHOLDS",
    "FoldOptions",
    "balanced",
    "binary_report",
    "budget_cut",
    "by_group",
    "by_source",
    "combined",
    "folds",
    "join_seeds",
    "joined",
    "load_runs",
    "markdown",
    "naive_bayes",
    "ngram_lr",
    "positives",
    "summarize",
    "tfidf_lr",
    "transformer",
    "worst",
]

# Ham group + spam/phish group held out together; the pairs mix eras and genres on purpose.
CORPUS_FOLDS: tuple[tuple[str, ...], ...] = (
    ("enron-raw/farmer-d", "enron-spam-pre/GP"),
    ("enron-raw/lokay-m", "enron-spam-pre/BG"),
    ("enron-raw/williams-w3", "phishing-pot/2019-2023"),
    ("enron-spam-pre/kitchen-l", "phishing-pot/2024"),
    ("trec07p/ham-list", "phishing-pot/2025-2026"),
    ("trec07p/ham-other", "trec07p/spam-other"),
)
MODELS = ("transformer", "ngrams", "transformer+ngrams", "combined", "tfidf-lr", "naive-bayes")
JOINED = "transformer+ngrams"  # scored on the transformer's rows from both halves' scores
# the served spam scorer: transformer + n-grams + structure symbols, its combiner refit
# inside each fold (nested cross-fit: two more trainings a fold)
COMBINED = "combined"


def folds(table: data.Table, only: Sequence[str] = ()) -> list[tuple[str, ...]]:
    """The held-out group sets: the corpus pairs when all exist, else one group each.

    ``only``: keep the folds that hold out one of these groups, so that one weak fold can be
    rerun (and its errors read) in minutes instead of the whole run's most of an hour."""
    if not table.groups:
        raise DataError(
            "the data has no source groups to hold out",
            hint="use the packaged e-mail corpus or mail in folders (label/source/...)",
        )
    present = set(table.groups)
    unknown = sorted(set(only) - present)
    if unknown:
        raise DataError(
            f"no source group {', '.join(unknown)} in the data",
            hint=f"groups: {', '.join(sorted(present))}",
        )
    if all(set(pair) <= present for pair in CORPUS_FOLDS):
        every = [tuple(p) for p in CORPUS_FOLDS]
    else:
        every = [(g,) for g in sorted(present)]
    return [f for f in every if not only or set(f) & set(only)]


# --- the run ---------------------------------------------------------------------------------


def by_source(
    table: data.Table,
    *,
    models: Sequence[str] = MODELS,
    options: FoldOptions | None = None,
    log: Callable[[str], None] | None = None,
    scores_out: dict[str, np.ndarray] | None = None,
    only: Sequence[str] = (),
) -> dict[str, Any]:
    """Every fold, every model: the report ``textgate evaluate --by-source`` writes.

    ``scores_out``, when given, receives every scored row: ``fold<k>/<model>/rows`` (indices
    into ``table``) and ``.../score`` (P(not ham)), so that another way of joining the halves
    can be measured on the same folds without training the transformer again. ``only``:
    just the folds that hold out one of these groups (``folds``); the summary then averages
    those folds alone, and the report says so under ``only``."""
    opts = options or FoldOptions()
    say = log or (lambda _m: None)
    unknown = sorted(set(models) - set(MODELS))
    if unknown:
        raise DataError(f"unknown model(s) {', '.join(unknown)}", hint=f"use {', '.join(MODELS)}")
    groups = np.array(table.groups)
    y = positives(table)
    results: list[dict[str, Any]] = []
    for k, held in enumerate(folds(table, only)):
        test_mask = np.isin(groups, held)
        train_idx, test_all = np.flatnonzero(~test_mask), np.flatnonzero(test_mask)
        if len(set(y[train_idx])) < 2:
            say(f"fold {' + '.join(held)}: training rows hold one class only; skipped")
            continue
        fold: dict[str, Any] = {"held_out": list(held), "models": {}}
        scores: dict[str, np.ndarray] = {}  # name -> score over test_all (NaN: not scored)
        few = balanced(table, test_all, opts.test_per_group)
        for name in _order(models):
            t0 = time.monotonic()
            if name == "transformer":
                score = _trained(fold, held, table, train_idx, few, opts, say)
                test_idx = few
            elif name == COMBINED:
                halves = (scores["transformer"][few], scores["ngrams"][few])
                score, fold["combiner"] = combined(table, train_idx, few, halves, opts, say)
                test_idx = few
            else:
                test_idx, score = _score(name, table, y, train_idx, test_all, few, scores)
            full = np.full(len(table.texts), np.nan)
            full[test_idx] = score
            scores[name] = full
            if scores_out is not None:
                scores_out[f"fold{k}/{name}/rows"] = test_idx
                scores_out[f"fold{k}/{name}/score"] = score
            if name not in models:
                continue
            report = binary_report(y[test_idx], score)
            report["groups"] = by_group(table, test_idx, score)
            report["worst"] = worst(table, test_idx, score)
            report["seconds"] = round(time.monotonic() - t0, 1)
            fold["models"][name] = report
            say(f"fold {' + '.join(held)}: {name} F1 {report['f1']:.4f} ({report['seconds']}s)")
        results.append(fold)
    used = {k: str(v) if isinstance(v, Path) else v for k, v in vars(opts).items()}
    report = {"folds": results, "summary": summarize(results, models), "options": used}
    cut = [" + ".join(f["held_out"]) for f in results if budget_cut(f)]
    if any("training" in f for f in results):
        report["budget_cut"] = cut
    if only:
        report["only"] = sorted(only)
    return report


def _trained(
    fold: dict[str, Any],
    held: Sequence[str],
    table: data.Table,
    train_idx: np.ndarray,
    few: np.ndarray,
    opts: FoldOptions,
    say: Callable[[str], None],
) -> np.ndarray:
    """The fold's transformer scores; its run is kept under ``training``, and a run the
    budget cut is said at once: its F1 describes a shorter training than the options."""
    score, record = transformer(table, train_idx, few, opts)
    fold["training"] = record
    if budget_cut(fold):
        say(
            f"fold {' + '.join(held)}: the {opts.minutes:g}-minute budget stopped training after "
            f"{record['steps_run']} of {record['steps_planned']} steps; this fold's transformer "
            "is not the model the options describe (raise --minutes)"
        )
    return score


def _order(models: Sequence[str]) -> list[str]:
    """The models to run, the joined ones' halves first (run even when not reported)."""
    last = [m for m in (JOINED, COMBINED) if m in models]
    if not last:
        return list(models)
    need = [m for m in ("transformer", "ngrams") if m not in models]
    return need + [m for m in models if m not in last] + last


def _score(
    name: str,
    table: data.Table,
    y: np.ndarray,
    train_idx: np.ndarray,
    test_all: np.ndarray,
    few: np.ndarray,
    scores: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(rows scored, their P(not ham)): the joined model on ``few``, the others on all."""
    if name == JOINED:
        return few, joined(scores["transformer"][few], scores["ngrams"][few])
    fn = {"ngrams": ngram_lr, "tfidf-lr": tfidf_lr, "naive-bayes": naive_bayes}[name]
    texts = [table.texts[i] for i in train_idx]
    return test_all, fn(texts, y[train_idx], [table.texts[i] for i in test_all])

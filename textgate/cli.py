"""The ``textgate`` command: one entry point, one subcommand per capability.

Errors from the exception tree become one message and one exit code each, mapped in
``EXIT_CODES``; nothing a user can cause ends in a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from textgate import errors

console = Console(stderr=True)
out = Console()

# One table: exception class -> exit code. The most specific class wins.
EXIT_CODES: dict[type[errors.TextgateError], int] = {
    errors.ConfigError: 2,
    errors.DataError: 3,
    errors.SourceError: 3,
    errors.TrainError: 4,
    errors.ExportError: 5,
    errors.ParityError: 5,
    errors.BundleError: 6,
    errors.RepositoryError: 7,
    errors.TritonError: 8,
    errors.DependencyError: 9,
    errors.OutboxError: 10,
    errors.InputError: 11,
    errors.Overloaded: 12,
    errors.ReleaseError: 13,
    errors.FeedbackError: 14,
    errors.TextgateError: 1,
}


def exit_code(exc: errors.TextgateError) -> int:
    for cls in type(exc).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]  # type: ignore[index]
    return 1


Handler = Callable[[argparse.Namespace], int]


def _print_json(data: Any) -> None:
    out.print_json(json.dumps(data, default=str))


# --- data -----------------------------------------------------------------------------


def _add_data(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "data",
        help="load, clean and split a data set; print its report",
        description="Load a packaged corpus or a user file, clean and split it, print the "
        "report (rows kept, skipped by reason, duplicates, conflicts, split sizes, data hash).",
        epilog="example: textgate data --task spam\n"
        "         textgate data --task reviews --data reviews.csv --text-column body "
        "--label-column stars --labels neg,pos",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _data_options(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_run_data)


def _data_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", required=True, help="spam, sentiment, sentiment-zh or your own name")
    p.add_argument(
        "--data",
        type=Path,
        help="CSV/TSV/JSONL file, or mail: .eml folder, mbox, Maildir, tar (default: packaged)",
    )
    p.add_argument("--text-column", default="text", help="column holding the text")
    p.add_argument("--label-column", default="label", help="column holding the label")
    p.add_argument("--labels", help="declared label set, comma-separated, in class-id order")
    p.add_argument("--strict", action="store_true", help="any skipped row is an error")
    _mail_options(p)


def _mail_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--label-map",
        type=Path,
        help="CSV 'file,label' for mail whose labels are not folder names (mbox: file#index)",
    )
    p.add_argument(
        "--exclude-source",
        action="append",
        default=[],
        metavar="SOURCE",
        help="leave a source of the packaged e-mail corpus out (e.g. phishing-pot, CC BY-NC)",
    )


def _load_from_args(args: argparse.Namespace) -> Any:
    from textgate import data

    labels = tuple(s.strip() for s in args.labels.split(",")) if args.labels else None
    return data.load_task(
        args.task,
        data=args.data,
        text_column=args.text_column,
        label_column=args.label_column,
        labels=labels,
        strict=args.strict,
        label_map=args.label_map,
        exclude_sources=tuple(args.exclude_source),
    )


def _run_data(args: argparse.Namespace) -> int:
    from textgate import data

    table = _load_from_args(args)
    splits = data.split(table)
    summary = data.summary(table, splits)
    if args.json:
        _print_json(summary)
    else:
        data.print_summary(summary, out)
    return 0


# --- evaluate ---------------------------------------------------------------------------


def _add_evaluate(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "evaluate",
        help="leave-one-source-out: train without a source, score it; beside TF-IDF and Bayes",
        description="Hold out whole source groups (an Enron mailbox, a spam feed, TREC's list "
        "mail, a honeypot year), train on the rest, score only the held-out mail: the "
        "estimate of quality on mail from elsewhere. The transformer gets a short budget "
        "per fold; TF-IDF + logistic regression and naive Bayes run on the same folds.",
        epilog="example: textgate evaluate --task spam --by-source -o reports/by-source.json\n"
        "         textgate evaluate --task spam --by-source --models tfidf-lr,naive-bayes",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _data_options(p)
    p.add_argument("--by-source", action="store_true", required=True, help="hold out sources")
    p.add_argument("--models", default="transformer,tfidf-lr,naive-bayes", help="comma-separated")
    p.add_argument("--per-group", type=int, default=300, help="transformer training rows a group")
    p.add_argument("--test-per-group", type=int, default=400, help="transformer test rows a group")
    p.add_argument("--minutes", type=float, default=3.0, help="transformer budget per fold")
    p.add_argument("--base", type=Path, help="checkpoint to fine-tune (default: packaged MiniLM)")
    p.add_argument("-o", "--output", type=Path, help="write the report as JSON (and .md beside)")
    p.set_defaults(handler=_run_evaluate)


def _run_evaluate(args: argparse.Namespace) -> int:
    from textgate import evaluate

    table = _load_from_args(args)
    options = evaluate.FoldOptions(
        per_group=args.per_group,
        test_per_group=args.test_per_group,
        minutes=args.minutes,
        base=args.base,
    )
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    report = evaluate.by_source(table, models=models, options=options, log=console.print)
    table_md = evaluate.markdown(report)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        args.output.with_suffix(".md").write_text(table_md, encoding="utf-8")
    out.print(table_md, highlight=False, markup=False, soft_wrap=True)
    return 0


# --- train ----------------------------------------------------------------------------


def _add_train(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "train",
        help="fine-tune a transformer classifier; write a checkpoint with test metrics",
        description="Fine-tune the packaged all-MiniLM-L6-v2 (or a local Hugging Face "
        "BERT/DistilBERT/RoBERTa checkpoint) on a task's data. Writes the checkpoint, "
        "tokenizer, labels, metrics.json on the test split and plots (confusion matrix; "
        "precision/recall vs threshold for binary tasks). Offline; seeded; early stopping "
        "on validation macro-F1 keeps the best epoch.",
        epilog="example: textgate train --task spam -o checkpoints/spam\n"
        "         textgate train --task sentiment --max-minutes 15 -o checkpoints/sentiment\n"
        "         textgate train --task reviews --data reviews.csv --labels neg,pos "
        "--base my-distilbert/ -o checkpoints/reviews",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _data_options(p)
    p.add_argument("--base", type=Path, help="base checkpoint directory (default: packaged MiniLM)")
    p.add_argument("-o", "--output", type=Path, required=True, help="checkpoint directory")
    p.add_argument("--epochs", type=int, help="maximum epochs (default: per task)")
    p.add_argument("--batch-size", type=int, help="training batch size (default: per task)")
    p.add_argument("--lr", type=float, help="peak learning rate (default: per task)")
    p.add_argument("--max-length", type=int, help="tokens per text (default: per task)")
    p.add_argument("--seed", type=int, default=42, help="seed for everything random")
    p.add_argument("--limit", type=int, help="use only this many rows in all (quick runs)")
    p.add_argument("--patience", type=int, default=2, help="epochs without improvement")
    p.add_argument("--max-minutes", type=float, help="time budget; keeps the best epoch")
    p.add_argument(
        "--class-weights",
        choices=["balanced", "sqrt", "none"],
        help="loss weights against class imbalance (default: per task)",
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
        seed=args.seed,
        limit=args.limit,
        patience=args.patience,
        max_minutes=args.max_minutes,
        class_weights=args.class_weights,
        force=args.force,
        progress=not args.no_progress,
    )
    # Check options and paths before the (slow) data load and model load.
    train.check_output(args.output, force=args.force)
    train.resolve_base(args.base)
    table = _load_from_args(args)
    if args.feedback is not None:
        table = _fold_feedback(table, args)
    result = train.train(
        table, args.base, args.output, task=args.task, options=options, log=console.print
    )
    if args.json:
        _print_json(result)
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


# --- export / verify ------------------------------------------------------------------


def _add_export(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "export",
        help="export a checkpoint to a gated ONNX bundle (fp32, fused fp32, fp16, int8)",
        description="Export a textgate or Hugging Face sequence-classification checkpoint "
        "to ONNX, check it against PyTorch on 500+ texts (max |Δp| <= 1e-4, same arg-max) "
        "in a child process, lock the tokenizer, build the serving variants and gate each "
        "against fp32 on the test split. Writes the bundle and its manifest.json (SHA-256 "
        "of every file). A failed parity gate fails the command; a variant that fails its "
        "gate is kept, marked 'rejected', and never served by default.",
        epilog="example: textgate export checkpoints/spam -o bundles/spam\n"
        "         textgate export my-distilbert/ -o bundles/reviews --variants int8 "
        "--max-f1-drop 0.01",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("checkpoint", type=Path, help="checkpoint directory")
    p.add_argument("-o", "--output", type=Path, required=True, help="bundle directory")
    p.add_argument("--max-f1-drop", default="0.005", help="largest F1 loss a variant may cost")
    p.add_argument("--min-agreement", default="0.995", help="smallest arg-max agreement with fp32")
    p.add_argument("--parity-n", default="500", help="texts in the parity check (>= 500)")
    p.add_argument("--opset", default="17", help="ONNX opset (>= 17)")
    p.add_argument(
        "--variants", default="fp32-opt,fp16,int8", help="comma-separated variants besides fp32"
    )
    p.add_argument("--force", action="store_true", help="replace a previous bundle at -o")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    p.set_defaults(handler=_run_export)


def _number(args: argparse.Namespace, name: str, kind: type[float] | type[int]) -> Any:
    raw = getattr(args, name)
    try:
        return kind(raw)
    except ValueError:
        flag = "--" + name.replace("_", "-")
        raise errors.ConfigError(
            name,
            f"{flag} must be a number, got {raw!r}",
            hint=f"see `textgate export --help` for {flag}",
        ) from None


def _run_export(args: argparse.Namespace) -> int:
    from textgate.export import export_bundle

    manifest = export_bundle(
        args.checkpoint,
        args.output,
        max_f1_drop=_number(args, "max_f1_drop", float),
        min_agreement=_number(args, "min_agreement", float),
        parity_n=_number(args, "parity_n", int),
        opset=_number(args, "opset", int),
        variants=tuple(v.strip() for v in args.variants.split(",") if v.strip()),
        overwrite=args.force,
        console=console,
    )
    if args.json:
        _print_json(manifest)
    else:
        _print_bundle(args.output, manifest)
    return 0


def _add_verify(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "verify",
        help="recompute every SHA-256 of a bundle; fail naming any bad file",
        description="Check a bundle against its manifest.json: every file's SHA-256 and "
        "size, no missing and no extra files, the required manifest keys. Prints the files "
        "and the variant table; exits non-zero naming the first bad file.",
        epilog="example: textgate verify bundles/spam",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("bundle", type=Path, help="bundle directory")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    p.set_defaults(handler=_run_verify)


def _run_verify(args: argparse.Namespace) -> int:
    from textgate import bundle

    manifest = bundle.verify(args.bundle)
    if args.json:
        _print_json(manifest)
    else:
        _print_bundle(args.bundle, manifest)
    return 0


def _print_bundle(path: Path, manifest: dict[str, Any]) -> None:
    from rich.table import Table

    files = Table(title=f"{path}: {len(manifest['files'])} files, all hashes match")
    for col in ("file", "bytes", "sha256"):
        files.add_column(col)
    for name, digest in manifest["files"].items():
        files.add_row(name, str(manifest.get("sizes", {}).get(name, "?")), digest[:16])
    out.print(files)
    variants = Table(title="variants")
    for col in ("variant", "file", "status", "agreement", "F1 Δ", "batch-1 ms", "reason"):
        variants.add_column(col)
    for name, v in manifest["variants"].items():
        colour = {"accepted": "green", "rejected": "red"}.get(v["status"], "yellow")
        variants.add_row(
            name,
            v["file"],
            f"[{colour}]{v['status']}[/]",
            _fmt(v.get("agreement")),
            _fmt(v.get("f1_delta")),
            _fmt((v.get("latency_ms") or {}).get("batch1")),
            escape(v.get("reason") or ""),
        )
    out.print(variants)
    out.print(f"default: {manifest.get('default_variant')}", highlight=False)


def _fmt(x: Any) -> str:
    return "-" if x is None else f"{x:.4f}" if isinstance(x, float) else str(x)


# --- build ----------------------------------------------------------------------------


def _add_build(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "build",
        help="train → export → variants → verify with the defaults, cached by input hash",
        description="Build a task's verified bundle from its packaged corpus (or --data): "
        "fine-tune the packaged MiniLM, export and gate the ONNX variants, verify every "
        "hash, and copy the bundle to -o. The result is cached under the hash of the data, "
        "base model, options and build code; an unchanged build takes seconds.",
        epilog="example: textgate build spam -o artifacts/spam\n"
        "         textgate build sentiment -o artifacts/sentiment --max-minutes 15",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("task", help="spam, sentiment, sentiment-zh, or your task with --data")
    p.add_argument("-o", "--output", type=Path, required=True, help="bundle directory")
    p.add_argument(
        "--data",
        type=Path,
        help="CSV/TSV/JSONL file, or mail: .eml folder, mbox, Maildir, tar (default: packaged)",
    )
    p.add_argument("--text-column", default="text", help="column holding the text")
    p.add_argument("--label-column", default="label", help="column holding the label")
    p.add_argument("--labels", help="declared label set, comma-separated, in class-id order")
    p.add_argument("--strict", action="store_true", help="any skipped row is an error")
    _mail_options(p)
    p.add_argument("--max-minutes", type=float, help="training time budget")
    p.add_argument("--seed", type=int, default=42, help="seed for everything random")
    p.add_argument("--rebuild", action="store_true", help="ignore the cache")
    p.add_argument("--force", action="store_true", help="replace a non-bundle directory at -o")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    p.set_defaults(handler=_run_build)


def _run_build(args: argparse.Namespace) -> int:
    from textgate import build, train

    options = train.TrainOptions(max_minutes=args.max_minutes, seed=args.seed)
    args.task = args.task.strip()
    table = _load_from_args(args)
    manifest = build.build(
        args.task,
        args.output,
        table=table,
        train_options=options,
        rebuild=args.rebuild,
        force=args.force,
        log=console.print,
    )
    if args.json:
        _print_json(manifest)
        return 0
    _print_bundle(args.output, manifest)
    test = manifest["metrics"]["test"]
    parity = manifest["parity"]
    out.print(
        f"{manifest['task']}: test accuracy {test['accuracy']:.4f}  F1 {test['f1']:.4f}  "
        f"macro-F1 {test['macro_f1']:.4f}; parity max |Δp| {parity['max_abs_diff']:.2e} "
        f"over {parity['n']} texts, arg-max agreement {parity['argmax_agreement']:.4f}",
        highlight=False,
    )
    _print_operating(args.output, manifest)
    return 0


def _print_operating(bundle_dir: Path, manifest: dict[str, Any]) -> None:
    """A mail model's numbers an operator asks first, and its worst errors to read."""
    op = manifest.get("metrics", {}).get("operating")
    calib = manifest.get("calibration") or {}
    if not op:
        return
    out.print(
        f"calibrated (T={calib.get('temperature', 1.0):.3f}, ECE {calib.get('ece_before', 0):.4f}"
        f" -> {calib.get('ece_after', 0):.4f}): ham flagged at review "
        f"{op['ham_fpr_at_review']:.4f}, at quarantine {op['ham_fpr_at_quarantine']:.4f}; "
        "phishing caught at review "
        f"{op.get('phish_recall_at_review', float('nan')):.4f}",
        highlight=False,
    )
    worst = json.loads((bundle_dir / op["worst_errors"]).read_text(encoding="utf-8"))
    for kind in ("false_alarms", "misses"):
        out.print(f"[bold]worst {kind.replace('_', ' ')}[/] ({op['worst_errors']})")
        for row in worst[kind][:20]:
            out.print(f"  {row['score']:.3f} {row['label']:5} {escape(row['text'][:110])}")


# --- serving: doctor / repo build / serve-triton ----------------------------------------


def _add_doctor(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "doctor",
        help="check that this machine can serve: tritonserver, stub Python, ONNX Runtime, GPU",
        description="Find tritonserver and its Python-backend stub, check that the stub embeds "
        "the Python this venv runs on, start an empty server to read its version, and list "
        "ONNX Runtime's version and execution providers and any GPU. Each failed check "
        "prints its fix.",
        epilog="example: textgate doctor\n         textgate doctor --no-start --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", type=Path, help="textgate YAML config (triton section)")
    p.add_argument("--no-start", action="store_true", help="do not start a server for its version")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.set_defaults(handler=_run_doctor)


def _run_doctor(args: argparse.Namespace) -> int:
    from textgate.triton import diagnose

    cfg = _load_config(args.config)
    checks = diagnose(cfg.triton, start=not args.no_start)
    if args.json:
        _print_json(checks)
    else:
        for c in checks:
            mark = (
                "[green]ok[/]  "
                if c["ok"]
                else "[yellow]--[/]  "
                if c.get("optional")
                else "[red]FAIL[/]"
            )
            out.print(f"{mark} {escape(c['check'])}: {escape(str(c['detail']))}", highlight=False)
            if not c["ok"] and c.get("fix"):
                out.print(f"      [yellow]fix:[/] {escape(c['fix'])}", highlight=False)
    return 0 if all(c["ok"] or c.get("optional") for c in checks) else 1


def _load_config(path: Path | None) -> Any:
    from textgate.config import Config

    return Config.load(path)


def _add_repo(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "repo",
        help="build a Triton model repository from bundles",
        description="Triton model repositories. `repo build` verifies each bundle, then writes "
        "<task> (ensemble), <task>_tokenize, <task>_model and <task>_postprocess with "
        "config.pbtxt files generated through Triton's protobuf schema.",
        epilog="example: textgate repo build artifacts/spam -o model_repository\n"
        "         textgate repo build artifacts/spam -o gpu_repo --target triton-container "
        "--config textgate.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = p.add_subparsers(dest="repo_command", metavar="ACTION", required=True)
    b = actions.add_parser(
        "build",
        help="bundles -> model repository",
        description="Verify the bundles and write a Triton model repository.",
        epilog="example: textgate repo build artifacts/spam artifacts/sentiment -o repo",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    b.add_argument("bundles", nargs="+", type=Path, metavar="BUNDLE")
    b.add_argument("-o", "--out", type=Path, required=True, help="repository directory")
    b.add_argument(
        "--target",
        choices=["embedded", "triton-container"],
        help="embedded: Python backend + ONNX Runtime (the bundled tritonserver); "
        "triton-container: onnxruntime_onnx for NVIDIA's container (default: from config)",
    )
    b.add_argument(
        "--shape-strategy",
        choices=["auto", "bucket", "fixed", "fused"],
        help="default: from config (auto: fused on embedded, bucket on triton-container)",
    )
    b.add_argument("--config", type=Path, help="textgate YAML config (repository section)")
    b.add_argument("--version", type=int, default=1, help="numeric version directory to write")
    b.add_argument("--overwrite", action="store_true", help="replace an existing version")
    b.set_defaults(handler=_run_repo_build)


def _run_repo_build(args: argparse.Namespace) -> int:
    import dataclasses

    from textgate.repository import build

    settings = _load_config(args.config).repository
    overrides = {"target": args.target, "shape_strategy": args.shape_strategy}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    try:
        settings = dataclasses.replace(settings, **overrides)
    except errors.ConfigError as exc:
        raise errors.ConfigError(f"repository.{exc.key}", exc.message, hint=exc.hint) from None
    result = build(args.bundles, args.out, settings, version=args.version, overwrite=args.overwrite)
    for task in result.spec.tasks:
        out.print(
            f"[green]✓[/] {task.task}: variant {task.variant}, buckets "
            f"{list(task.buckets)}, labels {list(task.labels)}",
            highlight=False,
        )
    out.print(
        f"repository {escape(str(result.repository))} ({settings.target}, "
        f"{settings.strategy}): {', '.join(result.models)}",
        highlight=False,
    )
    return 0


def _add_serve_triton(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "serve-triton",
        help="run tritonserver in the foreground on a model repository",
        description="Start tritonserver (the nvidia-pytriton wheel's, or triton.binary / "
        "$TEXTGATE_TRITONSERVER) on REPO in explicit model-control mode, wait until every "
        "model is ready, and serve until Ctrl-C or SIGTERM, which stop it cleanly.",
        epilog="example: textgate serve-triton model_repository\n"
        "         textgate serve-triton repo --http-port 9000 --grpc-port 9001 "
        "--metrics-port 9002",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("repository", type=Path, metavar="REPO")
    p.add_argument("--http-port", type=int, help="default 8000 (0: a free port)")
    p.add_argument("--grpc-port", type=int, help="default 8001")
    p.add_argument("--metrics-port", type=int, help="default 8002")
    p.add_argument("--address", help="bind address (default 127.0.0.1)")
    p.add_argument("--models", help="comma-separated models to load (default: all)")
    p.add_argument("--config", type=Path, help="textgate YAML config (triton section)")
    p.set_defaults(handler=_run_serve_triton)


def _run_serve_triton(args: argparse.Namespace) -> int:
    import dataclasses
    import signal
    import time

    from textgate.triton import TritonServer

    cfg = _load_config(args.config).triton
    overrides = {
        "http_port": args.http_port,
        "grpc_port": args.grpc_port,
        "metrics_port": args.metrics_port,
        "address": args.address,
    }
    cfg = dataclasses.replace(cfg, **{k: v for k, v in overrides.items() if v is not None})
    models = [m.strip() for m in args.models.split(",")] if args.models else None
    server = TritonServer(args.repository, models=models, config=cfg)

    def _interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # SIGTERM stops as cleanly as Ctrl-C

    # Both installed explicitly: a shell starts background jobs with SIGINT ignored.
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.start()
        console.print(f"tritonserver pid {server.pid}, log {server.log_path}", highlight=False)
        server.wait_ready()
        out.print(
            f"serving {', '.join(server.models)}\n  http    {server.http_url}\n"
            f"  grpc    {server.grpc_url}\n  metrics {server.metrics_url}\nCtrl-C stops.",
            highlight=False,
        )
        while True:
            server.check()
            time.sleep(0.5)
    except KeyboardInterrupt:
        console.print("stopping tritonserver ...")
        return 0
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# --- bench / tune -----------------------------------------------------------------------


def _add_bench(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "bench",
        help="load-test Triton, the gateway or any v2-protocol URL; JSON report and plot",
        description="Send a seeded workload (mix: 70 %% under 100 characters, 20 %% 100-500, "
        "10 %% 500-2000, from the packaged corpus; short; long; or your file) to a target. "
        "Load: open loop (Poisson arrivals at --rate; latency from the intended send time), "
        "closed loop (--concurrency users), or a ramp that raises the rate until P99 exceeds "
        "--slo-ms or errors exceed 0.1 %% and reports the last rate that held. Reports "
        "P50/P95/P99/max, throughput, errors by code, server CPU and memory (--bundle or "
        "--pid), and Triton's batch sizes and queue time per model.",
        epilog="example: textgate bench --bundle artifacts/spam --mode ramp --rate 20 "
        "--slo-ms 300 -o bench.json --plot bench.png\n"
        "         textgate bench --target triton --url 127.0.0.1:8001 --model spam "
        "--mode closed --concurrency 32 --duration 30\n"
        "         textgate bench --target gateway --url http://127.0.0.1:8080 --model spam "
        "--mode open --rate 100",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = p.add_argument_group("target")
    where.add_argument(
        "--target",
        choices=["triton", "v2", "gateway", "http"],
        default="triton",
        help="triton: gRPC ensemble; v2: KServe v2 HTTP; gateway: POST /v1/classify/MODEL; "
        "http: POST {'text': ...} to --url",
    )
    where.add_argument("--url", help="target address (not with --bundle)")
    where.add_argument("--model", default="spam", help="ensemble / task name (default spam)")
    where.add_argument("--bundle", type=Path, help="serve this bundle on a private tritonserver")
    where.add_argument("--config", type=Path, help="textgate YAML config for --bundle")
    where.add_argument(
        "--pid",
        action="append",
        default=[],
        metavar="NAME=PID",
        help="also watch this process tree's CPU and memory (repeatable)",
    )
    _workload_options(p)
    how = p.add_argument_group("load")
    how.add_argument("--mode", choices=["open", "closed", "ramp"], default="closed")
    how.add_argument("--rate", type=float, default=50.0, help="open/ramp: requests/s (start)")
    how.add_argument("--concurrency", type=int, default=16, help="closed: users")
    how.add_argument("--duration", type=float, default=10.0, help="seconds per step")
    how.add_argument("--max-requests", type=int, default=50_000, help="cap per step")
    how.add_argument("--slo-ms", type=float, default=300.0, help="ramp: P99 bound")
    how.add_argument("--ramp-factor", type=float, default=1.5, help="ramp: rate multiplier")
    how.add_argument("--ramp-steps", type=int, default=8, help="ramp: most steps")
    p.add_argument("-o", "--output", type=Path, help="write the JSON report here")
    p.add_argument("--plot", type=Path, help="write latency vs offered load (PNG) here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_run_bench)


def _workload_options(p: argparse.ArgumentParser) -> None:
    w = p.add_argument_group("workload")
    w.add_argument(
        "--workload",
        choices=["mix", "short", "long", "mail", "file"],
        default="mix",
        help="mail: raw messages from the e-mail corpus (the gateway gets them as "
        "message/rfc822, other targets their extracted text)",
    )
    w.add_argument("--file", type=Path, help="workload file: one text per line, or JSONL")
    w.add_argument("--n", type=int, default=2000, help="distinct texts (cycled)")
    w.add_argument("--seed", type=int, default=0, help="workload and arrival seed")
    w.add_argument("--task", default="spam", help="packaged corpus the texts come from")


def _bench_plan(args: argparse.Namespace) -> Any:
    from textgate.bench.measurement import Plan

    return Plan(
        mode=args.mode,
        rate=args.rate,
        concurrency=args.concurrency,
        duration_s=args.duration,
        max_requests=args.max_requests,
        slo_p99_ms=args.slo_ms,
        ramp_factor=args.ramp_factor,
        ramp_steps=args.ramp_steps,
        seed=args.seed,
    )


def _run_bench(args: argparse.Namespace) -> int:
    import asyncio
    import contextlib

    from textgate.bench import measurement, report, target, workload

    if (args.bundle is None) == (args.url is None):
        raise errors.ConfigError("url", "give exactly one of --url and --bundle")
    plan = _bench_plan(args)
    work = workload.make(args.workload, args.n, seed=args.seed, task=args.task, file=args.file)
    pids = dict(_pid_arg(s) for s in args.pid)
    with contextlib.ExitStack() as stack:
        if args.bundle is not None:
            from textgate.bench.server import serve

            settings = _load_config(args.config).repository
            served = stack.enter_context(serve(args.bundle, settings))
            url, kind = served.server.grpc_url, "triton"
            pids["triton"] = served.server.pid or 0
            models = served.models
        else:
            url, kind = args.url, args.target
            models = [args.model] if kind == "triton" else []  # statistics need gRPC
        tgt = target.make(kind, url, model=args.model, messages=work.raw_by_text() or None)
        watch = measurement.Watch(pids=pids, triton_url=url if models else None, models=models)
        result = asyncio.run(
            measurement.measure(tgt, work.texts, plan, watch, progress=not args.no_progress)
        )
    result["workload"] = work.describe()
    if args.output:
        report.write_json(result, args.output)
    if args.plot:
        report.plot_load(result["steps"], args.plot, f"{tgt.name}, {work.name}")
    _print_bench(result) if not args.json else _print_json(result)
    return 0


def _pid_arg(text: str) -> tuple[str, int]:
    name, _, pid = text.partition("=")
    if not pid.isdigit():
        raise errors.ConfigError("pid", f"--pid {text!r} is not NAME=PID")
    return name, int(pid)


def _print_bench(result: dict[str, Any]) -> None:
    for s in result["steps"]:
        load = f"{s['offered_rate']:.1f}/s" if s["offered_rate"] else f"c={s['concurrency']}"
        errs = ", ".join(f"{k}: {v}" for k, v in s["errors"].items()) or "none"
        out.print(
            f"{load:>9}  {s['throughput']:7.1f} req/s  P50 {s['p50_ms']:6.1f}  P95 "
            f"{s['p95_ms']:6.1f}  P99 {s['p99_ms']:6.1f}  max {s['max_ms']:6.1f} ms  "
            f"errors {errs}",
            highlight=False,
            soft_wrap=True,
        )
        for model, t in (s.get("triton") or {}).items():
            out.print(
                f"           {model}: mean batch {t['mean_batch']:.1f}, queue "
                f"{t['queue_ms_per_request']:.1f} ms/request",
                highlight=False,
            )
    if result["plan"]["mode"] == "ramp":
        held = result["held_rate"]
        out.print(f"held rate: {'none' if held is None else f'{held:.1f}/s'}", highlight=False)


def _add_tune(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "tune",
        help="sweep queue delay, preferred batch sizes, buckets and instances; write a config",
        description="Serve the bundle with each candidate repository configuration (max "
        "queue delay, preferred batch sizes, bucket lengths, instance count; at most "
        "--max-points), measure P99 at --rate requests/s and the peak throughput of "
        "--concurrency users, and write the best-throughput candidate whose P99 held --slo-ms "
        "as a config file for `textgate repo build --config`.",
        epilog="example: textgate tune artifacts/spam --rate 40 --slo-ms 300 -o tuned.yaml\n"
        "         textgate tune artifacts/spam --delays 0,4000 --instances 1 --max-points 4 "
        "--duration 5 -o tuned.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("bundle", type=Path, help="bundle directory")
    p.add_argument("-o", "--output", type=Path, required=True, help="config file to write")
    p.add_argument("--config", type=Path, help="base textgate YAML config")
    p.add_argument("--rate", type=float, default=40.0, help="load (requests/s) for the SLO check")
    p.add_argument("--concurrency", type=int, default=32, help="users for peak throughput")
    p.add_argument("--slo-ms", type=float, default=300.0, help="P99 bound at --rate")
    p.add_argument("--duration", type=float, default=8.0, help="seconds per measurement")
    p.add_argument("--delays", default="0,2000,8000", help="max queue delays (µs)")
    p.add_argument("--preferred", default="none;8,16", help="preferred sizes sets, ';'-separated")
    p.add_argument(
        "--buckets", default="16,32,64,128,256;32,64,128,256", help="bucket sets, ';'-separated"
    )
    p.add_argument("--instances", default="1,2", help="model instance counts")
    p.add_argument("--max-points", type=int, default=12, help="most candidates to serve")
    p.add_argument("--report", type=Path, help="write every point as JSON here")
    _workload_options(p)
    p.set_defaults(handler=_run_tune)


def _int_sets(text: str) -> tuple[tuple[int, ...], ...]:
    return tuple(
        tuple(int(v) for v in part.split(",") if v.strip()) if part.strip() != "none" else ()
        for part in text.split(";")
    )


def _run_tune(args: argparse.Namespace) -> int:
    import asyncio

    from textgate.bench import report, tune, workload

    try:
        grid = tune.Grid(
            delays_us=_int_sets(args.delays)[0],
            preferred=_int_sets(args.preferred),
            buckets=_int_sets(args.buckets),
            instances=_int_sets(args.instances)[0],
            max_points=args.max_points,
        )
    except ValueError:
        raise errors.ConfigError("tune", "grid values are comma-separated integers") from None
    cfg = _load_config(args.config)
    work = workload.make(args.workload, args.n, seed=args.seed, task=args.task, file=args.file)
    result = asyncio.run(
        tune.sweep(
            args.bundle,
            cfg.repository,
            grid,
            work.texts,
            rate=args.rate,
            concurrency=args.concurrency,
            duration_s=args.duration,
            slo_p99_ms=args.slo_ms,
            triton=cfg.triton,
            log=lambda m: console.print(m, highlight=False, markup=False),
        )
    )
    if args.report:
        report.write_json(result, args.report)
    best = result["best"]
    if best is None:
        raise errors.TextgateError(
            f"no candidate kept P99 within {args.slo_ms:g} ms at {args.rate:g} requests/s",
            hint="lower --rate or raise --slo-ms",
        )
    note = (
        f"textgate tune: best of {len(result['points'])} at {args.rate:g}/s, "
        f"P99 <= {args.slo_ms:g} ms: {best['throughput']:.0f} texts/s peak"
    )
    tune.write_config(tune.chosen_config(cfg.repository, best), args.output, note)
    out.print(f"{note}\n{best['knobs']}\nwrote {args.output}", highlight=False)
    return 0


# --- serve (gateway) --------------------------------------------------------------------


def _add_serve(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "serve",
        help="run the HTTP gateway (embedded Triton with the spam model by default)",
        description="Serve POST /v1/classify/{task} (JSON text(s) or a raw RFC 822 e-mail), "
        "/v1/models, /healthz, /readyz and /metrics. With no --triton (and no "
        "client.endpoints) the repository is built from the bundles (default: the spam "
        "bundle of `textgate build`, trained once and cached) and served by the embedded "
        "tritonserver on free ports. SIGHUP or POST /admin/reload reloads --config; an "
        "invalid config is rejected and the old one stays. Ctrl-C or SIGTERM stop it.",
        epilog="example: textgate serve\n"
        "         textgate serve --config textgate.yaml --port 9000\n"
        "         textgate serve --triton 10.0.0.5:8001,10.0.0.6:8001\n"
        "         curl -s localhost:8080/v1/classify/spam -H 'content-type: message/rfc822' "
        "--data-binary @mail.eml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", type=Path, help="textgate YAML config (reloaded on SIGHUP)")
    p.add_argument("--host", help="bind address (default gateway.host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default gateway.port, 8080; 0: a free one)")
    p.add_argument("--triton", help="Triton gRPC endpoints host:port,...; none: embedded")
    p.add_argument("--spamd-port", type=int, help="spamc/spamd listener (mail.spamd_port)")
    p.add_argument("--milter-port", type=int, help="milter listener (mail.milter_port)")
    p.add_argument(
        "--bundle",
        type=Path,
        action="append",
        default=[],
        help="bundle to serve on the embedded Triton (repeatable; default: the spam bundle)",
    )
    p.set_defaults(handler=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    from textgate.errors import require

    require("fastapi", "serve")
    require("uvicorn", "serve")
    from textgate.gateway import server

    cfg = _with_mail_ports(_load_config(args.config), args.spamd_port, args.milter_port)
    endpoints = [e.strip() for e in (args.triton or "").split(",") if e.strip()]
    host = args.host or cfg.gateway.host
    port = cfg.gateway.port if args.port is None else args.port

    def ready(url: str) -> None:
        out.print(
            f"textgate gateway on {url}\n  try: curl -s {url}/v1/classify/spam "
            "-H 'content-type: application/json' -d '{\"text\": \"WIN a free prize now\"}'",
            highlight=False,
        )

    return server.run(
        cfg,
        config_path=args.config,
        host=host,
        port=port,
        endpoints=endpoints,
        bundles=args.bundle,
        on_ready=ready,
        log=lambda m: console.print(m, highlight=False),
    )


def _with_mail_ports(cfg: Any, spamd: int | None, milter: int | None) -> Any:
    import dataclasses

    ports = {"spamd_port": spamd, "milter_port": milter}
    ports = {k: v for k, v in ports.items() if v is not None}
    return dataclasses.replace(cfg, mail=dataclasses.replace(cfg.mail, **ports)) if ports else cfg


# --- replay -----------------------------------------------------------------------------


def _add_replay(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "replay",
        help="re-run a saved anomalous request and show what changed",
        description="Read a record of the gateway's replay store (gateway.replay_dir: "
        "outputs with NaN or a fast/fp32 disagreement), send its normalized pieces to the "
        "same Triton models again and print the recorded and the new probabilities.",
        epilog="example: textgate replay replay/3f2a...-1767000000.json --triton 127.0.0.1:8001",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("file", type=Path, metavar="FILE")
    p.add_argument(
        "--triton", help="Triton gRPC endpoints host:port,... (default client.endpoints)"
    )
    p.add_argument("--config", type=Path, help="textgate YAML config (client section)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(handler=_run_replay)


def _run_replay(args: argparse.Namespace) -> int:
    import asyncio

    from textgate.gateway import replay

    cfg = _load_config(args.config)
    record = replay.load(args.file)
    endpoints = [e.strip() for e in (args.triton or "").split(",") if e.strip()]
    endpoints = endpoints or list(cfg.client.endpoints)
    if not endpoints:
        raise errors.ConfigError("client.endpoints", "replay needs a Triton", hint="--triton URL")
    report = asyncio.run(replay.rerun(record, endpoints, cfg.client))
    if args.json:
        _print_json(report)
    else:
        for line in replay.format_report(report):
            out.print(line, highlight=False)
    return 0


# --- registry ---------------------------------------------------------------------------

# --- events ---------------------------------------------------------------------------


def _add_events(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "events",
        help="look at the classification events in the outbox",
        description="Every classification writes one event to the on-disk outbox "
        "(events.outbox_path) before its response is sent; with events.kafka configured a "
        "publisher drains it to Kafka. `events tail` reads the outbox (read-only).",
        epilog="example: textgate events tail -n 20\n"
        "         textgate events tail --outbox textgate-events.sqlite3 --follow --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = p.add_subparsers(dest="events_command", metavar="ACTION", required=True)
    t = actions.add_parser(
        "tail",
        help="print the newest events (published or still waiting)",
        description="Print the newest events of the outbox, oldest first; --follow keeps "
        "printing new ones until Ctrl-C.",
        epilog="example: textgate events tail -n 50 --json | jq .action",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    t.add_argument("--outbox", type=Path, help="outbox file (default: events.outbox_path)")
    t.add_argument("--config", type=Path, help="YAML config file")
    t.add_argument("-n", type=int, default=10, metavar="N", help="how many (default 10)")
    t.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    t.add_argument("--json", action="store_true", help="one JSON object per line")
    t.set_defaults(handler=_run_events_tail)


def _run_events_tail(args: argparse.Namespace) -> int:
    import time

    from textgate.gateway.outbox import read_rows

    path = args.outbox or _load_config(args.config).events.outbox_path
    rows = read_rows(path, last=max(0, args.n))
    last_id = _print_events(rows, as_json=args.json)
    while args.follow:
        try:
            time.sleep(0.5)
        except KeyboardInterrupt:
            break
        last_id = max(last_id, _print_events(read_rows(path, after_id=last_id), args.json))
    return 0


def _print_events(rows: Sequence[Any], as_json: bool) -> int:
    """Print rows; returns the last id printed (0 when none)."""
    for row in rows:
        event = json.loads(row.payload)
        if as_json:
            extra = {"published_at": row.published_at, "attempts": row.attempts}
            print(json.dumps(event | extra, ensure_ascii=False), flush=True)
            continue
        state = "published" if row.published_at else "waiting"
        if str(event.get("schema", "")).startswith("textgate.release-event/"):
            line = (
                f"{_iso(event.get('time'))}  {event.get('request_id')}  {event.get('task')}  "
                f"{event.get('op')} v{event.get('version')} (serving v{event.get('serving')})"
                f"  {event.get('reason', '')}  {state}"
            )
            out.print(escape(line), highlight=False, soft_wrap=True)
            continue
        model = f"{event.get('model')}@{event.get('model_version')}/{event.get('variant')}"
        score = float(event.get("score", float("nan")))
        line = (
            f"{_iso(event.get('time'))}  {event.get('request_id')}  {event.get('task')}  "
            f"{model}  {event.get('label')} {score:.4f}  {event.get('action')}  {state}"
        )
        out.print(escape(line), highlight=False, soft_wrap=True)
    return rows[-1].id if rows else 0


def _iso(ts: Any) -> str:
    from datetime import UTC, datetime

    try:
        return datetime.fromtimestamp(float(ts), UTC).isoformat(timespec="milliseconds")
    except (TypeError, ValueError):
        return "?"


# --- release ------------------------------------------------------------------------------


def _add_release(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "release",
        help="model versions: add, list, canary, shadow, compare, promote, rollback, gc",
        description="Versions of a task in a release-managed repository (docs/lifecycle.md). "
        "With --url (or TEXTGATE_ADMIN_URL) a command goes to a running gateway's admin API "
        "(token: --token or TEXTGATE_GATEWAY__ADMIN_TOKEN) and takes effect at once. Without "
        "it the command edits the repository's release state directly (offline); with "
        "--triton HOST:PORT (Triton's HTTP endpoint) it also loads and unloads the models; "
        "a running gateway picks up the new state file within a second.",
        epilog="example: textgate release add repo artifacts/spam-2 --task spam\n"
        "         textgate release canary --url http://127.0.0.1:8080 --task spam --percent 5\n"
        "         textgate release compare --url http://127.0.0.1:8080 --task spam "
        "--data test.jsonl\n"
        "         textgate release promote --repo repo --task spam --force --reason 'hotfix'",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ops = p.add_subparsers(dest="release_command", metavar="OP", required=True)
    add = ops.add_parser("add", help="verify a bundle, add it as the next version, load it")
    add.add_argument("repo", type=Path, help="release-managed model repository (created)")
    add.add_argument("bundle", type=Path, help="bundle directory (textgate export/build)")
    add.add_argument("--task", required=True)
    simple = {
        "list": "versions: hash, metrics, variant, state, load status",
        "canary": "a sticky share of traffic to the candidate",
        "shadow": "copy live traffic to the candidate; answers unaffected",
        "standby": "stop canary/shadow; the candidate stays loaded",
        "compare": "candidate vs serving on shadowed texts (+ --data); the gate",
        "promote": "candidate -> serving (gate passed, or --force --reason)",
        "rollback": "back to the previous serving version",
        "gc": "delete the files of retired versions",
    }
    parsers = {"add": add} | {name: ops.add_parser(name, help=h) for name, h in simple.items()}
    for name, q in parsers.items():
        if name != "add":
            q.add_argument("--repo", type=Path, help="offline: the repository (default: config)")
            q.add_argument("--task", required=name not in ("list", "gc"))
        q.add_argument("--url", help="gateway base URL: use its admin API")
        q.add_argument("--token", help="admin token (default: TEXTGATE_GATEWAY__ADMIN_TOKEN)")
        q.add_argument("--triton", help="offline: Triton HTTP host:port for model control")
        q.add_argument("--config", type=Path, help="YAML config file")
        q.add_argument("--json", action="store_true", help="print JSON")
        q.set_defaults(handler=_run_release)
    parsers["canary"].add_argument("--percent", type=float, required=True)
    parsers["canary"].add_argument("--key", choices=("tenant", "sender", "request_id"))
    parsers["compare"].add_argument("--data", type=Path, help='JSONL {"text", "label"}')
    parsers["compare"].add_argument(
        "--feedback", type=Path, help="feedback store: report accuracy on the corrections too"
    )
    parsers["promote"].add_argument("--force", action="store_true")
    for name in ("promote", "rollback", "standby"):
        parsers[name].add_argument("--reason", default="", help="recorded in the history")


def _run_release(args: argparse.Namespace) -> int:
    import os

    url = args.url or os.environ.get("TEXTGATE_ADMIN_URL")
    result = _release_remote(args, url) if url else _release_offline(args)
    if args.json or args.release_command not in ("list",):
        _print_json(result)
    else:
        _print_versions(result["versions"])
    return 0


def _release_body(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("task", "percent", "key", "force", "reason")
    body = {k: getattr(args, k) for k in keys if getattr(args, k, None) not in (None, "")}
    if args.release_command == "add":
        body["bundle"] = str(args.bundle.resolve())
    if getattr(args, "data", None) is not None:
        body["data"] = str(args.data.resolve())
    return body


def _release_remote(args: argparse.Namespace, url: str) -> Any:
    import os

    import httpx

    token = args.token or os.environ.get("TEXTGATE_GATEWAY__ADMIN_TOKEN", "")
    headers = {"Authorization": f"Bearer {token}"}
    op = args.release_command
    try:
        if op == "list":
            params = {"task": args.task} if args.task else {}
            r = httpx.get(f"{url}/admin/release/versions", params=params, headers=headers)
        else:
            body = _release_body(args)
            r = httpx.post(f"{url}/admin/release/{op}", json=body, headers=headers, timeout=600)
    except httpx.HTTPError as exc:
        raise errors.TextgateError(f"gateway at {url} unreachable: {exc}") from None
    if r.status_code != 200:
        error = r.json().get("error", {}) if "json" in r.headers.get("content-type", "") else {}
        message = error.get("message") or r.text[:300]
        if r.status_code == 409:
            raise errors.ReleaseError(message, hint=error.get("hint"))
        if r.status_code == 422:
            raise errors.BundleError(message, hint=error.get("hint"))
        raise errors.TextgateError(f"admin API {op}: HTTP {r.status_code}: {message}")
    return r.json()


def _release_offline(args: argparse.Namespace) -> Any:
    from textgate import release

    config = _load_config(getattr(args, "config", None))
    repo = args.repo or config.release.repository
    if repo is None:
        raise errors.ConfigError("release.repository", "no repository: pass --repo or --url")
    if args.release_command != "add" and not (Path(repo) / release.STATE_DIR).is_dir():
        raise errors.ReleaseError(
            f"{repo} holds no releases",
            hint="check --repo; `textgate release add REPO BUNDLE --task T` starts one",
        )
    triton = args.triton or config.release.triton_http
    control = release.HttpControl(triton, config.release.triton_api_key) if triton else None
    rel = release.Releases(repo, config.release, repository=config.repository, control=control)
    op = args.release_command
    if op == "add":
        return rel.add(args.bundle, args.task)
    if op == "list":
        return {"versions": rel.list_versions(args.task)}
    if op == "compare":
        if control is None:
            raise errors.ConfigError("release.triton_http", "compare runs the models: --triton")
        infer = release.http_infer(triton)
        return rel.compare(args.task, infer, data=args.data, feedback=args.feedback)
    if op == "gc":
        return {"removed": rel.gc()}
    if op == "canary":
        return rel.canary(args.task, args.percent, args.key)
    if op == "promote":
        return rel.promote(args.task, force=args.force, reason=args.reason)
    if op == "rollback":
        return rel.rollback(args.task, reason=args.reason)
    if op == "standby":
        return rel.standby(args.task, args.reason)
    return rel.shadow(args.task)


def _print_versions(rows: Sequence[dict[str, Any]]) -> None:
    for r in rows:
        f1 = r["metrics"].get("f1")
        out.print(
            f"{r['task']:<12} v{r['version']:<4} {r['state']:<14} {r['load']:<11} "
            f"{r['variant']:<8} f1={_fmt(f1)}  {r['bundle_hash'][:12]}",
            highlight=False,
        )


ADDERS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_data,
    _add_train,
    _add_evaluate,
    _add_export,
    _add_verify,
    _add_build,
    _add_doctor,
    _add_repo,
    _add_serve_triton,
    _add_bench,
    _add_tune,
    _add_events,
    _add_serve,
    _add_replay,
    _add_release,
]  # type: ignore[type-arg]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="textgate",
        description="Text classification as a production service on NVIDIA Triton.",
        epilog="example: textgate build spam -o artifacts/spam",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from textgate import __version__

    parser.add_argument("--version", action="version", version=f"textgate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in ADDERS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except errors.TextgateError as exc:
        console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False)
        if exc.hint:
            console.print(f"[yellow]fix:[/] {escape(exc.hint)}", highlight=False)
        return exit_code(exc)
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""Bundles: ``export`` a checkpoint, ``verify`` a bundle, ``build`` one end to end."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.markup import escape

from textgate import errors
from textgate.commands.common import (
    Subparsers,
    command,
    console,
    data_source_options,
    fmt,
    load_table,
    out,
    per_group_option,
    print_json,
    split_list,
)

# `textgate build`'s exit code when the time budget cut training (EX_TEMPFAIL: a busy box; the
# same build on a quieter one, or --recipe small, succeeds). scripts/build_default.sh reads it.
BUDGET_CUT_EXIT = 75


def register(sub: Subparsers) -> None:
    _add_export(sub)
    _add_verify(sub)
    _add_build(sub)


# --- export / verify ------------------------------------------------------------------


def _add_export(sub: Subparsers) -> None:
    p = command(
        sub,
        "export",
        help="export a checkpoint to a gated ONNX bundle (fp32, fused fp32, fp16, int8)",
        description="Export a textgate or Hugging Face sequence-classification checkpoint "
        "to ONNX, check it against PyTorch on 500+ texts (max |Δp| <= 1e-4, same arg-max) "
        "in a child process, lock the tokenizer, build the serving variants and gate each "
        "against fp32 on the test split. Writes the bundle and its manifest.json (SHA-256 "
        "of every file). A failed parity gate fails the command; a variant that fails its "
        "gate is kept, marked 'rejected', and never served by default.",
        examples=(
            "textgate export checkpoints/spam -o bundles/spam",
            "textgate export my-distilbert/ -o bundles/reviews --variants int8 --max-f1-drop 0.01",
        ),
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
    p.add_argument(
        "--cascade-allow",
        default=None,
        metavar="P",
        help="the confidence cascade: answer allow from the n-gram half alone at or below "
        "this P(not negative) (docs/gateway.md; `textgate build spam` sets the measured one)",
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


def _cascade(args: argparse.Namespace) -> dict[str, Any] | None:
    if args.cascade_allow is None:
        return None
    allow = _number(args, "cascade_allow", float)
    return {"allow_at_or_below": allow, "quarantine_at_or_above": None, "source": "--cascade-allow"}


def _run_export(args: argparse.Namespace) -> int:
    from textgate.export import export_bundle

    manifest = export_bundle(
        args.checkpoint,
        args.output,
        max_f1_drop=_number(args, "max_f1_drop", float),
        min_agreement=_number(args, "min_agreement", float),
        parity_n=_number(args, "parity_n", int),
        opset=_number(args, "opset", int),
        variants=tuple(split_list(args.variants)),
        overwrite=args.force,
        console=console,
        cascade=_cascade(args),
    )
    if args.json:
        print_json(manifest)
    else:
        _print_bundle(args.output, manifest)
    return 0


def _add_verify(sub: Subparsers) -> None:
    p = command(
        sub,
        "verify",
        help="recompute every SHA-256 of a bundle; fail naming any bad file",
        description="Check a bundle against its manifest.json: every file's SHA-256 and "
        "size, no missing and no extra files, the required manifest keys. Prints the files "
        "and the variant table; exits non-zero naming the first bad file.",
        examples=("textgate verify bundles/spam",),
    )
    p.add_argument("bundle", type=Path, help="bundle directory")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    p.set_defaults(handler=_run_verify)


def _run_verify(args: argparse.Namespace) -> int:
    from textgate import bundle

    manifest = bundle.verify(args.bundle)
    if args.json:
        print_json(manifest)
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
            fmt(v.get("agreement")),
            fmt(v.get("f1_delta")),
            fmt((v.get("latency_ms") or {}).get("batch1")),
            escape(v.get("reason") or ""),
        )
    out.print(variants)
    out.print(f"default: {manifest.get('default_variant')}", highlight=False)


# --- build ----------------------------------------------------------------------------


def _add_build(sub: Subparsers) -> None:
    p = command(
        sub,
        "build",
        help="train → export → variants → verify with the defaults, cached by input hash",
        description="Build a task's verified bundle from its packaged corpus (or --data): "
        "fine-tune the packaged MiniLM, export and gate the ONNX variants, verify every "
        "hash, and copy the bundle to -o. The result is cached under the hash of the data, "
        "base model, options and build code; an unchanged build takes seconds. Training is a "
        "fixed number of steps; --max-minutes is a safety net, and a build it cuts is not "
        f"cached, is marked in its manifest and exits {BUDGET_CUT_EXIT}.",
        examples=(
            "textgate build spam -o artifacts/spam",
            "textgate build spam -o artifacts/spam --recipe small",
            "textgate build sentiment -o artifacts/sentiment --max-minutes 15",
        ),
    )
    p.add_argument("task", help="spam, sentiment, sentiment-zh, or your task with --data")
    p.add_argument("-o", "--output", type=Path, required=True, help="bundle directory")
    data_source_options(p)
    p.add_argument(
        "--max-minutes",
        type=float,
        help="training time budget, a safety net (default: per task; spam 60)",
    )
    p.add_argument(
        "--recipe",
        default="full",
        help="full (the default model) or small (spam: 250 rows a source group, half the "
        "steps; what `make demo` falls back to when the budget cut the full one)",
    )
    per_group_option(p)
    p.add_argument("--seed", type=int, default=42, help="seed for everything random")
    p.add_argument("--rebuild", action="store_true", help="ignore the cache")
    p.add_argument("--force", action="store_true", help="replace a non-bundle directory at -o")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    p.set_defaults(handler=_run_build)


def _run_build(args: argparse.Namespace) -> int:
    from textgate import build, train

    options = train.TrainOptions(
        max_minutes=args.max_minutes,
        per_group=args.per_group,
        seed=args.seed,
        recipe=args.recipe.strip(),
    )
    args.task = args.task.strip()
    table = load_table(args)
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
        print_json(manifest)
        return _said_if_cut(args, manifest)
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
    return _said_if_cut(args, manifest)


def _said_if_cut(args: argparse.Namespace, manifest: dict[str, Any]) -> int:
    """0, or BUDGET_CUT_EXIT after a panel no one scrolls past: a cut run is not the model
    the recipe describes, only what this box managed in the time."""
    run = manifest.get("training") or {}
    if not run.get("cut_by_time_budget"):
        return 0
    from rich.panel import Panel

    from textgate import train

    recipe = run.get("recipe", "full")
    fixes = "build again on a quieter machine or with a larger --max-minutes"
    if recipe == "full" and args.task in train.SMALL_RECIPES:
        small = f"textgate build {args.task} --recipe small -o {args.output}"
        fixes += f", or build the smaller fixed recipe: {small}"
    text = (
        f"[bold]The {_minutes(run.get('max_minutes'))} time budget stopped training after "
        f"{run.get('steps_run')} of {run.get('steps_planned')} planned steps[/] "
        f"(recipe {escape(str(recipe))}).\n"
        f"The bundle at {escape(str(args.output))} is a partly trained model, NOT the "
        "default: it was not cached, and its manifest says training.cut_by_time_budget: true."
        f"\n[bold]fix:[/] the steps are fixed, only the time ran out: {escape(fixes)}"
    )
    console.print(
        Panel(
            text,
            title="[bold]TRAINING CUT BY THE TIME BUDGET[/]",
            border_style="bold red",
            style="red",
        )
    )
    return BUDGET_CUT_EXIT


def _minutes(value: Any) -> str:
    return f"{value:g}-minute" if isinstance(value, int | float) else "training"


def _fitted(calib: dict[str, Any]) -> str:
    """The fit beside the served T: a floored fit serves exactly 1.000 with ECE unchanged,
    which otherwise reads as a fit that did not run."""
    fitted, served = calib.get("fitted_temperature"), calib.get("temperature", 1.0)
    if fitted is None or abs(float(fitted) - float(served)) < 5e-4:
        return ""
    return f", fitted {float(fitted):.3f} and floored: it never sharpens"


def _print_operating(bundle_dir: Path, manifest: dict[str, Any]) -> None:
    """A mail model's numbers an operator asks first, and its worst errors to read."""
    op = manifest.get("metrics", {}).get("operating")
    calib = manifest.get("calibration") or {}
    if not op:
        return
    labels = list(manifest.get("labels") or [])
    mail = "ham" in labels
    head = (
        f"calibrated (T={calib.get('temperature', 1.0):.3f}{_fitted(calib)}; ECE "
        f"{calib.get('ece_before', 0):.4f} -> {calib.get('ece_after', 0):.4f})"
    )
    if mail:  # the review/quarantine thresholds are the spam policy's
        head += (
            f": ham flagged at review {op['ham_fpr_at_review']:.4f}, at quarantine "
            f"{op['ham_fpr_at_quarantine']:.4f}; phishing caught at review "
            f"{op.get('phish_recall_at_review', float('nan')):.4f}"
        )
    out.print(head, highlight=False)
    binary = op.get("not_ham")
    if binary:
        auc = binary["roc_auc"]
        negative = "ham" if mail else labels[0]
        positive = labels[-1] if len(labels) == 2 else f"not {negative}"
        view = f"{positive} vs {negative}"
        out.print(
            f"{view} at 0.5: F1 {binary['f1']:.4f}, precision {binary['precision']:.4f},"
            f" recall {binary['recall']:.4f}, ROC-AUC {'n/a' if auc is None else f'{auc:.4f}'}",
            highlight=False,
        )
    worst = json.loads((bundle_dir / op["worst_errors"]).read_text(encoding="utf-8"))
    for kind in ("false_alarms", "misses"):
        out.print(f"[bold]worst {kind.replace('_', ' ')}[/] ({op['worst_errors']})")
        for row in worst[kind][:20]:
            out.print(f"  {row['score']:.3f} {row['label']:5} {escape(row['text'][:110])}")

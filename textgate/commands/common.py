"""What every command module shares: the two consoles, the parser boilerplate, list
splitting, JSON printing, config loading and the data-loading options.

Kept apart from ``textgate.cli`` so that the command modules never import the module that
imports them (``python -m textgate.cli`` would otherwise load ``cli`` twice).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console

console = Console(stderr=True)
out = Console()

Subparsers = argparse._SubParsersAction  # type: ignore[type-arg]


def command(
    sub: Subparsers, name: str, *, help: str, description: str, examples: tuple[str, ...]
) -> argparse.ArgumentParser:
    """One subcommand whose --help ends with its examples, line breaks kept."""
    return sub.add_parser(
        name,
        help=help,
        description=description,
        epilog="example: " + "\n         ".join(examples),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def split_list(text: str | None, sep: str = ",") -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; empty items and None give nothing."""
    return [item.strip() for item in (text or "").split(sep) if item.strip()]


def print_json(data: Any) -> None:
    out.print_json(json.dumps(data, default=str))


def fmt(x: Any) -> str:
    return "-" if x is None else f"{x:.4f}" if isinstance(x, float) else str(x)


def load_config(path: Path | None) -> Any:
    from textgate.config import Config

    return Config.load(path)


# --- data options: data, train, evaluate and build read a data set the same way ----------


def data_source_options(p: argparse.ArgumentParser) -> None:
    """Where the rows come from and how they are read (everything but --task)."""
    p.add_argument(
        "--data",
        type=Path,
        help="CSV/TSV/JSONL file, or mail: .eml folder, mbox, Maildir, tar (default: packaged)",
    )
    p.add_argument("--text-column", default="text", help="column holding the text")
    p.add_argument("--label-column", default="label", help="column holding the label")
    p.add_argument("--labels", help="declared label set, comma-separated, in class-id order")
    p.add_argument("--strict", action="store_true", help="any skipped row is an error")
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


def per_group_option(p: argparse.ArgumentParser) -> None:
    """``--per-group``, as ``train`` and ``build`` share it (``evaluate`` has its own default)."""
    p.add_argument(
        "--per-group",
        type=int,
        help="transformer training rows kept a source group, content-hash chosen "
        "(default: per task)",
    )


def data_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--task", required=True, help="spam, sentiment, sentiment-zh or your own name")
    data_source_options(p)


def load_table(args: argparse.Namespace) -> Any:
    from textgate import data

    return data.load_task(
        args.task,
        data=args.data,
        text_column=args.text_column,
        label_column=args.label_column,
        labels=tuple(split_list(args.labels)) or None,
        strict=args.strict,
        label_map=args.label_map,
        exclude_sources=tuple(args.exclude_source),
    )

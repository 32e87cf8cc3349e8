"""The ``textgate`` command: one entry point, one subcommand per capability.

The subcommands live in ``textgate.commands`` (one module per concern, each with a
``register``); this module builds the parser from them and runs the chosen handler.
Errors from the exception tree become one message and one exit code each, mapped in
``EXIT_CODES``; nothing a user can cause ends in a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from rich.markup import escape

from textgate import commands, errors
from textgate.commands.common import console

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
    errors.ParseWorkerError: 15,
    errors.MailReleaseError: 16,
    errors.TextgateError: 1,
}


def exit_code(exc: errors.TextgateError) -> int:
    for cls in type(exc).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]  # type: ignore[index]
    return 1


Handler = Callable[[argparse.Namespace], int]


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
    for group in commands.GROUPS:
        group.register(sub)
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

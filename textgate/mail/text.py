"""Messages to training rows: the text a model sees of each, normalized as the gateway
serves it."""

from __future__ import annotations

from collections.abc import Iterator

from textgate.errors import InputError
from textgate.mail.containers import MailItem, MailReport
from textgate.mail.leaks import scrub
from textgate.normalize import NormalizeSettings, normalize_email


def model_text(raw: bytes, settings: NormalizeSettings) -> str:
    """What the model sees of a message at serving time: its first piece (head + tail)."""
    return normalize_email(raw, settings).pieces[0]


def model_input(raw: bytes, settings: NormalizeSettings) -> tuple[str, tuple[str, ...]]:
    """``model_text`` and the structure symbols the combiner reads beside it."""
    normalized = normalize_email(raw, settings)
    return normalized.pieces[0], normalized.notes.symbols


def rows(
    items: Iterator[MailItem],
    settings: NormalizeSettings,
    report: MailReport,
    *,
    scrub_leaks: bool = False,
    strict: bool = False,
    symbols: dict[int, tuple[str, ...]] | None = None,
) -> tuple[list[tuple[int, str, str]], dict[int, str]]:
    """(row, text, label) per message, normalized as the gateway does, and row -> group;
    ``symbols``, when given, is filled with row -> the message's structure symbols."""
    out: list[tuple[int, str, str]] = []
    groups: dict[int, str] = {}
    for n, item in enumerate(items, start=1):
        try:
            text, fired = model_input(item.raw, settings)
        except InputError as exc:
            report.skip(f"not classifiable ({exc.message})", item.name, strict)
            continue
        if scrub_leaks:
            text = scrub(text, item.name)
        out.append((n, text, item.label or ""))
        groups[n] = item.group
        if symbols is not None:
            symbols[n] = fired
    return out, groups

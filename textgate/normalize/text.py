"""Plain text: the shared ending every input goes through (controls out, NFC, single
spaces, size limits, pieces), and the JSON ``text`` entry point."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from textgate.errors import EmptyText, InvalidInput, PayloadTooLarge
from textgate.normalize.pieces import split_pieces
from textgate.normalize.settings import CountFn, Normalized, NormalizeNotes, NormalizeSettings
from textgate.normalize.width import fold_width

# C0/C1 controls that str.split() does not treat as whitespace (NUL, BEL, ESC, DEL, ...).
_CONTROLS = re.compile(
    "[" + "".join(chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)) if not chr(c).isspace()) + "]"
)


def normalize_whitespace(text: str, fold: bool = True) -> str:
    """NFC, full-width forms folded (``NormalizeSettings.fold_width``) and single spaces:
    the form textgate de-duplicates, hashes, trains on and scores."""
    nfc = unicodedata.normalize("NFC", text)
    return " ".join((fold_width(nfc) if fold else nfc).split())


def normalize_text(
    text: str, settings: NormalizeSettings, count: CountFn | None = None, *, field: str = "text"
) -> Normalized:
    """Normalize pre-extracted text (a JSON ``text`` field)."""
    if not isinstance(text, str):
        raise InvalidInput("must be a string", field=field, reason="wrong_type")
    if len(text) > settings.max_body_bytes:
        raise too_large("text", len(text), settings.max_body_bytes, "max_body_bytes")
    if has_surrogates(text):
        # A JSON "\\ud800" escape parses into a lone surrogate that no encoder accepts.
        raise InvalidInput("contains an unpaired UTF-16 surrogate", field=field, reason="encoding")
    return finish(text, settings, count, field=field, notes={})


def decode_utf8(raw: bytes, *, field: str = "text") -> str:
    """Strict UTF-8 for request bodies: invalid bytes are the client's error, not ours."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"is not valid UTF-8 (byte {exc.start})", field=field, reason="encoding"
        ) from exc


def finish(
    text: str,
    settings: NormalizeSettings,
    count: CountFn | None,
    *,
    field: str,
    notes: dict[str, Any],
    cut: bool = False,
) -> Normalized:
    """The shared last step. ``cut``: text over ``max_chars`` is cut and noted (a message
    gets a verdict whatever its size within ``max_body_bytes``) rather than refused."""
    cleaned, removed = _CONTROLS.subn("", text)
    normalized = normalize_whitespace(cleaned, settings.fold_width)
    if not normalized:
        raise EmptyText("no text to classify after normalization", field=field, reason="empty")
    if len(normalized) > settings.max_chars:
        if not cut:
            raise too_large("text", len(normalized), settings.max_chars, "max_chars")
        normalized = normalized[: settings.max_chars].rstrip()
        notes = {**notes, "defects": (*notes.get("defects", ()), "text_cut")}
    pieces, truncated = split_pieces(normalized, settings, count or len)
    final = NormalizeNotes(
        **notes,
        truncated=truncated,
        chunks=len(pieces),
        original_chars=len(normalized),
        controls_removed=removed,
    )
    return Normalized(text=normalized, pieces=tuple(pieces), notes=final)


def too_large(what: str, size: int, limit: int, setting: str) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"{what} is {size:,} long, over the limit of {limit:,} ({setting})",
        reason=f"{setting}_exceeded",
        limit=limit,
    )


def has_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False

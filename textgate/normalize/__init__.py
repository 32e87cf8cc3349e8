"""Turn raw e-mail or plain text into the text a model scores, and say what was done.

The one normalization: the gateway runs it on every request and the data pipeline on every
training message, with the same settings (the bundle records them; see ``fingerprint``).

Pure functions: no I/O, no network. Two entry points share one ending, so a raw message
and its pre-extracted text (subject, newline, body) give the same ``Normalized.text``:

    normalize_email(raw: bytes) ─ limits ─ guards ─ MIME walk ─ charset ─ HTML→text ─┐
                                              └─ (tripped or unreadable) best_effort ─┤
    normalize_text(text: str) ───────────────────────────────────────────────────────┴─
        controls out, NFC, full-width folded, single spaces (``textgate.data.normalize``)
        ─ split_long

A message is never refused for being strange: within ``max_body_bytes`` a message whose
structure trips a guard (``textgate.guards``) or cannot be read unambiguously is read by
``best_effort`` (raw body bytes through the charset fallback chain, tags stripped), with
``notes.best_effort`` set and the reasons in ``notes.defects``; the policy's
``malformed_action`` applies to it. Deterministic either way, so training and serving agree.

The remaining refusals are ``InputError``s (the gateway maps them to a 4xx): over a size
limit, nothing to classify, wrong types. Nothing is dropped, replaced or cut without a note
in ``Normalized.notes``.

One room per concern, lower layers first:

    settings   NormalizeSettings and the results (Normalized, NormalizeNotes, CharsetFallback)
    pieces     long text: head + tail or overlapping chunks (split_long)
    width      fold_width: full-width ASCII forms and U+3000 as ASCII
    text       the shared ending, normalize_text, normalize_whitespace, decode_utf8
    charsets   decode_bytes: declared charset, superset, fallback chain
    style      what an inline style hides (Shown, shown)
    html5      HTML5's element tables (block, void, implied ends, table-only, breakout)
    markup     html_to_text, read_html (the shown text, its link domains, how much was hidden)
    sender     the From address (sender_address, sender_of)
    fallback   best_effort: raw bytes when the MIME structure is not trusted
    mime       normalize_email: guards, the MIME walk
    version    NORMALIZER_VERSION, fingerprint, skew (train/serve agreement)
"""

from __future__ import annotations

from textgate.normalize.charsets import decode_bytes
from textgate.normalize.fallback import best_effort
from textgate.normalize.markup import html_to_text, read_html
from textgate.normalize.mime import TEXT_TYPES, normalize_email
from textgate.normalize.pieces import split_long
from textgate.normalize.sender import sender_address, sender_of
from textgate.normalize.settings import (
    CharsetFallback,
    CountFn,
    Normalized,
    NormalizeNotes,
    NormalizeSettings,
)
from textgate.normalize.text import decode_utf8, normalize_text, normalize_whitespace
from textgate.normalize.version import NORMALIZER_VERSION, TEXT_SETTINGS, fingerprint, skew

__all__ = [
    "NORMALIZER_VERSION",
    "TEXT_SETTINGS",
    "TEXT_TYPES",
    "CharsetFallback",
    "CountFn",
    "NormalizeNotes",
    "NormalizeSettings",
    "Normalized",
    "best_effort",
    "decode_bytes",
    "decode_utf8",
    "fingerprint",
    "html_to_text",
    "normalize_email",
    "normalize_text",
    "normalize_whitespace",
    "read_html",
    "sender_address",
    "sender_of",
    "skew",
    "split_long",
]

"""Train/serve agreement: what a bundle records of its normalization, and how serving
settings differ from it."""

from __future__ import annotations

from typing import Any

from textgate.normalize.settings import NormalizeSettings

# Bump whenever a change here can change ``Normalized.text`` or ``pieces`` for some input:
# bundles record it, and the gateway refuses a bundle trained under another version.
NORMALIZER_VERSION = 6  # 6: lone CR line ends, base64 text on the best-effort path, more
# of what a browser shows (HTML5 comment ends, first repeated attribute, !important, table
# parts outside a table, heading and link ends): 15 of the 18,200 corpus messages change
# Settings that shape the text; the rest (size limits) only decide what is accepted.
TEXT_SETTINGS = (
    "long_text",
    "head_chars",
    "tail_chars",
    "chunk_chars",
    "chunk_overlap",
    "max_chunks",
    "keep_link_domains",
    "fold_width",
)


def fingerprint(settings: NormalizeSettings) -> dict[str, Any]:
    """What a bundle records of the normalization it was trained under."""
    return {
        "version": NORMALIZER_VERSION,
        "settings": {key: getattr(settings, key) for key in TEXT_SETTINGS},
    }


def skew(recorded: dict[str, Any], settings: NormalizeSettings) -> list[str]:
    """How ``settings`` differ from a bundle's recorded normalization (empty: they agree)."""
    mine = fingerprint(settings)
    problems = []
    if recorded.get("version") != mine["version"]:
        problems.append(f"normalizer version {recorded.get('version')} != {mine['version']}")
    theirs = recorded.get("settings", {})
    for key, value in mine["settings"].items():
        if key in theirs and theirs[key] != value:
            problems.append(f"{key}: trained with {theirs[key]!r}, serving with {value!r}")
    return problems

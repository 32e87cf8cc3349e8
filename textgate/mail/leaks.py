"""The packaged corpus's label leaks (its SOURCES.md), neutralized in the text a model
learns from: one neutral recipient, and years re-drawn so the era gap teaches nothing."""

from __future__ import annotations

import hashlib
import re

_NEUTRAL_ADDRESS = "recipient@example.com"
_LEAKS = (
    # The honeypot's placeholder, also inside URLs and "phishing@pot=hotmail.com" bounces.
    (re.compile(r"phishing@pot(?:\.[a-z]{2,6})?", re.I), _NEUTRAL_ADDRESS),
    # The TREC mailbox owner, as an address and as a bare name.
    (re.compile(r"ktwarwic@[\w.-]+", re.I), _NEUTRAL_ADDRESS),
    (re.compile(r"\bktwarwic\w*", re.I), "recipient"),  # also "ktwarwicd, take a look"
)
_YEAR = re.compile(r"\b(19[89]\d|20[0-3]\d)\b")
_YEAR_SPAN = (1995, 2030)


def scrub(text: str, key: str) -> str:
    """The text with the corpus's label-leaking strings neutralized (see the module doc).

    Years are re-drawn from a hash of ``key`` and the position, so the same message always
    gets the same years (stable splits and caches) while years carry no label information.
    """
    for pattern, neutral in _LEAKS:
        text = pattern.sub(neutral, text)
    counter = 0

    def redraw(match: re.Match[str]) -> str:
        nonlocal counter
        counter += 1
        digest = hashlib.sha256(f"{key}:{counter}".encode()).digest()
        low, high = _YEAR_SPAN
        return str(low + int.from_bytes(digest[:4], "big") % (high - low))

    return _YEAR.sub(redraw, text)

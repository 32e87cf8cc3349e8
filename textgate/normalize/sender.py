"""The From address: the canary's ``sender`` key, read without ever raising."""

from __future__ import annotations

from email.message import Message
from email.utils import parseaddr

from textgate import guards
from textgate.normalize.text import has_surrogates

_MAX_ADDRESS = 320  # RFC 3696: 64 (local part) + 1 + 255 (domain)


def sender_address(message: Message) -> str | None:
    """The top-level From address, lower-cased: the canary's ``sender`` key.

    Read from the raw header (``parseaddr`` never raises, unlike the policy's parsed
    header on odd input); 8-bit bytes are decoded with replacement so JSON can carry it.
    """
    raw = next((v for k, v in message.raw_items() if k.lower() == "from"), None)
    return None if raw is None else sender_of(str(raw))


def sender_of(value: str) -> str | None:
    """The address in a From header's raw value, lower-cased; None when there is none."""
    value = " ".join(value.split())[: guards.MAX_HEADER]
    if value.count("(") > guards.MAX_COMMENTS:
        # parseaddr recurses once per nested comment (800 deep: RecursionError); comments
        # never hold the address, so drop them in one linear pass first.
        value = _strip_comments(value)
    try:
        addr = parseaddr(value)[1]
    except RecursionError:
        return None
    if has_surrogates(addr):
        addr = addr.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return addr.strip().lower()[:_MAX_ADDRESS] or None


def _strip_comments(value: str) -> str:
    """``value`` without its (possibly nested) parenthesized comments, in one pass."""
    out, depth = [], 0
    for ch in value:
        if ch == "(":
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)

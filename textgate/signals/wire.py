"""How a message's symbols travel to Triton beside its text, in the one string tensor.

    "\\x00" + "LIST_ID IN_REPLY_TO" + "\\x00" + text        (no symbols: the text alone)

Normalization drops every control character, NUL included, so a normalized text never
starts with NUL: a client cannot forge symbols through the text it sends, and Triton's
steps (``textgate_support.unframe``, the other half of this format) strip the frame before
any tokenizer reads the text. The symbols reach only the combiner, never the transformer.
"""

from __future__ import annotations

from collections.abc import Sequence

MARK = "\x00"
MAX_FRAME = 4096  # far above every symbol name joined; a longer "frame" is text


def frame(symbols: Sequence[str], text: str) -> str:
    """``text`` with ``symbols`` in front (the text alone when none fired)."""
    if not symbols:
        return text
    return f"{MARK}{' '.join(symbols)}{MARK}{text}"


def unframe(value: str) -> tuple[tuple[str, ...], str]:
    """(symbols, text) of a framed value; ((), value) for a plain one."""
    if not value.startswith(MARK):
        return (), value
    end = value.find(MARK, 1, MAX_FRAME)
    if end < 0:
        return (), value
    return tuple(value[1:end].split()), value[end + 1 :]

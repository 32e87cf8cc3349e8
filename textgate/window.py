"""The model's window over a long text: its first tokens, or its first and last ones.

A model reads ``max_length`` tokens. By default that is the head of the text (the
tokenizer's own truncation). A task with ``tail_tokens`` > 0 keeps the head and the last
``tail_tokens`` tokens instead, so a review's closing verdict ("总之不推荐", "would not buy
again") reaches the encoder. What that is worth, and the command that measured it:
docs/sentiment-zh.md, "Long reviews: the head and the tail".

Training, export and Triton's tokenize step call these functions; Triton's copy is this very
file, placed beside ``model.py`` (standard library only), so a bundle is served on the tokens
it was trained on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Bound the characters handed to the tokenizer (a multi-megabyte text would otherwise cost
# its whole length): far above what WordPiece/BPE produce per token on real text.
CHARS_PER_TOKEN = 64


def bound(text: str, max_length: int, tail: int) -> str:
    """``text`` cut to what its window can use: the head, or the head and the tail."""
    limit = max_length * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    if tail <= 0:
        return text[:limit]
    keep = limit * tail // max_length
    return f"{text[: limit - keep]} {text[-keep:]}"


def fit(ids: Sequence[int], max_length: int, tail: int) -> list[int]:
    """Token ids (with the special tokens) cut to ``max_length``: the head, then the last
    ``tail`` ids. The first and last ids (``[CLS]``/``[SEP]``, ``<s>``/``</s>``) stay."""
    ids = list(ids)
    if len(ids) <= max_length:
        return ids
    tail = min(max(tail, 1), max_length - 1)  # 0: the head and the closing special id
    return ids[: max_length - tail] + ids[-tail:]


def check(max_length: int, tail: int) -> str | None:
    """Why ``tail`` cannot be a window's tail (None: it can)."""
    if not 0 <= tail <= max_length // 2:
        return f"tail_tokens must be in 0..{max_length // 2} (half of max_length {max_length})"
    return None


def hf_ids(tokenizer: Any, texts: Sequence[str], max_length: int, tail: int) -> list[list[int]]:
    """A ``transformers`` tokenizer's ids for ``texts`` under this window (training, parity)."""
    if tail <= 0:
        out: list[list[int]] = tokenizer(list(texts), truncation=True, max_length=max_length)[
            "input_ids"
        ]
        return out
    whole = tokenizer([bound(t, max_length, tail) for t in texts], truncation=False, verbose=False)
    return [fit(ids, max_length, tail) for ids in whole["input_ids"]]


def pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[list[list[int]], list[list[int]]]:
    """Rows padded on the right to the longest: (ids, attention mask)."""
    width = max((len(r) for r in rows), default=0)
    ids = [list(r) + [pad_id] * (width - len(r)) for r in rows]
    mask = [[1] * len(r) + [0] * (width - len(r)) for r in rows]
    return ids, mask

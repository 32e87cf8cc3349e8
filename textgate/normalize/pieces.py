"""Long text: the pieces to score, head + tail or overlapping chunks, within a count budget."""

from __future__ import annotations

from textgate.normalize.settings import CountFn, NormalizeSettings


def split_long(text: str, settings: NormalizeSettings, count: CountFn | None = None) -> list[str]:
    """The pieces to score: ``text`` itself, its head + tail, or overlapping chunks."""
    return split_pieces(text, settings, count or len)[0]


def split_pieces(text: str, settings: NormalizeSettings, count: CountFn) -> tuple[list[str], bool]:
    if settings.long_text == "truncate":
        return _head_tail(text, settings.head_chars, settings.tail_chars, count)
    return _chunks(text, settings, count)


def _head_tail(text: str, head: int, tail: int, count: CountFn) -> tuple[list[str], bool]:
    if count(text) <= head + tail:
        return [text], False
    head_end = _fit_forward(text, 0, head, count)
    if tail == 0:
        return [text[:head_end].strip()], True
    tail_start = max(head_end, _fit_backward(text, len(text), tail, count))
    return [f"{text[:head_end].strip()} {text[tail_start:].strip()}".strip()], True


def _chunks(text: str, settings: NormalizeSettings, count: CountFn) -> tuple[list[str], bool]:
    size, overlap = settings.chunk_chars, settings.chunk_overlap
    if count(text) <= size:
        return [text], False
    keep_head = max(1, settings.max_chunks - 1)
    pieces: list[str] = []
    start = 0
    while start < len(text) and len(pieces) < keep_head:
        end = _fit_forward(text, start, size, count)
        pieces.append(text[start:end].strip())
        if end >= len(text):
            return pieces, False
        start = max(start + 1, _fit_backward(text, end, overlap, count)) if overlap else end
    rest = text[start:]
    if settings.max_chunks == 1:
        return pieces, True
    if count(rest) <= size:
        return [*pieces, rest.strip()], False
    # Over max_chunks: keep the head chunks and the very end, and say so.
    last = _fit_backward(text, len(text), size, count)
    return [*pieces, text[last:].strip()], True


def _fit_forward(text: str, start: int, budget: int, count: CountFn) -> int:
    """Largest end with count(text[start:end]) <= budget, moved back to a space if one is
    in the second half; always past ``start`` so splitting makes progress."""
    n = len(text)
    good, bad = start, min(n, start + budget)
    # Exponential probe: a token may cover many characters.
    while count(text[start:bad]) <= budget:
        good = bad
        if bad == n:
            break
        bad = min(n, start + 2 * (bad - start))
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if count(text[start:mid]) <= budget else (good, mid)
    end = max(good, start + 1)
    if end < n and text[end] != " ":
        space = text.rfind(" ", start + (end - start) // 2, end)
        end = space if space > start else end
    return end


def _fit_backward(text: str, end: int, budget: int, count: CountFn) -> int:
    """Smallest start with count(text[start:end]) <= budget, moved forward past a space
    if one is in the first half; always before ``end``."""
    good, bad = end, max(0, end - budget)
    while count(text[bad:end]) <= budget:
        good = bad
        if bad == 0:
            break
        bad = max(0, end - 2 * (end - bad))
    while good - bad > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if count(text[mid:end]) <= budget else (good, mid)
    start = min(good, end - 1)
    if start > 0 and text[start - 1] != " ":
        space = text.find(" ", start, start + (end - start) // 2)
        start = space + 1 if space >= 0 else start
    return start

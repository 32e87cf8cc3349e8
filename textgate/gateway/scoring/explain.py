"""Why a text was flagged: occlusion over a bounded set of candidate spans.

    text ─> candidates (link domains, distinct words, adjacent word pairs; at most ``limit``)
         ─> [text, text without span 1, ..., text without span k]   one batch, ONE request
         ─> contribution(span) = score(text) - score(text without span)
         ─> the ``n`` spans with the largest contribution (positive: it pushed towards spam)

Occlusion removes every occurrence of a span (case-insensitively, on word boundaries), so
a word repeated ten times counts once, with its whole weight. The bound keeps the cost to
one extra request of ``limit + 1`` texts whatever the message length; a candidate is a word
of at least three letters that is not a stop word, in order of first appearance, domains
first (a link's domain is the strongest single signal of a phish). The caller supplies
``score``: the policy's score of each text (``Verdict.score``), so a three-label model is
explained on the same scale as it is judged.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

MAX_SPANS = 20  # ?explain=N upper bound
MAX_CANDIDATES = 48  # texts per occlusion request, the unoccluded one not counted
_WORD = re.compile(r"[^\W\d_][\w'-]{2,}", re.UNICODE)
_STOP = frozenset(
    re.findall(
        r"\w+",
        "the and for you your are with this that have from was were will not but all can our "
        "has had its his her they them their there here what when who how which would could "
        "into out about also than then just more some any very been being over only such",
    )
)

ScoreFn = Callable[[Sequence[str]], Awaitable[Sequence[float]]]


@dataclass(frozen=True)
class Span:
    """One explanation span: removing it moved the score by ``contribution``."""

    text: str
    kind: str  # "word", "phrase" or "domain"
    contribution: float

    def as_dict(self) -> dict[str, object]:
        return {"span": self.text, "kind": self.kind, "contribution": round(self.contribution, 4)}


@dataclass(frozen=True)
class Candidate:
    text: str
    kind: str  # "domain", "word", "phrase"


def candidates(
    text: str, domains: Sequence[str] = (), limit: int = MAX_CANDIDATES
) -> list[Candidate]:
    """The spans to try, most promising kinds first, at most ``limit``."""
    out: list[Candidate] = []
    seen: set[str] = set()

    def add(span: str, kind: str) -> None:
        key = span.lower()
        if key not in seen and len(out) < limit and _pattern(span).search(text):
            seen.add(key)
            out.append(Candidate(span, kind))

    for d in domains:
        add(d, "domain")
    words = [w for w in _WORD.findall(text) if w.lower() not in _STOP]
    for w in words:
        add(w, "word")
    for a, b in itertools.pairwise(words):
        add(f"{a} {b}", "phrase")
    return out


def _pattern(span: str) -> re.Pattern[str]:
    inner = r"\s+".join(re.escape(part) for part in span.split())
    return re.compile(rf"(?<![\w.-]){inner}(?!\w|[.-]\w)", re.IGNORECASE)  # not inside a domain


def occlude(text: str, spans: Sequence[str]) -> str:
    """``text`` with every occurrence of each span removed (whitespace collapsed)."""
    for span in spans:
        text = _pattern(span).sub(" ", text)
    return " ".join(text.split())


def rank(base: float, scores: Sequence[float], cands: Sequence[Candidate], n: int) -> list[Span]:
    spans = [
        Span(c.text, c.kind, base - s) for c, s in zip(cands, scores, strict=True) if s == s
    ]  # s == s: a NaN score says nothing about its span
    spans.sort(key=lambda sp: -sp.contribution)
    return spans[:n]


async def explain(
    text: str,
    score: ScoreFn,
    n: int,
    *,
    domains: Sequence[str] = (),
    limit: int = MAX_CANDIDATES,
) -> tuple[float, list[Span]]:
    """(score of ``text``, its top ``n`` spans) with one call of ``score``."""
    cands = candidates(text, domains, max(0, limit))
    texts = [text] + [occlude(text, [c.text]) or "." for c in cands]
    scores = list(await score(texts))
    return scores[0], rank(scores[0], scores[1:], cands, max(0, min(n, MAX_SPANS)))

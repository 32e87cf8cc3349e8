"""Occlusion explanations: candidates, occlusion, one scoring call, and faithfulness.

Faithfulness (in aggregate over the spam-like real messages of tests/data/email): removing
the top-3 spans together lowers the score more than removing 3 random spans. The scorer is a
small deterministic logistic model over a spam lexicon (a trained bundle takes ~10 min to
build); the real Triton path (one batched request) is in tests/integration/test_mail.py.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Sequence
from pathlib import Path

from textgate import normalize
from textgate.gateway.scoring import explain

DATA = Path(__file__).parents[3] / "data" / "email"
WEIGHTS = {
    "won": 1.2, "win": 1.4, "free": 1.0, "prize": 1.5, "claim": 1.3, "congratulations": 1.2,
    "cruise": 0.8, "parcel": 0.9, "confirm": 1.1, "fee": 1.0, "delivery": 0.6, "now": 0.7,
    "claim.prize.example": 2.0, "parcel-fees.example": 2.0, "优惠通知": 1.5,
}  # fmt: skip
BIAS = -2.5


def lexicon_score(text: str) -> float:
    low = text.lower()
    z = BIAS + sum(w * low.count(k) for k, w in WEIGHTS.items())
    return 1.0 / (1.0 + math.exp(-z))


class Scorer:
    def __init__(self) -> None:
        self.calls: list[int] = []

    async def __call__(self, texts: Sequence[str]) -> list[float]:
        self.calls.append(len(texts))
        return [lexicon_score(t) for t in texts]


def _messages() -> list[normalize.Normalized]:
    out = []
    for path in sorted(DATA.glob("*.eml")):
        n = normalize.normalize_email(path.read_bytes(), normalize.NormalizeSettings())
        out.append(n)
    return out


def test_candidates_are_bounded_distinct_and_domains_first() -> None:
    text = "Claim your FREE prize now: claim it free at claim.prize.example today"
    cands = explain.candidates(text, ["claim.prize.example"], limit=6)
    assert cands[0] == explain.Candidate("claim.prize.example", "domain")
    assert len(cands) == 6 and len({c.text.lower() for c in cands}) == 6
    assert "your" not in [c.text for c in cands]  # a stop word is never a span


def test_occlusion_removes_every_occurrence_on_word_boundaries() -> None:
    text = "Claim now, claim! reclaim stays; claim.prize.example goes"
    assert explain.occlude(text, ["claim"]) == "now, ! reclaim stays; claim.prize.example goes"
    assert explain.occlude(text, ["claim.prize.example"]) == "Claim now, claim! reclaim stays; goes"


def test_one_scoring_call_per_explanation_and_contributions_are_differences() -> None:
    scorer = Scorer()
    text = "You have won a free cruise, claim now"
    base, spans = asyncio.run(explain.explain(text, scorer, 3, limit=10))
    assert len(scorer.calls) == 1 and scorer.calls[0] <= 11
    assert base == lexicon_score(text)
    top = spans[0]
    assert math.isclose(top.contribution, base - lexicon_score(explain.occlude(text, [top.text])))
    assert [s.contribution for s in spans] == sorted((s.contribution for s in spans), reverse=True)


def test_removing_top3_spans_lowers_spam_score_more_than_random_spans() -> None:
    spam = [n for n in _messages() if lexicon_score(n.pieces[0]) >= 0.5]
    assert len(spam) >= 3, "tests/data/email should hold at least three spam-like messages"
    rng = random.Random(14)
    top_drop, random_drop = 0.0, 0.0
    for n in spam:
        text = n.pieces[0]
        base, spans = asyncio.run(explain.explain(text, Scorer(), 3, domains=n.notes.link_domains))
        top_drop += base - lexicon_score(explain.occlude(text, [s.text for s in spans]))
        cands = explain.candidates(text, n.notes.link_domains)
        for _ in range(20):
            pick = rng.sample(cands, min(3, len(cands)))
            random_drop += (
                base - lexicon_score(explain.occlude(text, [c.text for c in pick]))
            ) / 20
    assert top_drop / len(spam) > random_drop / len(spam) + 0.1, (top_drop, random_drop)

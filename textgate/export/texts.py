"""The parity set: real texts from the checkpoint, topped up with generated ones.

Generated texts follow the production length mix (70 % short, 20 % medium, 10 % longer
than ``max_length`` so truncation is exercised) and include punctuation, digits, URLs and
non-ASCII, because tokenizer drift shows up on exactly those.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence

_VOCAB = (
    "the a to you your free win prize call now claim txt reply stop urgent account bank "
    "meeting tomorrow lunch thanks love great movie terrible boring plot acting wonderful "
    "product quality refund broken delivery fast slow service recommend never again "
    "happy sad okay fine weather office project deadline report please confirm order "
    "offer limited cash bonus mobile number week weekend home later sorry tonight"
)
_WORDS = tuple(_VOCAB.split())
_ODD = (
    "£1000",
    "50%",
    "http://x.co/a?b=1",
    "café",
    "naïve",
    "日本語",
    "!!!",
    "...",
    "&",
    "2-for-1",
)
_SEED = 20_251_130


def generate(n: int, max_length: int, seed: int = _SEED) -> list[str]:
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.7:
            words = rng.randint(1, 12)
        elif roll < 0.9:
            words = rng.randint(13, max(14, max_length // 2))
        else:
            words = rng.randint(max_length, 2 * max_length)  # past max_length: truncation
        tokens = [
            rng.choice(_ODD) if rng.random() < 0.08 else rng.choice(_WORDS) for _ in range(words)
        ]
        text = " ".join(tokens)
        out.append(
            text.capitalize() if rng.random() < 0.5 else text.upper() if roll > 0.95 else text
        )
    return out


def parity_set(real: Sequence[str], n: int, max_length: int) -> list[str]:
    """``n`` texts: real ones first (up to 80 %), then generated ones.

    A fifth is always generated so over-long, odd-character texts are in every parity run.
    """
    texts = list(dict.fromkeys(t for t in real if t.strip()))[: n - n // 5]
    texts += generate(n - len(texts), max_length)
    return texts


def texts_hash(texts: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps(list(texts), ensure_ascii=False).encode()).hexdigest()

"""The lexical half of the e-mail model: hashed word and character n-grams, TF-IDF, a linear score.

Standard library and numpy only, because the repository builder copies this very file into
the Triton postprocess step: training, export and serving run one featurizer, so the score
Triton adds is the score the bundle was measured with (the one-normalization rule, for
features). Fitting (scikit-learn) lives in ``textgate.train.ngram``; this module only reads.

    text ─ lower ─┬─ words (\\w\\w+) and word bigrams ─ hash ─ block 0 ─┐ 1+ln(tf)·idf, L2 per block
                  └─ char 3-5-grams inside " word " ─ hash ─ block 1 ─┘ · coef + intercept = z

``z`` is the log-odds of "not the negative label" (not ham). ``adjust`` moves the
transformer's logits so that their not-ham log-odds become ``(1 - w)·z_transformer + w·z``:
the spam/phish split of the transformer is kept, the postprocess temperature applies after.
"""

from __future__ import annotations

import itertools
import math
import re
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "textgate-ngrams/1"
BUCKETS = 1 << 19  # per block; a power of two so the hash is masked, not divided
CHAR_RANGE = (3, 5)
MAX_CHARS = 4096  # the e-mail model reads ~512 characters; bound anything longer
MAX_WORD = 40  # base64 runs and long URLs: their first 40 characters say enough
_WORD = re.compile(r"\b\w\w+\b")


def grams(text: str) -> Counter[int]:
    """Bucket -> count for one text (word block first, then the character block)."""
    t = text[:MAX_CHARS].lower()
    counts: Counter[int] = Counter()
    words = _WORD.findall(t)
    mask = BUCKETS - 1
    for w in words:
        counts[zlib.crc32(w.encode()) & mask] += 1
    for a, b in itertools.pairwise(words):
        counts[zlib.crc32(f"{a} {b}".encode()) & mask] += 1
    lo, hi = CHAR_RANGE
    for token in t.split():
        padded = f" {token[:MAX_WORD]} "
        for n in range(lo, hi + 1):
            for i in range(len(padded) - n + 1):
                counts[BUCKETS + (zlib.crc32(padded[i : i + n].encode()) & mask)] += 1
    return counts


def weighted(counts: Counter[int], idf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices, values): sublinear tf times idf, each block scaled to unit length."""
    idx = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
    tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
    values = (1.0 + np.log(tf)) * idf[idx]
    for block in (idx < BUCKETS, idx >= BUCKETS):
        norm = math.sqrt(float(np.dot(values[block], values[block])))
        if norm > 0:
            values[block] /= norm
    return idx, values


def adjust(logits: np.ndarray, z: np.ndarray, negative: int, weight: float) -> np.ndarray:
    """Logits whose not-negative log-odds are the ``weight``-mix of theirs and ``z``."""
    out = np.array(logits, dtype=np.float64)
    others = np.delete(out, negative, axis=1)
    top = others.max(axis=1, keepdims=True)
    z_model = (top[:, 0] + np.log(np.exp(others - top).sum(axis=1))) - out[:, negative]
    out[:, negative] += weight * (z_model - np.asarray(z, dtype=np.float64))
    return out


class NgramModel:
    """idf and coefficients over the two hashed blocks, and how the score joins the logits."""

    def __init__(
        self, idf: np.ndarray, coef: np.ndarray, intercept: float, negative: int, weight: float
    ) -> None:
        if idf.shape != (2 * BUCKETS,) or coef.shape != (2 * BUCKETS,):
            raise ValueError(f"n-gram arrays must have {2 * BUCKETS} entries")
        self.idf = idf.astype(np.float64)
        self.coef = coef.astype(np.float64)
        self.intercept = float(intercept)
        self.negative = int(negative)
        self.weight = float(weight)

    def scores(self, texts: list[str]) -> np.ndarray:
        """Log-odds of "not the negative label" for each text."""
        out = np.empty(len(texts), dtype=np.float64)
        for i, text in enumerate(texts):
            idx, values = weighted(grams(text), self.idf)
            out[i] = float(np.dot(values, self.coef[idx])) + self.intercept
        return out

    def adjust(self, logits: np.ndarray, texts: list[str]) -> np.ndarray:
        return adjust(logits, self.scores(texts), self.negative, self.weight)

    def save(self, path: Path) -> None:
        meta = np.array([self.intercept, self.negative, self.weight, BUCKETS], dtype=np.float64)
        with open(path, "wb") as fh:  # a file object: savez would append ".npz" to a name
            np.savez_compressed(
                fh,
                format=np.array(FORMAT),
                meta=meta,
                idf=self.idf.astype(np.float32),
                coef=self.coef.astype(np.float32),
            )

    @classmethod
    def load(cls, path: Path | str) -> NgramModel:
        with np.load(path, allow_pickle=False) as f:
            if str(f["format"]) != FORMAT:
                raise ValueError(f"{path}: not a {FORMAT} file")
            intercept, negative, weight, buckets = (float(v) for v in f["meta"])
            if int(buckets) != BUCKETS:
                raise ValueError(f"{path}: {int(buckets)} buckets; this code has {BUCKETS}")
            return cls(f["idf"], f["coef"], intercept, int(negative), weight)

    def describe(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "buckets": BUCKETS,
            "char_ngrams": list(CHAR_RANGE),
            "weight": self.weight,
            "negative": self.negative,
        }

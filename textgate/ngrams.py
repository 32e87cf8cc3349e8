"""The lexical half of a model: hashed word and character n-grams, TF-IDF, a linear score.

Standard library and numpy only, because the repository builder copies this very file into
the Triton postprocess step: training, export and serving run one featurizer, so the score
Triton adds is the score the bundle was measured with (the one-normalization rule, for
features). Fitting (scikit-learn) lives in ``textgate.train.ngram``; this module only reads.

    text ─ lower ─┬─ words (\\w\\w+) and word bigrams ─ hash ─ block 0 ─┐ 1+ln(tf)·idf, L2 per block
                  └─ char n-grams ─ hash ──────────────────── block 1 ─┘ · coef + intercept = z

How the text becomes n-grams is part of the model (``Features``, stored in the file since
textgate-ngrams/2): the e-mail model reads words and char 3-5-grams inside " word " ("wb"),
as scikit-learn's analyzer="char_wb"; Chinese has no spaces, so a run of characters is one
\\w "word" there, and its model reads char 1-3-grams over the whole text ("char") instead.

``z`` is the log-odds of "not the negative label" (not ham, not negative). ``adjust`` moves
the transformer's logits so that their not-negative log-odds become
``(1 - w)·z_transformer + w·z``: the split among the other labels (spam/phish) is kept, the
postprocess temperature applies after.
"""

from __future__ import annotations

import itertools
import math
import re
import zlib
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

FORMAT = "textgate-ngrams/2"
# /1 files (bundles built before the features were stored) hold the default features.
FORMATS = ("textgate-ngrams/1", FORMAT)
BUCKETS = 1 << 19  # per block; a power of two so the hash is masked, not divided
CHAR_MODES = ("wb", "char")
MAX_N = 8  # longer character n-grams are rare enough to be noise, and cost grams per char
MAX_CHARS = 4096  # the e-mail model reads ~512 characters; bound anything longer
MAX_WORD = 40  # base64 runs and long URLs: their first 40 characters say enough
_WORD = re.compile(r"\b\w\w+\b")


class Features(NamedTuple):
    """How a text becomes buckets. A NamedTuple, not a dataclass: this file may import only
    what the postprocess step has (stdlib modules the builder tests allow, numpy)."""

    char_range: tuple[int, int] = (3, 5)
    # "wb": n-grams inside " word " (whitespace tokens); "char": over the whole text with
    # whitespace runs as one space, so n-grams cross word (and, in Chinese, clause) bounds
    char_mode: str = "wb"
    words: bool = True  # block 0: \w\w+ words and word bigrams (off: block 0 stays empty)

    def checked(self) -> Features:
        lo, hi = (int(n) for n in self.char_range)
        if not 1 <= lo <= hi <= MAX_N:
            raise ValueError(f"char n-gram range must satisfy 1 <= lo <= hi <= {MAX_N}")
        if self.char_mode not in CHAR_MODES:
            raise ValueError(f"char_mode must be one of {CHAR_MODES}, got {self.char_mode!r}")
        return Features((lo, hi), str(self.char_mode), bool(self.words))

    def describe(self) -> dict[str, Any]:
        return {
            "char_ngrams": list(self.char_range),
            "char_mode": self.char_mode,
            "word_block": self.words,
        }


DEFAULT = Features()  # the e-mail model's, and every textgate-ngrams/1 file's


def grams(text: str, features: Features = DEFAULT) -> Counter[int]:
    """Bucket -> count for one text (word block first, then the character block)."""
    t = text[:MAX_CHARS].lower()
    counts: Counter[int] = Counter()
    mask = BUCKETS - 1
    if features.words:
        words = _WORD.findall(t)
        for w in words:
            counts[zlib.crc32(w.encode()) & mask] += 1
        for a, b in itertools.pairwise(words):
            counts[zlib.crc32(f"{a} {b}".encode()) & mask] += 1
    if features.char_mode == "wb":
        spans = [f" {token[:MAX_WORD]} " for token in t.split()]
    else:
        spans = [" ".join(t.split())]
    lo, hi = features.char_range
    for span in spans:
        for n in range(lo, hi + 1):
            for i in range(len(span) - n + 1):
                counts[BUCKETS + (zlib.crc32(span[i : i + n].encode()) & mask)] += 1
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
    """idf and coefficients over the two hashed blocks, the features they were fitted on,
    and how the score joins the logits."""

    def __init__(
        self,
        idf: np.ndarray,
        coef: np.ndarray,
        intercept: float,
        negative: int,
        weight: float,
        features: Features = DEFAULT,
    ) -> None:
        if idf.shape != (2 * BUCKETS,) or coef.shape != (2 * BUCKETS,):
            raise ValueError(f"n-gram arrays must have {2 * BUCKETS} entries")
        self.idf = idf.astype(np.float64)
        self.coef = coef.astype(np.float64)
        self.intercept = float(intercept)
        self.negative = int(negative)
        self.weight = float(weight)
        self.features = Features(*features).checked()

    def scores(self, texts: list[str]) -> np.ndarray:
        """Log-odds of "not the negative label" for each text."""
        out = np.empty(len(texts), dtype=np.float64)
        for i, text in enumerate(texts):
            idx, values = weighted(grams(text, self.features), self.idf)
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
                char_range=np.array(self.features.char_range, dtype=np.int64),
                char_mode=np.array(self.features.char_mode),
                word_block=np.array(self.features.words),
                idf=self.idf.astype(np.float32),
                coef=self.coef.astype(np.float32),
            )

    @classmethod
    def load(cls, path: Path | str) -> NgramModel:
        with np.load(path, allow_pickle=False) as f:
            fmt = str(f["format"])
            if fmt not in FORMATS:
                raise ValueError(f"{path}: format {fmt!r} is not one of {', '.join(FORMATS)}")
            intercept, negative, weight, buckets = (float(v) for v in f["meta"])
            if int(buckets) != BUCKETS:
                raise ValueError(f"{path}: {int(buckets)} buckets; this code has {BUCKETS}")
            features = DEFAULT if fmt == FORMATS[0] else _stored_features(f)
            return cls(f["idf"], f["coef"], intercept, int(negative), weight, features)

    def describe(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "buckets": BUCKETS,
            **self.features.describe(),
            "weight": self.weight,
            "negative": self.negative,
        }


def _stored_features(f: Any) -> Features:
    lo, hi = (int(n) for n in f["char_range"])
    return Features((lo, hi), str(f["char_mode"]), bool(f["word_block"]))

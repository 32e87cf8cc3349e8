"""Per-tenant learning: a small naive Bayes per (tenant, task) over the served n-gram buckets.

    FeedbackStore rows ─ rebuild at start ─┐
    a correction (TELL, console, API) ─ add ┼─> Layer(tenant, task): docs per class, and per
    a forget ─ remove ──────────────────────┘   bucket the docs of each class that hold it
                                                 └─> log_odds(text): a signal for the verdict

The features are ``textgate.ngrams.grams`` (words, word bigrams, char 3-5-grams, hashed):
the text a correction stores is the normalized text the served model read, so the layer
sees the same buckets the global n-gram model does. A document counts each bucket once
(binarized multinomial NB, which beats raw counts on short text, Wang & Manning 2012), and
the counts are integers: adding then removing a correction leaves the arrays exactly as they
were, so ``textgate learn --forget`` and spamc's forget are exact.

``log_odds`` is the *mean* per-bucket log-likelihood ratio over the text's buckets the
tenant's corrections have seen, centred and scaled on the corrections themselves (see
``Layer.log_odds``): a plain NB sum over thousands of overlapping char n-grams is wildly
overconfident, and an uneven mix of classes tilts a mean; centred and scaled, about +1 reads
"like this tenant's spam" and -1 "like its ham", so the step's weight is in logits. The
durable state is the corrections themselves (WAL, synchronous=FULL); this is a cache of
them, rebuilt from the rows.

Layers are keyed by (tenant, task): nothing reads across tenants, and the default tenant
(``None``) is a tenant of its own. Memory: two int32 arrays of 2^20 buckets, 8 MiB per
(tenant, task) that has corrections, and the buckets of up to 400 of its rows (~8 MiB).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from textgate import ngrams

SIZE = 2 * ngrams.BUCKETS  # the word block then the character block
ALPHA = 1.0  # Laplace smoothing of each bucket's per-class document frequency
CALIBRATION = 200  # rows per class whose buckets are kept to centre the signal (~20 KiB each)
MIN_HALF_GAP = 1e-3  # classes whose mean signals part by less: the layer says nothing
CLIP = 4.0  # |signal| at most this many half-gaps: one odd message cannot swing a verdict
# Half-gaps the signal leans toward ham: a message must look more like the tenant's spam
# than half-way to be pushed up. Measured (benchmarks/studies/email/tenant_learning.py, on
# folds other than the one reported): centred exactly, the layer spends its gain on spam
# recall and adds false alarms; leaning 0.5 halves a tenant's false alarms and still
# gains recall.
LEAN = 0.5
_MIX = 0x9E3779B97F4A7C15  # a 64-bit odd constant: spreads row ids before they are XORed
_MASK = (1 << 64) - 1


class Row(Protocol):
    """What a layer reads of a correction (``feedback.Correction`` has all of it)."""

    @property
    def id(self) -> int: ...
    @property
    def task(self) -> str: ...
    @property
    def tenant(self) -> str | None: ...
    @property
    def label(self) -> str: ...
    @property
    def text(self) -> str: ...


def buckets(text: str, features: ngrams.Features = ngrams.DEFAULT) -> np.ndarray:
    """The distinct buckets of a text, as the served n-gram model hashes them."""
    return np.fromiter(ngrams.grams(text, features).keys(), dtype=np.int64)


def _spread(row_id: int) -> int:
    return (row_id * _MIX) & _MASK


@dataclass(frozen=True)
class Signal:
    """What the verdict says of a layer for one text."""

    corrections: int
    positives: int  # corrections of a not-negative label (spam, phish)
    negatives: int  # corrections of the negative label (ham)
    log_odds: float
    version: str


class Layer:
    """One tenant's corrections of one task: docs per class and bucket document counts."""

    def __init__(self, lean: float = LEAN) -> None:
        self.lean = lean
        self.docs = [0, 0]  # [negative, positive]
        self.counts = np.zeros((2, SIZE), dtype=np.int32)
        self.ids: dict[int, int] = {}  # row id -> class, so a row is never counted twice
        self._hash = 0  # XOR of the spread row ids: order-free, updated in O(1)
        # the buckets of up to CALIBRATION rows per class, to centre and scale the signal
        self.kept: dict[int, np.ndarray] = {}
        self._kept_per_class = [0, 0]
        self._scale: tuple[str, float, float] | None = None  # (version, centre, half-gap)

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def version(self) -> str:
        """Changes with every correction added or removed; equal for equal row sets."""
        return f"{self.n}-{self._hash:016x}"

    def add(self, row_id: int, positive: bool, where: np.ndarray) -> bool:
        if row_id in self.ids:
            return False
        cls = int(positive)
        self.ids[row_id] = cls
        self._hash ^= _spread(row_id)
        self.docs[cls] += 1
        self.counts[cls, where] += 1
        if self._kept_per_class[cls] < CALIBRATION:
            self.kept[row_id] = where.astype(np.int32)
            self._kept_per_class[cls] += 1
        return True

    def remove(self, row_id: int, where: np.ndarray) -> bool:
        cls = self.ids.pop(row_id, None)
        if cls is None:
            return False
        self._hash ^= _spread(row_id)
        self.docs[cls] -= 1
        self.counts[cls, where] -= 1
        if self.kept.pop(row_id, None) is not None:
            self._kept_per_class[cls] -= 1
        return True

    def raw(self, where: np.ndarray, own: int | None = None) -> float:
        """The mean bucket log-likelihood ratio over the text's seen buckets; ``own``: the
        class of a training text itself, taken out of the counts (leave-one-out)."""
        docs = np.array(self.docs, dtype=np.float64)
        c = self.counts[:, where].astype(np.float64)
        if own is not None:
            docs[own] -= 1
            c[own] -= 1
        seen = c.sum(axis=0) > 0
        if not seen.any() or docs.min() <= 0:
            return 0.0
        rate = (c[:, seen] + ALPHA) / (docs[:, None] + 2 * ALPHA)
        return float(np.mean(np.log(rate[1]) - np.log(rate[0])))

    def log_odds(self, where: np.ndarray) -> float:
        """The text's signal: ``raw``, centred between the two classes' leave-one-out means
        and scaled by half their gap, so a typical correction of the tenant's spam reads
        about +1 and of its ham about -1, whatever the mix of classes (no class prior: the
        corrections are the mail a tenant chose to correct, not a sample of its traffic,
        and the global score already holds the prior), less ``lean``. 0 while the classes do
        not part, or the text shares no bucket with the corrections."""
        centre, half_gap = self._calibration()
        if half_gap <= MIN_HALF_GAP:
            return 0.0
        x = self.raw(where)
        if x == 0.0:
            return 0.0
        return float(np.clip((x - centre) / half_gap, -CLIP, CLIP)) - self.lean

    def _calibration(self) -> tuple[float, float]:
        version = self.version
        if self._scale is None or self._scale[0] != version:
            means = []
            for cls in (0, 1):
                xs = [self.raw(w, cls) for r, w in self.kept.items() if self.ids[r] == cls]
                means.append(float(np.mean(xs)) if xs else 0.0)
            self._scale = (version, (means[0] + means[1]) / 2, (means[1] - means[0]) / 2)
        return self._scale[1], self._scale[2]


class Learning:
    """Every tenant's layers, kept from the feedback store's rows.

    ``negative``: the labels that are the negative class (ham); every other label is the
    positive class (spam and phish are both "not ham", as the served n-gram score is).
    """

    def __init__(
        self, negative: Collection[str], features: ngrams.Features = ngrams.DEFAULT
    ) -> None:
        self.negative = frozenset(negative)
        self.features = features
        self._layers: dict[tuple[str | None, str], Layer] = {}
        # Writers (the store's worker threads) and readers (the event loop) take turns: a
        # reader must not see a layer with its documents counted but its buckets half done.
        self._lock = threading.Lock()

    def rebuild(self, rows: Iterable[Row]) -> None:
        """From scratch: a new set of layers, swapped in at the end (readers never see half)."""
        fresh = Learning(self.negative, self.features)
        for r in rows:
            fresh.add(r)
        with self._lock:
            self._layers = fresh._layers

    def add(self, row: Row) -> bool:
        key = (row.tenant or None, row.task)
        where = buckets(row.text, self.features)  # outside the lock: the slow part
        with self._lock:
            layer = self._layers.get(key)
            if layer is None:
                layer = self._layers[key] = Layer()
            return layer.add(row.id, row.label not in self.negative, where)

    def remove(self, row: Row) -> bool:
        key = (row.tenant or None, row.task)
        where = buckets(row.text, self.features)
        with self._lock:
            layer = self._layers.get(key)
            if layer is None or not layer.remove(row.id, where):
                return False
            if layer.n == 0:
                del self._layers[key]  # its 8 MiB back
            return True

    def adopt(self, tenant: str | None, task: str, layer: Layer) -> None:
        """A layer built elsewhere (a measurement that hashes each text once)."""
        with self._lock:
            self._layers[(tenant or None, task)] = layer

    def layer(self, tenant: str | None, task: str) -> Layer | None:
        return self._layers.get((tenant or None, task))

    def signal(self, tenant: str | None, task: str, text: str) -> Signal | None:
        """The tenant's signal for a text; None when the tenant has no corrections."""
        if self.layer(tenant, task) is None:  # most tenants: no hashing on the event loop
            return None
        where = buckets(text, self.features)
        with self._lock:
            layer = self.layer(tenant, task)
            if layer is None:
                return None
            neg, pos = layer.docs
            return Signal(layer.n, pos, neg, layer.log_odds(where), layer.version)


def weight(n_negative: int, n_positive: int, minimum: int, ceiling: float) -> float:
    """How far a tenant's layer moves its scores: 0 until it has ``minimum`` corrections and
    both classes among them (one class alone says nothing about what separates them), then
    growing with its data toward ``ceiling`` (half of it at the minimum: a tenant's first
    corrections are few and may be noisy, so they nudge rather than decide)."""
    n = n_negative + n_positive
    if n < minimum or min(n_negative, n_positive) == 0:
        return 0.0
    return ceiling * n / (n + minimum)

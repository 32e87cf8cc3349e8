"""Campaign memory (issue 42 §2): the model's answer to a message it has just scored.

A spam campaign sends one body to thousands of mailboxes; Rspamd keeps fuzzy hashes for
that. Here an exact key: SHA-256 over what Triton would see (the normalized pieces with the
combiner's symbol tokens) and everything else the answer depends on — task, model, version
and variant of the route, the fp32 re-score setting, the tenant's policy rule (it decides
the pooling score and the re-score band) — and the tenant, so one tenant's traffic never
answers another's (not even by its timing). A model switch or a policy change is a new key;
a reload starts an empty memory.

What is kept is the model's output (label, probabilities, the variant that answered, the
re-score), not the verdict: policy, events, the review store and metrics run for every
request as before. Non-finite outputs are never kept (they are anomalies to replay).

Bounded by ``gateway.campaign_entries`` (least recently used out first) and
``gateway.campaign_ttl_s``; off with 0 entries (the default until the mail workload's
measurement, docs/benchmarks.md).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any


class Campaigns:
    def __init__(self, entries: int, ttl_s: float) -> None:
        self.entries, self.ttl_s = entries, ttl_s
        self._kept: OrderedDict[str, tuple[float, Any]] = OrderedDict()

    @classmethod
    def from_config(cls, gw: Any) -> Campaigns | None:
        return cls(gw.campaign_entries, gw.campaign_ttl_s) if gw.campaign_entries > 0 else None

    def __len__(self) -> int:
        return len(self._kept)

    @staticmethod
    def key(tenant: str | None, route: Any, rule: Any, rescore: bool, pieces: Sequence[str]) -> str:
        parts = [
            tenant or "",
            route.task,
            route.model,
            route.version,
            route.variant,
            route.precise or "",
            str(rescore),
            repr(rule),  # a frozen dataclass: every threshold and band is in its repr
            *pieces,
        ]
        return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, key: str, now: float | None = None) -> Any | None:
        kept = self._kept.get(key)
        if kept is None:
            return None
        now = time.monotonic() if now is None else now
        if now - kept[0] > self.ttl_s:
            del self._kept[key]
            return None
        self._kept.move_to_end(key)
        return kept[1]

    def put(self, key: str, answer: Any, probs: Sequence[float], now: float | None = None) -> None:
        if not all(math.isfinite(p) for p in probs):
            return
        self._kept[key] = (time.monotonic() if now is None else now, answer)
        self._kept.move_to_end(key)
        while len(self._kept) > self.entries:
            self._kept.popitem(last=False)

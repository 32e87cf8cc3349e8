"""The console's live panel: verdict rates from the gateway's own request counter."""

from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textgate.gateway.runtime import Gateway

WINDOW_S = 300.0


class Rates:
    """Verdict totals sampled from the gateway's own request counter (first at startup).

    Each sample holds every (tenant, action) total, so one window serves every tenant's
    panel; samples older than the window go, but one older than it is kept as the base.
    """

    def __init__(self) -> None:
        self.samples: deque[tuple[float, dict[tuple[str, str], float]]] = deque()

    def sample(self, gw: Gateway) -> dict[tuple[str, str], float]:
        totals: dict[tuple[str, str], float] = {}
        for metric in gw.metrics.requests.collect():
            for s in metric.samples:
                if s.name.endswith("_total") and s.labels.get("status") == "200":
                    key = (s.labels.get("tenant", ""), s.labels.get("action", ""))
                    totals[key] = totals.get(key, 0.0) + s.value
        now = time.monotonic()
        self.samples.append((now, totals))
        while len(self.samples) > 2 and now - self.samples[1][0] > WINDOW_S:
            self.samples.popleft()
        return totals

    def observe(self, gw: Gateway, tenant: str | None) -> dict[str, Any]:
        totals = self.sample(gw)
        (t0, first), now = self.samples[0], self.samples[-1][0]
        delta: dict[str, float] = {}
        for (who, action), value in totals.items():
            if tenant is None or who == tenant:
                delta[action] = delta.get(action, 0.0) + value - first.get((who, action), 0.0)
        n = sum(delta.values())
        minutes = max(now - t0, 1.0) / 60.0
        return {
            "window_s": round(now - t0, 1),
            "verdicts_per_minute": round(n / minutes, 2),
            "spam_rate": round(delta.get("quarantine", 0.0) / n, 4) if n else None,
            "review_share": round(delta.get("review", 0.0) / n, 4) if n else None,
            "verdicts": {a: int(v) for a, v in sorted(delta.items())},
        }

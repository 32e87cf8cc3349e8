"""The release watch: is a new version worse than the one it is compared with?

The gateway records every request's outcome per version (the last ``max_samples`` of each);
``verdict`` compares a version with a reference once both have ``watch_min_requests`` and
names the first bound it is past (error rate, P99 latency, positive-verdict rate, score PSI
beyond its sampling noise). While a canary runs, the reference is the serving version and
the gateway stops the canary; within ``post_watch_s`` of a promotion, the reference is the
version it replaced (docs/lifecycle.md, automatic rollback).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence

import numpy as np

from textgate.config import ReleaseConfig

_KINDS = ("ok", "latency", "score")


def psi(expected: Sequence[float], actual: Sequence[float], bins: int = 10) -> float:
    """Population stability index of two score samples in [0, 1] (fixed-width bins)."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    e = np.histogram(np.clip(expected, 0, 1), edges)[0] / max(1, len(expected))
    a = np.histogram(np.clip(actual, 0, 1), edges)[0] / max(1, len(actual))
    e, a = np.maximum(e, 1e-4), np.maximum(a, 1e-4)  # empty bins would make it infinite
    return float(np.sum((a - e) * np.log(a / e)))


class CanaryWatch:
    """Outcomes per version while a canary runs; ``verdict`` says when to roll back."""

    def __init__(self, settings: ReleaseConfig, max_samples: int = 5000) -> None:
        self.settings = settings
        self.max_samples = max_samples
        self.samples: dict[int, dict[str, deque[float]]] = {}

    def record(self, version: int, *, ok: bool, latency_s: float, score: float | None) -> None:
        s = self.samples.get(version)
        if s is None:
            s = self.samples[version] = {k: deque(maxlen=self.max_samples) for k in _KINDS}
        s["ok"].append(1.0 if ok else 0.0)
        if ok:
            s["latency"].append(latency_s)
        if score is not None and math.isfinite(score):
            s["score"].append(score)

    def reset(self) -> None:
        self.samples.clear()

    def stats(self, version: int) -> dict[str, float]:
        s = self.samples.get(version) or {k: deque() for k in _KINDS}
        n = len(s["ok"])
        return {
            "n": n,
            "error_rate": 1 - float(np.mean(s["ok"])) if n else 0.0,
            "p99_s": float(np.percentile(s["latency"], 99)) if s["latency"] else 0.0,
            "positive_rate": float(np.mean(np.asarray(s["score"]) >= 0.5)) if s["score"] else 0.0,
        }

    def verdict(self, serving: int, canary: int) -> str | None:
        """A reason to roll back, or None (also while either side has too few requests)."""
        cfg = self.settings
        a, b = self.stats(serving), self.stats(canary)
        if min(a["n"], b["n"]) < cfg.watch_min_requests:
            return None
        if b["error_rate"] - a["error_rate"] > cfg.max_error_rate_delta:
            return f"error rate {b['error_rate']:.3f} vs serving {a['error_rate']:.3f}"
        if a["p99_s"] > 0 and b["p99_s"] / a["p99_s"] > cfg.max_p99_ratio:
            return f"P99 {b['p99_s'] * 1000:.1f} ms vs serving {a['p99_s'] * 1000:.1f} ms"
        if abs(b["positive_rate"] - a["positive_rate"]) > cfg.max_positive_rate_delta:
            return f"positive rate {b['positive_rate']:.3f} vs serving {a['positive_rate']:.3f}"
        ss, cs = list(self.samples[serving]["score"]), list(self.samples[canary]["score"])
        # PSI of two finite samples of one distribution is about (bins-1)(1/n1 + 1/n2), not
        # 0: judge the excess over that, or small canaries are rolled back for noise.
        noise = 9 * (1 / max(1, len(ss)) + 1 / max(1, len(cs)))
        value = psi(ss, cs) - noise
        if value > cfg.max_psi:
            return f"score PSI {value + noise:.3f} (noise {noise:.3f}) > {cfg.max_psi}"
        return None

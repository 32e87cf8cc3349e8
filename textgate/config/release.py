"""Section ``release``: model versions, the compare gate, the canary watch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from textgate.config.checks import require


@dataclass(frozen=True, kw_only=True)
class CompareSample:
    """Texts (JSONL ``{"text"}``) that a task's compare gate also runs on, each by itself:
    a candidate must agree with the serving version on every sample (sentiment: English and
    Chinese), so a drift on one language is not averaged away by the other."""

    task: str
    name: str  # how the report names it: en, zh, ...
    path: Path

    def __post_init__(self) -> None:
        require(bool(self.task), "task", "must not be empty")
        require(bool(self.name), "name", "must not be empty")


@dataclass(frozen=True, kw_only=True)
class ReleaseConfig:
    """Model versions: gate, canary, automatic rollback (docs/lifecycle.md)."""

    repository: Path | None = None  # a release-managed model repository; null: no releases
    triton_http: str = ""  # host:port of Triton's HTTP endpoint for model control
    triton_api_key: str | None = None  # Triton's restricted model-repository API key, if set
    keep_loadable: int = 3  # versions kept loaded; older ones are retired (files until gc)
    agreement_min: float = 0.995  # compare gate: argmax agreement candidate vs serving
    f1_tolerance: float = 0.01  # compare gate: candidate F1 >= serving F1 - tolerance
    min_compare_texts: int = 50  # fewer texts than this: the gate fails (no evidence)
    # compare shares Triton with live traffic: unpaced, it multiplied live P99 at 70 % load
    # (docs/lifecycle.md, "Zero failed requests under load"). 0 = unpaced (an idle server,
    # an offline repository).
    compare_texts_per_s: float = 20.0
    canary_key: Literal["tenant", "sender", "request_id"] = "request_id"
    shadow_log_max: int = 10_000  # shadowed texts kept for compare (the log then rotates)
    compare_samples: tuple[CompareSample, ...] = ()  # per task, each gated on its own
    watch_interval_s: float = 5.0  # how often a running canary is checked
    watch_min_requests: int = 50  # per version, before the canary is judged at all
    max_error_rate_delta: float = 0.01  # canary error rate - serving error rate
    max_p99_ratio: float = 2.0  # canary P99 / serving P99
    max_positive_rate_delta: float = 0.1  # |canary - serving| share of positive (spam) verdicts
    max_psi: float = 0.25  # population stability index of the score distributions
    # After a promotion the new serving version is judged against the one it replaced (their
    # live outcomes in this gateway, same bounds as the canary) for post_watch_s; past a
    # bound it is alerted (metric, log, event) and, with post_watch_rollback, rolled back.
    post_watch_s: float = 3600.0  # 0: no watch after a promotion
    post_watch_rollback: bool = False

    def __post_init__(self) -> None:
        require(self.keep_loadable >= 2, "keep_loadable", "must be >= 2 (serving + one back)")
        require(0 < self.agreement_min <= 1, "agreement_min", "must be within (0, 1]")
        require(0 <= self.f1_tolerance < 1, "f1_tolerance", "must be within [0, 1)")
        require(self.min_compare_texts >= 1, "min_compare_texts", "must be >= 1")
        require(self.compare_texts_per_s >= 0, "compare_texts_per_s", "must be >= 0")
        require(self.shadow_log_max >= 1, "shadow_log_max", "must be >= 1")
        require(self.watch_interval_s > 0, "watch_interval_s", "must be > 0")
        require(self.watch_min_requests >= 1, "watch_min_requests", "must be >= 1")
        require(self.max_p99_ratio >= 1, "max_p99_ratio", "must be >= 1")
        require(self.max_psi > 0, "max_psi", "must be > 0")
        require(self.post_watch_s >= 0, "post_watch_s", "must be >= 0 (0: off)")
        pairs = [(c.task, c.name) for c in self.compare_samples]
        dup = sorted({p for p in pairs if pairs.count(p) > 1})
        require(not dup, "compare_samples", f"sample {dup[0] if dup else ''} appears twice")

    def samples_for(self, task: str) -> tuple[CompareSample, ...]:
        return tuple(c for c in self.compare_samples if c.task == task)

"""One ``textgate bench`` measurement: a target, a workload, a load plan -> a report dict.

Each step (one open-loop rate, one closed-loop concurrency, or each rate of a ramp) gets
its latency summary, the CPU use and peak memory of the watched server processes, and,
when a Triton gRPC URL is known, the statistics-extension deltas of the watched models.
"""

from __future__ import annotations

import asyncio
import contextlib
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from textgate.bench import load, report
from textgate.bench.target import Target
from textgate.errors import ConfigError, TextgateError


@dataclass(frozen=True, kw_only=True)
class Plan:
    mode: Literal["open", "closed", "ramp"] = "closed"
    rate: float = 50.0  # open: offered requests/s; ramp: the first step
    concurrency: int = 16  # closed
    duration_s: float = 10.0  # per step
    max_requests: int = 50_000  # per step
    slo_p99_ms: float = 300.0
    max_error_rate: float = 0.001
    ramp_factor: float = 1.5
    ramp_steps: int = 8
    warmup: int = 16  # requests sent before measuring (model loads, connections)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in ("open", "closed", "ramp"):
            raise ConfigError("mode", f"{self.mode!r} is not open, closed or ramp")
        for key in ("rate", "duration_s", "slo_p99_ms"):
            if getattr(self, key) <= 0:
                raise ConfigError(key, "must be > 0")
        if self.concurrency < 1 or self.max_requests < 1 or self.ramp_steps < 1:
            raise ConfigError("concurrency", "concurrency, max_requests, ramp_steps must be >= 1")
        if self.ramp_factor <= 1:
            raise ConfigError("ramp_factor", "must be > 1")


@dataclass(frozen=True)
class Watch:
    """What to observe besides latency: server process trees and Triton models."""

    pids: Mapping[str, int] = field(default_factory=dict)
    triton_url: str | None = None
    models: Sequence[str] = ()


async def step(
    target: Target,
    texts: Sequence[str],
    plan: Plan,
    watch: Watch,
    *,
    rate: float | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Run one step and return its summary with process and Triton figures attached."""
    probe = report.ProcessProbe(dict(watch.pids or {}))
    probe.start()
    before = await _stats(watch)
    sampler = asyncio.create_task(_sample(probe))
    # Open loop knows roughly how many requests it will send; closed loop does not.
    expected = min(plan.max_requests, round(rate * plan.duration_s)) if rate else None
    bar, task_id = report.progress_bar(expected, _label(plan, rate))
    tick = (lambda: bar.advance(task_id)) if progress else None
    try:
        with bar if progress else contextlib.nullcontext():
            run = await _run(target, texts, plan, rate, tick)
    finally:
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
    summary = report.summarize(run)
    summary["processes"] = probe.stop(run.wall_s)
    if watch.triton_url and watch.models:
        summary["triton"] = report.stats_delta(before, await _stats(watch))
    return summary


def _label(plan: Plan, rate: float | None) -> str:
    return f"{rate:.0f}/s" if rate is not None else f"c={plan.concurrency}"


async def _run(
    target: Target, texts: Sequence[str], plan: Plan, rate: float | None, tick: Any
) -> load.Run:
    if rate is None:
        return await load.closed_loop(
            target,
            texts,
            concurrency=plan.concurrency,
            duration_s=plan.duration_s,
            max_requests=plan.max_requests,
            progress=tick,
        )
    return await load.open_loop(
        target,
        texts,
        rate=rate,
        duration_s=plan.duration_s,
        max_requests=plan.max_requests,
        seed=plan.seed,
        progress=tick,
    )


async def _stats(watch: Watch) -> dict[str, Any]:
    if not (watch.triton_url and watch.models):
        return {}
    return await report.triton_stats(watch.triton_url, watch.models)


async def _sample(probe: report.ProcessProbe) -> None:
    while True:  # cancelled by step(); peak RSS under load
        await asyncio.sleep(0.5)
        probe.sample()


async def warm_up(target: Target, texts: Sequence[str], n: int) -> None:
    """Concurrent, so that every bucket shape and batch size has run once before timing.
    A target that fails every warm-up request is misconfigured: stop before measuring."""
    calls = (target.classify(texts[i % len(texts)]) for i in range(n))
    results = await asyncio.gather(*calls, return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException)]
    if failures and len(failures) == len(results):
        raise TextgateError(
            f"{target.name}: all {n} warm-up requests failed; first: {failures[0]}",
            hint="check --target, --url and --model",
        )


async def measure(
    target: Target,
    texts: Sequence[str],
    plan: Plan,
    watch: Watch | None = None,
    *,
    progress: bool = False,
) -> dict[str, Any]:
    """The whole measurement: warm-up, then the plan's step(s); a JSON-ready report."""
    watch = watch or Watch()
    await target.open()
    try:
        if plan.warmup:
            await warm_up(target, texts, plan.warmup)
        at_rest = report.ProcessProbe(dict(watch.pids or {})).rss()
        steps, held = await _steps(target, texts, plan, watch, progress)
    finally:
        await target.close()
    return {
        "target": target.name,
        "plan": asdict(plan),
        "rss_at_rest_mb": at_rest,
        "steps": steps,
        "held_rate": held,
    }


async def _steps(
    target: Target, texts: Sequence[str], plan: Plan, watch: Watch, progress: bool
) -> tuple[list[dict[str, Any]], float | None]:
    if plan.mode == "closed":
        return [await step(target, texts, plan, watch, progress=progress)], None
    if plan.mode == "open":
        return [await step(target, texts, plan, watch, rate=plan.rate, progress=progress)], None

    async def at(rate: float) -> dict[str, Any]:
        return await step(target, texts, plan, watch, rate=rate, progress=progress)

    result = await load.ramp(
        at,
        start_rate=plan.rate,
        factor=plan.ramp_factor,
        max_steps=plan.ramp_steps,
        slo_p99_ms=plan.slo_p99_ms,
        max_error_rate=plan.max_error_rate,
    )
    steps = [{**s.summary, "held": s.held, "why": s.why} for s in result.steps]
    return steps, result.held_rate


# The gateway's counters a run reads at its end: the cascade's paths, the campaign memory's
# results, and best-effort parses (a parse past its budget under load answers differently).
GATEWAY_COUNTERS = {
    "textgate_cascade_total": "path",
    "textgate_campaign_memory_total": "result",
    "textgate_best_effort_total": "reason",
}


def gateway_counts(
    base_url: str, counters: Mapping[str, str] = GATEWAY_COUNTERS
) -> dict[str, float]:
    """``{label}_{value}`` -> the count summed over the gateway's other labels, from its
    ``/metrics`` (``counters``: family -> the label to split by); {} if it cannot be read."""
    try:
        with urllib.request.urlopen(f"{base_url.rstrip('/')}/metrics", timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return {}
    out: dict[str, float] = {}
    for line in text.splitlines():
        family, _, rest = line.partition("{")
        key = counters.get(family)
        marker = f'{key}="'
        if key and marker in rest:
            name = key + "_" + rest.split(marker, 1)[1].split('"', 1)[0]
            out[name] = out.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return out

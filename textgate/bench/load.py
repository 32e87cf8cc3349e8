"""Load models: open loop (Poisson arrivals), closed loop (fixed concurrency), step ramp.

Open loop measures every latency from the request's *intended* send time. When the target
stalls, requests that should have gone out meanwhile wait (in-flight is capped so memory
stays bounded), and that wait is part of their latency: coordinated omission cannot hide a
queue. Closed loop measures from the actual send, as a client with N users sees it.

Every loop is bounded in count and in time: at most ``max_requests`` are sent, none after
``duration_s``, and whatever is still in flight ``drain_s`` later is cancelled and counted
as a ``timeout`` error.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from textgate.bench.target import RequestFailed, Target

Progress = Callable[[], None]


@dataclass(frozen=True)
class Sample:
    intended: float  # seconds after the run started when the request was due
    sent: float
    done: float
    code: str  # "ok", or the error code

    @property
    def latency(self) -> float:
        """From the intended send time: includes any wait for the client's own queue."""
        return self.done - self.intended

    @property
    def ok(self) -> bool:
        return self.code == "ok"


@dataclass
class Run:
    mode: str  # "open" or "closed"
    samples: list[Sample] = field(default_factory=list)
    wall_s: float = 0.0
    offered_rate: float | None = None
    concurrency: int | None = None


async def _one(target: Target, text: str, intended: float, t0: float) -> Sample:
    sent = time.perf_counter() - t0
    try:
        await target.classify(text)
        code = "ok"
    except RequestFailed as exc:
        code = exc.code
    except TimeoutError:
        code = "timeout"
    except Exception as exc:  # a client bug must show up as errors, not end the run
        code = type(exc).__name__
    return Sample(intended, sent, time.perf_counter() - t0, code)


def arrivals(rate: float, duration_s: float, max_requests: int, seed: int) -> list[float]:
    """Poisson arrival offsets (seconds) at ``rate``/s, bounded by duration and count."""
    if rate <= 0:
        raise ValueError(f"rate must be > 0, got {rate}")
    rng = random.Random(seed)
    times: list[float] = []
    t = 0.0
    while len(times) < max_requests:
        t += rng.expovariate(rate)
        if t > duration_s:
            break
        times.append(t)
    return times


async def open_loop(
    target: Target,
    texts: Sequence[str],
    *,
    rate: float,
    duration_s: float,
    max_requests: int = 100_000,
    seed: int = 0,
    max_in_flight: int = 512,
    drain_s: float = 30.0,
    progress: Progress | None = None,
) -> Run:
    """Send at Poisson times; each latency runs from its intended time, not its send."""
    schedule = arrivals(rate, duration_s, max_requests, seed)
    gate = asyncio.Semaphore(max_in_flight)
    t0 = time.perf_counter()

    async def fire(i: int, due: float) -> Sample:
        async with gate:  # waiting here is queueing the latency must include
            sample = await _one(target, texts[i % len(texts)], due, t0)
        if progress:
            progress()
        return sample

    tasks: list[asyncio.Task[Sample]] = []
    for i, due in enumerate(schedule):
        delay = due - (time.perf_counter() - t0)
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(fire(i, due)))
    samples = await _drain(tasks, schedule, t0, drain_s)
    return Run("open", samples, time.perf_counter() - t0, offered_rate=rate)


async def _drain(
    tasks: list[asyncio.Task[Sample]], due: Sequence[float], t0: float, drain_s: float
) -> list[Sample]:
    if tasks:
        await asyncio.wait(tasks, timeout=drain_s)
    samples = []
    for task, intended in zip(tasks, due, strict=False):
        if task.done() and not task.cancelled():
            samples.append(task.result())
        else:
            task.cancel()
            now = time.perf_counter() - t0
            samples.append(Sample(intended, intended, now, "timeout"))
    await asyncio.gather(*tasks, return_exceptions=True)
    return samples


async def closed_loop(
    target: Target,
    texts: Sequence[str],
    *,
    concurrency: int,
    duration_s: float,
    max_requests: int = 100_000,
    progress: Progress | None = None,
) -> Run:
    """``concurrency`` users, each sending its next text as soon as the last one answers."""
    counter = itertools.count()
    t0 = time.perf_counter()
    samples: list[Sample] = []

    async def user() -> None:
        while time.perf_counter() - t0 < duration_s:
            i = next(counter)
            if i >= max_requests:
                return
            now = time.perf_counter() - t0
            samples.append(await _one(target, texts[i % len(texts)], now, t0))
            if progress:
                progress()

    await asyncio.gather(*(user() for _ in range(concurrency)))
    return Run("closed", samples, time.perf_counter() - t0, concurrency=concurrency)


# --- ramp -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    rate: float
    summary: dict[str, Any]
    held: bool
    why: str  # why it did not hold ("" when it held)


@dataclass(frozen=True)
class Ramp:
    steps: tuple[Step, ...]
    held_rate: float | None  # the last offered rate that met the SLO; None if none did


def verdict(summary: dict[str, Any], slo_p99_ms: float, max_error_rate: float) -> str:
    """'' if the step held; otherwise the reason (P99 over the SLO, or too many errors)."""
    if summary["error_rate"] > max_error_rate:
        return f"error rate {summary['error_rate']:.2%} > {max_error_rate:.2%}"
    if summary["p99_ms"] > slo_p99_ms:
        return f"P99 {summary['p99_ms']:.0f} ms > SLO {slo_p99_ms:.0f} ms"
    return ""


def rates(start: float, factor: float, max_rate: float, max_steps: int) -> list[float]:
    """Geometric steps from ``start``, at most ``max_steps``, none above ``max_rate``."""
    if start <= 0 or factor <= 1:
        raise ValueError("a ramp needs start > 0 and factor > 1")
    out = [start]
    while len(out) < max_steps and out[-1] * factor <= max_rate:
        out.append(out[-1] * factor)
    return out


async def ramp(
    measure: Callable[[float], Awaitable[dict[str, Any]]],
    *,
    start_rate: float,
    factor: float = 1.5,
    max_rate: float = 10_000.0,
    max_steps: int = 12,
    slo_p99_ms: float,
    max_error_rate: float = 0.001,
) -> Ramp:
    """Raise the offered rate step by step until a step breaks the SLO or errors."""
    steps: list[Step] = []
    held: float | None = None
    for rate in rates(start_rate, factor, max_rate, max_steps):
        summary = await measure(rate)
        why = verdict(summary, slo_p99_ms, max_error_rate)
        steps.append(Step(rate, summary, not why, why))
        if why:
            break
        held = rate
    return Ramp(tuple(steps), held)

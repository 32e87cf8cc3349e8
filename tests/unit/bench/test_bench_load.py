"""The load generator against a fake target: arrivals, coordinated omission, the ramp."""

from __future__ import annotations

import asyncio
import time

import pytest

from textgate.bench import load, report
from textgate.bench.target import FakeTarget, RequestFailed

pytestmark = pytest.mark.timeout(60)


def test_poisson_arrivals_are_seeded_and_bounded() -> None:
    a = load.arrivals(100.0, 5.0, 10_000, seed=1)
    assert a == load.arrivals(100.0, 5.0, 10_000, seed=1)
    assert 400 < len(a) < 600 and a[-1] <= 5.0
    assert len(load.arrivals(1000.0, 60.0, 50, seed=0)) == 50


def stalling_target(stall_s: float) -> FakeTarget:
    """One server: the first request stalls it for ``stall_s``, the rest take 1 ms."""
    calls = {"n": 0}

    def delay(_text: str) -> float:
        calls["n"] += 1
        return stall_s if calls["n"] == 1 else 0.001

    return FakeTarget(delay, serial=True)


def test_open_loop_latency_includes_the_queue_behind_a_stall() -> None:
    stall = 0.6
    run = asyncio.run(
        load.open_loop(stalling_target(stall), ["x"], rate=50.0, duration_s=1.2, seed=2)
    )
    assert all(s.ok for s in run.samples) and len(run.samples) > 30
    first = min(run.samples, key=lambda s: s.intended)
    stall_end = first.done
    queued = [s for s in run.samples if first.intended < s.intended < stall_end - 0.05]
    assert len(queued) >= 10
    for s in queued:
        # Measured from the intended send: at least the time left until the stall ended.
        assert s.latency >= stall_end - s.intended - 0.02
    lat_ms = [s.latency * 1000 for s in run.samples]
    assert report.percentile(lat_ms, 90) > 100  # a closed loop would report ~1 ms here


def test_capped_in_flight_still_counts_the_wait() -> None:
    target = FakeTarget(lambda _t: 0.05, serial=False)
    run = asyncio.run(
        load.open_loop(target, ["x"], rate=200.0, duration_s=0.5, seed=0, max_in_flight=1)
    )
    # 1 slot of 50 ms against 200/s offered: requests wait for the slot; latency grows.
    lat = sorted(s.latency for s in run.samples)
    assert lat[-1] > 1.0
    assert max(s.sent - s.intended for s in run.samples) > 1.0


def test_closed_loop_keeps_concurrency_and_bounds() -> None:
    active = {"now": 0, "peak": 0}

    class Counting(FakeTarget):
        async def classify(self, text: str) -> None:
            active["now"] += 1
            active["peak"] = max(active["peak"], active["now"])
            await asyncio.sleep(0.005)
            active["now"] -= 1

    t0 = time.perf_counter()
    run = asyncio.run(
        load.closed_loop(
            Counting(lambda _t: 0), ["a"], concurrency=4, duration_s=5, max_requests=40
        )
    )
    assert len(run.samples) == 40 and active["peak"] == 4
    assert time.perf_counter() - t0 < 2


def test_errors_are_counted_by_code_and_stuck_requests_time_out() -> None:
    class Failing(FakeTarget):
        async def classify(self, text: str) -> None:
            if text == "bad":
                raise RequestFailed("503")
            if text == "stuck":
                await asyncio.sleep(60)

    run = asyncio.run(
        load.open_loop(
            Failing(lambda _t: 0), ["ok", "bad", "stuck"], rate=30, duration_s=0.5, drain_s=0.3
        )
    )
    codes = {s.code for s in run.samples}
    assert codes == {"ok", "503", "timeout"}
    assert run.wall_s < 2


def fake_measure(capacity: float, errors_from: float = 1e9):  # type: ignore[no-untyped-def]
    async def measure(rate: float) -> dict:
        p99 = 20.0 if rate <= capacity else 2000.0
        return {"p99_ms": p99, "error_rate": 0.01 if rate >= errors_from else 0.0}

    return measure


def test_ramp_reports_the_last_rate_that_held() -> None:
    r = asyncio.run(load.ramp(fake_measure(100), start_rate=10, factor=2, slo_p99_ms=300))
    assert [s.rate for s in r.steps] == [10, 20, 40, 80, 160]
    assert r.held_rate == 80 and "P99" in r.steps[-1].why


def test_ramp_stops_on_errors_and_when_nothing_holds() -> None:
    r = asyncio.run(
        load.ramp(fake_measure(1000, errors_from=40), start_rate=10, factor=2, slo_p99_ms=300)
    )
    assert r.held_rate == 20 and "error rate" in r.steps[-1].why
    r = asyncio.run(load.ramp(fake_measure(1), start_rate=10, factor=2, slo_p99_ms=300))
    assert r.held_rate is None and len(r.steps) == 1


def test_ramp_is_bounded() -> None:
    r = asyncio.run(
        load.ramp(fake_measure(1e9), start_rate=1, factor=2, max_steps=5, slo_p99_ms=300)
    )
    assert len(r.steps) == 5 and r.held_rate == 16
    assert load.rates(10, 1.5, 30, 99) == [10, 15, 22.5]

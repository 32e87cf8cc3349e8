"""The benchmark suite's open-loop check: P99 at a share of the closed-loop peak."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path

from textgate.bench import summary
from textgate.bench.measurement import Watch
from textgate.bench.target import FakeTarget

SUITE = Path(__file__).resolve().parents[3] / "benchmarks" / "suite"


def _module(name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, SUITE / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


suite = _module("suite")


def test_open_at_offers_the_rate_and_counts_queueing() -> None:
    # a serial 20 ms server offered 40/s (80 % busy): queueing shows in the tail
    got = asyncio.run(
        suite.open_at(lambda: FakeTarget(lambda _: 0.02), ["a", "b"], 40.0, 1.5, Watch())
    )
    assert got["offered_rate"] == 40.0
    assert got["error_rate"] == 0.0
    assert got["requests"] > 20
    assert got["p50_ms"] >= 20.0
    assert got["p99_ms"] > got["p50_ms"]


def _round(p99: float, rate: float, errors: float = 0.0) -> dict[str, object]:
    opened = {"p99_ms": p99, "offered_rate": rate, "error_rate": errors}
    return {"gateway": {"best": 1.0, "peak": rate / summary.OPEN_SHARE, "open": opened}}


def test_open_line_takes_the_median_of_clean_rounds() -> None:
    rounds = [_round(120.0, 70.0), _round(400.0, 72.0, errors=0.05), _round(140.0, 68.0)]
    lines: dict[str, str] = {}
    ratios: dict[str, object] = {}
    summary.open_line(rounds, lines, ratios)
    got = ratios["gateway_p99_open"]
    assert isinstance(got, dict)
    assert got["median"] == 130.0  # the round with 5 % errors is not a latency
    assert got["n"] == 2
    assert got["offered_rate"]["median"] == 70.0  # every round's offer is reported
    assert "goal <= 150 ms" in lines["gateway_p99_open"]


def test_open_line_says_when_no_round_was_clean() -> None:
    lines: dict[str, str] = {}
    summary.open_line([_round(900.0, 70.0, errors=0.5)], lines, {})
    assert lines["gateway_p99_open"].startswith("no clean open-loop round")

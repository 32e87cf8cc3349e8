"""Side-by-side rounds: every system measured once a round, the order rotating.

On a shared box only ratios within one run mean anything, so the A/B studies
(``benchmarks/studies/serving/``) measure all their systems in each round and report
medians and ratios; this is that loop, and the one way its results are written.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textgate.bench.measurement import Plan, Watch, step, warm_up
from textgate.bench.procs import Proc
from textgate.bench.target import HttpJsonTarget, HttpMailTarget, Target
from textgate.bench.workload import Raws


async def measure(
    make: Callable[[], Target], texts: Any, plan: Plan, watch: Watch
) -> dict[str, Any]:
    target = make()
    await target.open()
    try:
        await warm_up(target, texts, 32)
        s = await step(target, texts, plan, watch)
    finally:
        await target.close()
    cpu = sum(p.get("cpu_cores", 0.0) for p in (s.get("processes") or {}).values())
    return {"throughput": s["throughput"], "p95_ms": s["p95_ms"], "errors": s["error_rate"],
            "cpu_cores": cpu}  # fmt: skip


def http_target(proc: Proc, task: str, raw: Raws | None) -> Callable[[], Target]:
    """A closed-loop client of ``proc``'s classify route: raw mail when ``raw`` is given."""
    url = f"{proc.url}/{task}"
    if raw:
        return lambda: HttpMailTarget(url, raw, limit=128, name=proc.name)
    return lambda: HttpJsonTarget(url, limit=128, name=proc.name)


Systems = dict[str, tuple[Callable[[], Target], Watch]]


def rotate(
    systems: Systems, texts: Any, plan: Plan, n_rounds: int
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, float]]]:
    """Measure every system once a round, the order rotating; (rounds, medians)."""
    names = list(systems)
    rounds: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for r in range(n_rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            make, watch = systems[name]
            rounds[name].append(asyncio.run(measure(make, texts, plan, watch)))
            print(f"# round {r + 1} {name}: {rounds[name][-1]}", file=sys.stderr, flush=True)
    med = {
        n: {k: statistics.median(x[k] for x in rows) for k in rows[0]} for n, rows in rounds.items()
    }
    return rounds, med


def report_ab(out: Path, result: dict[str, Any]) -> None:
    """Write an A/B run's JSON; print each system's medians and each ratio, a line each."""
    out.write_text(json.dumps(result, indent=2))
    for n, m in result["median"].items():
        per_cpu = f", {m['per_cpu_s']:.1f} texts/CPU-s" if "per_cpu_s" in m else ""
        print(
            f"{n}: {m['throughput']:.1f} texts/s, P95 {m['p95_ms']:.0f} ms{per_cpu}, "
            f"err {m['errors']:.3f}"
        )
    for k, v in result["ratios"].items():
        print(f"{k}: {v:.2f}")

"""``textgate tune``: a small Model-Analyzer-like sweep over the repository's batching knobs.

For every candidate (max queue delay, preferred batch sizes, bucket lengths, instance count)
it builds a repository from the bundle, serves it, and measures two things on the same
workload: P99 under an open-loop load of ``rate`` requests/s (must stay within the SLO, with
at most 0.1 % errors), and the throughput a closed loop of ``concurrency`` users reaches.
The winner is the candidate with the best throughput among those that held the SLO; it is
written as a config file (a ``repository:`` section) that ``textgate repo build --config``
reads.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from textgate.bench import load
from textgate.bench.measurement import Plan, Watch, measure
from textgate.bench.server import serve
from textgate.bench.target import TritonTarget
from textgate.config import Config, DynamicBatchingConfig, RepositoryConfig, TritonConfig


@dataclass(frozen=True, kw_only=True)
class Grid:
    delays_us: tuple[int, ...] = (0, 2000, 8000)
    preferred: tuple[tuple[int, ...], ...] = ((), (8, 16))
    buckets: tuple[tuple[int, ...], ...] = ((16, 32, 64, 128, 256), (32, 64, 128, 256))
    instances: tuple[int, ...] = (1, 2)
    max_points: int = 12  # the sweep is bounded: at most this many servers are started

    def candidates(self, base: RepositoryConfig) -> list[RepositoryConfig]:
        out = []
        for delay, pref, buckets, count in itertools.product(
            self.delays_us, self.preferred, self.buckets, self.instances
        ):
            batching = dataclasses.replace(
                base.dynamic_batching,
                max_queue_delay_microseconds=delay,
                preferred_batch_sizes=tuple(p for p in pref if p <= base.max_batch_size),
            )
            group = dataclasses.replace(base.instance_group, count=count)
            out.append(
                dataclasses.replace(
                    base,
                    dynamic_batching=batching,
                    bucket_lengths=buckets,
                    instance_group=group,
                )
            )
        return spread_pick(out, self.max_points)


def spread_pick(items: Sequence[RepositoryConfig], n: int) -> list[RepositoryConfig]:
    """At most n items spread evenly over the grid (always the first and the last)."""
    if len(items) <= n:
        return list(items)
    if n == 1:
        return [items[0]]
    step = (len(items) - 1) / (n - 1)
    return [items[round(i * step)] for i in range(n)]


def knobs(s: RepositoryConfig) -> dict[str, Any]:
    return {
        "max_queue_delay_microseconds": s.dynamic_batching.max_queue_delay_microseconds,
        "preferred_batch_sizes": list(s.dynamic_batching.preferred_batch_sizes),
        "bucket_lengths": list(s.bucket_lengths),
        "instances": s.instance_group.count,
    }


def choose(points: Sequence[dict[str, Any]], slo_p99_ms: float) -> dict[str, Any] | None:
    """The best-throughput point whose P99 at the given load held the SLO (and errors)."""
    held = [p for p in points if not load.verdict(p["at_load"], slo_p99_ms, 0.001)]
    return max(held, key=lambda p: p["throughput"], default=None)


async def evaluate(
    bundle: Path,
    settings: RepositoryConfig,
    texts: Sequence[str],
    *,
    rate: float,
    concurrency: int,
    duration_s: float,
    triton: TritonConfig | None = None,
) -> dict[str, Any]:
    with serve(bundle, settings, triton) as served:
        url = served.server.grpc_url
        watch = Watch(triton_url=url, models=[served.task.model])
        target = TritonTarget(url, served.task.ensemble)
        at_load = await measure(target, texts, Plan(mode="open", rate=rate, duration_s=duration_s))
        closed = Plan(mode="closed", concurrency=concurrency, duration_s=duration_s, warmup=0)
        peak = await measure(target, texts, closed, watch)
    top = peak["steps"][0]
    return {
        "knobs": knobs(settings),
        "at_load": at_load["steps"][0],
        "throughput": top["throughput"],
        "p99_at_peak_ms": top["p99_ms"],
        "mean_batch": top.get("triton", {}).get(served.task.model, {}).get("mean_batch"),
    }


async def sweep(
    bundle: Path,
    base: RepositoryConfig,
    grid: Grid,
    texts: Sequence[str],
    *,
    rate: float,
    concurrency: int,
    duration_s: float,
    slo_p99_ms: float,
    triton: TritonConfig | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    points = []
    for settings in grid.candidates(base):
        p = await evaluate(
            bundle,
            settings,
            texts,
            rate=rate,
            concurrency=concurrency,
            duration_s=duration_s,
            triton=triton,
        )
        log(
            f"{p['knobs']}: P99 at {rate:g}/s {p['at_load']['p99_ms']:.0f} ms, "
            f"peak {p['throughput']:.0f}/s (mean batch {p['mean_batch'] or 0:.1f})"
        )
        points.append(p)
    best = choose(points, slo_p99_ms)
    return {"rate": rate, "slo_p99_ms": slo_p99_ms, "points": points, "best": best}


def chosen_config(base: RepositoryConfig, best: dict[str, Any]) -> RepositoryConfig:
    k = best["knobs"]
    batching = DynamicBatchingConfig(
        enabled=base.dynamic_batching.enabled,
        max_queue_delay_microseconds=k["max_queue_delay_microseconds"],
        preferred_batch_sizes=tuple(k["preferred_batch_sizes"]),
    )
    group = dataclasses.replace(base.instance_group, count=k["instances"])
    return dataclasses.replace(
        base,
        dynamic_batching=batching,
        bucket_lengths=tuple(k["bucket_lengths"]),
        instance_group=group,
    )


def write_config(settings: RepositoryConfig, path: Path, note: str) -> Path:
    """A YAML file with the repository section only; loadable by ``Config.from_file``."""
    section = Config(repository=settings).to_dict()["repository"]
    Config.from_dict({"repository": section})  # refuse to write what cannot be read back
    path.parent.mkdir(parents=True, exist_ok=True)
    text = f"# {note}\n" + yaml.safe_dump({"repository": section}, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path

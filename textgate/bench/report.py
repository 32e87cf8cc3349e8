"""Numbers from a run: percentiles, throughput, errors, server CPU and memory, Triton's
batch statistics, and the plot of latency percentiles against offered load.

Process figures come from /proc (no psutil): CPU seconds (utime + stime) and resident
memory of a process and all its descendants, so Triton's Python-backend stubs count too.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textgate.bench.load import Run

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation between ranks (numpy's
    default), so P99 of few samples is not simply the maximum."""
    if not values:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarize(run: Run) -> dict[str, Any]:
    """Latency percentiles of successful requests (ms), throughput, errors by code."""
    ok = [s.latency * 1000 for s in run.samples if s.ok]
    errors = Counter(s.code for s in run.samples if not s.ok)
    n = len(run.samples)
    return {
        "mode": run.mode,
        "offered_rate": run.offered_rate,
        "concurrency": run.concurrency,
        "requests": n,
        "ok": len(ok),
        "errors": dict(errors),
        "error_rate": (n - len(ok)) / n if n else 0.0,
        "wall_s": run.wall_s,
        "throughput": len(ok) / run.wall_s if run.wall_s > 0 else 0.0,
        "p50_ms": percentile(ok, 50),
        "p95_ms": percentile(ok, 95),
        "p99_ms": percentile(ok, 99),
        "max_ms": max(ok) if ok else math.nan,
        "mean_ms": statistics.fmean(ok) if ok else math.nan,
    }


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median and range of repeated measurements (the machine is noisy: never one number)."""
    clean = [v for v in values if not math.isnan(v)]
    if not clean:
        return {"median": math.nan, "min": math.nan, "max": math.nan, "n": 0}
    return {
        "median": statistics.median(clean),
        "min": min(clean),
        "max": max(clean),
        "n": len(clean),
    }


# --- processes ---------------------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (read from /proc/*/stat parent ids)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def cpu_seconds(pids: Iterable[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICKS


def rss_mb(pids: Iterable[int]) -> float:
    total_kb = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total_kb += int(line.split()[1])
    return total_kb / 1024


@dataclass
class ProcessProbe:
    """CPU use (cores busy) and peak RSS of process trees over a measurement."""

    roots: dict[str, int]  # name -> root pid
    _cpu0: dict[str, float] | None = None
    _peak: dict[str, float] | None = None

    def start(self) -> None:
        self._cpu0 = {k: cpu_seconds(descendants(p)) for k, p in self.roots.items()}
        self._peak = self.rss()

    def rss(self) -> dict[str, float]:
        return {k: rss_mb(descendants(p)) for k, p in self.roots.items()}

    def sample(self) -> None:
        """Call now and then under load: keeps the peak resident memory."""
        now = self.rss()
        peak = self._peak or {}
        self._peak = {k: max(v, peak.get(k, 0.0)) for k, v in now.items()}

    def stop(self, wall_s: float) -> dict[str, Any]:
        self.sample()
        cpu0 = self._cpu0 or {}
        out: dict[str, Any] = {}
        for name, pid in self.roots.items():
            used = cpu_seconds(descendants(pid)) - cpu0.get(name, 0.0)
            out[name] = {
                "cpu_cores": used / wall_s if wall_s > 0 else 0.0,
                "rss_peak_mb": (self._peak or {}).get(name, 0.0),
                "processes": len(descendants(pid)),
            }
        return out


# --- Triton statistics -------------------------------------------------------------------


async def triton_stats(url: str, models: Sequence[str]) -> dict[str, Any]:
    """Raw statistics-extension counters per model (gRPC), for ``stats_delta``."""
    import tritonclient.grpc.aio as grpcaio

    client = grpcaio.InferenceServerClient(url.removeprefix("grpc://"))
    try:
        out = {}
        for model in models:
            raw = await client.get_inference_statistics(model, as_json=True)
            out[model] = (raw.get("model_stats") or [{}])[0]
        return out
    finally:
        await client.close()


def _count(d: dict[str, Any], *keys: str) -> tuple[int, int]:
    node: Any = d
    for key in keys:
        node = (node or {}).get(key, {})
    return int(node.get("count", 0) or 0), int(node.get("ns", 0) or 0)


def _count_delta(after: dict[str, Any], before: dict[str, Any], *keys: str) -> tuple[int, int]:
    """(count, ns) of one statistic over the measurement."""
    (n_a, ns_a), (n_b, ns_b) = _count(after, *keys), _count(before, *keys)
    return n_a - n_b, ns_a - ns_b


def stats_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Per model, over the measurement: requests, executions, mean batch, the batch-size
    distribution (executions per size) and mean queue / compute time per request."""
    out = {}
    for model, a in after.items():
        b = before.get(model, {})
        requests = int(a.get("inference_count", 0)) - int(b.get("inference_count", 0))
        executions = int(a.get("execution_count", 0)) - int(b.get("execution_count", 0))
        q_n, q_ns = _count_delta(a, b, "inference_stats", "queue")
        c_n, c_ns = _count_delta(a, b, "inference_stats", "compute_infer")
        out[model] = {
            "requests": requests,
            "executions": executions,
            "mean_batch": requests / executions if executions else 0.0,
            "batch_sizes": _batch_sizes(a, b),
            "queue_ms_per_request": q_ns / q_n / 1e6 if q_n else 0.0,
            "compute_ms_per_execution": c_ns / c_n / 1e6 if c_n else 0.0,
        }
    return out


def _batch_sizes(after: dict[str, Any], before: dict[str, Any]) -> dict[int, int]:
    def counts(d: dict[str, Any]) -> dict[int, int]:
        return {
            int(s["batch_size"]): int((s.get("compute_infer") or {}).get("count", 0) or 0)
            for s in d.get("batch_stats") or []
        }

    a, b = counts(after), counts(before)
    return {size: a[size] - b.get(size, 0) for size in sorted(a) if a[size] - b.get(size, 0)}


# --- output ------------------------------------------------------------------------------


def write_json(data: Any, path: Path) -> None:
    """Strict JSON: NaN (no sample, no ratio) is written as null."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_finite(data), indent=2, default=_jsonable, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "__dict__"):
        return vars(value)
    return str(value)


def plot_load(steps: Sequence[dict[str, Any]], path: Path, title: str = "") -> Path:
    """Latency percentiles (P50/P95/P99, log scale) against offered load, one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [s.get("offered_rate") or s.get("throughput", 0.0) for s in steps]
    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=100)
    for key, style in (("p50_ms", "o-"), ("p95_ms", "s-"), ("p99_ms", "^-")):
        ax.plot(x, [s[key] for s in steps], style, label=key.split("_")[0].upper())
    ax.set_xlabel("offered load (requests/s)")
    ax.set_ylabel("latency (ms)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    ax.set_title(title or "latency vs offered load")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def progress_bar(total: int | None, label: str) -> Any:
    """A rich progress bar on stderr; ``advance()`` once per finished request."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    bar = Progress(
        f"[bold]{label}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    return bar, bar.add_task(label, total=total)

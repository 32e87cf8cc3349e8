from __future__ import annotations

import math
import os
import random

import numpy as np
import pytest

from textgate.bench import report
from textgate.bench.load import Run, Sample


@pytest.mark.parametrize("q", [0, 1, 50, 90, 95, 99, 99.9, 100])
def test_percentile_matches_numpy_linear(q: float) -> None:
    rng = random.Random(q)
    values = [rng.expovariate(1.0) for _ in range(137)]
    assert report.percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_edges() -> None:
    assert math.isnan(report.percentile([], 50))
    assert report.percentile([4.0], 99) == 4.0
    assert report.percentile([1.0, 2.0], 50) == 1.5
    with pytest.raises(ValueError):
        report.percentile([1.0], 101)


def test_summarize_counts_errors_by_code_and_excludes_them_from_latency() -> None:
    samples = [Sample(0.0, 0.0, 0.010 * (i + 1), "ok") for i in range(98)]
    samples += [Sample(0.0, 0.0, 5.0, "503"), Sample(0.0, 0.0, 9.0, "timeout")]
    s = report.summarize(Run("closed", samples, wall_s=2.0, concurrency=4))
    assert s["errors"] == {"503": 1, "timeout": 1}
    assert s["error_rate"] == pytest.approx(0.02)
    assert s["throughput"] == pytest.approx(49.0)
    assert s["max_ms"] == pytest.approx(980.0)
    assert s["p50_ms"] == pytest.approx(495.0)


def test_spread_reports_median_and_range() -> None:
    assert report.spread([3.0, 1.0, 2.0, math.nan]) == {
        "median": 2.0,
        "min": 1.0,
        "max": 3.0,
        "n": 3,
    }


def test_stats_delta_batch_distribution_and_queue_time() -> None:
    def stats(count: int, ex: int, q_ns: int, b1: int, b4: int) -> dict:
        return {
            "inference_count": count,
            "execution_count": ex,
            "inference_stats": {
                "queue": {"count": count, "ns": q_ns},
                "compute_infer": {"count": ex, "ns": ex * 2_000_000},
            },
            "batch_stats": [
                {"batch_size": 1, "compute_infer": {"count": b1}},
                {"batch_size": 4, "compute_infer": {"count": b4}},
            ],
        }

    d = report.stats_delta({"m": stats(10, 10, 0, 10, 0)}, {"m": stats(30, 15, 40_000_000, 12, 3)})
    m = d["m"]
    assert (m["requests"], m["executions"], m["mean_batch"]) == (20, 5, 4.0)
    assert m["batch_sizes"] == {1: 2, 4: 3}
    assert m["queue_ms_per_request"] == pytest.approx(2.0)
    assert m["compute_ms_per_execution"] == pytest.approx(2.0)


def test_process_probe_sees_this_process() -> None:
    probe = report.ProcessProbe({"me": os.getpid()})
    probe.start()
    sum(i * i for i in range(200_000))
    out = probe.stop(wall_s=1.0)["me"]
    assert out["rss_peak_mb"] > 10 and out["cpu_cores"] >= 0 and out["processes"] >= 1


def test_plot_writes_png(tmp_path) -> None:  # type: ignore[no-untyped-def]
    steps = [
        {"offered_rate": r, "p50_ms": r, "p95_ms": 2 * r, "p99_ms": 3 * r} for r in (10, 20, 40)
    ]
    path = report.plot_load(steps, tmp_path / "p.png")
    assert path.read_bytes()[:4] == b"\x89PNG"

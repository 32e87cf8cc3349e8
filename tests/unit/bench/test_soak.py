"""The soak's judging: windows from records and samples, the ledger from an outbox file,
and which drifts break its bounds."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from textgate.bench import soak
from textgate.bench.soak import Bounds, Sample


def rows(p99s: list[float], rss: list[float], statuses: dict[str, int] | None = None) -> list[Any]:
    return [
        {"window": i, "start_s": 60.0 * i, "requests": 100, "statuses": statuses or {"200": 100},
         "p50_ms": p / 3, "p99_ms": p, "rss_mb": r, "open_files": 40, "threads": 20,
         "outbox_mb": 1.0}
        for i, (p, r) in enumerate(zip(p99s, rss, strict=True))
    ]  # fmt: skip


CLEAN = {"accepted": 400, "events": 400, "lost": 0, "duplicated": 0, "unexpected": 0}
BOUNDS = Bounds(warmup_s=60.0, window_s=60.0)


def test_windows_split_records_and_samples_by_time() -> None:
    t0 = 1000.0
    records = [(t0 + 1, 10.0, 200, "a"), (t0 + 2, 30.0, 422, "b"), (t0 + 61, 50.0, 0, "c")]
    samples = [Sample(t0 + 5, 100.0, 30, 10, 2**20), Sample(t0 + 65, 120.0, 31, 11, 2**21)]
    out = soak.windows(records, samples, t0, 60.0)
    assert [w["requests"] for w in out] == [2, 1]
    assert out[0]["statuses"] == {"200": 1, "422": 1} and out[1]["statuses"] == {"0": 1}
    assert out[0]["p99_ms"] is not None and out[1]["p99_ms"] is None  # nothing answered
    assert (out[1]["rss_mb"], out[1]["threads"], out[1]["outbox_mb"]) == (120.0, 11, 2.0)


def test_a_steady_run_passes_and_a_short_one_is_not_judged() -> None:
    steady = rows([100, 105, 98, 102, 101, 99], [200, 205, 206, 206, 207, 207])
    assert soak.violations(steady, CLEAN, BOUNDS) == ([], True)
    assert soak.violations(steady[:2], CLEAN, BOUNDS) == ([], False)


def test_growth_drift_lost_events_and_5xx_break_the_bounds() -> None:
    leaking = rows([100] * 6, [200, 205, 215, 225, 235, 245])  # +14 % after the warm-up
    found, _ = soak.violations(leaking, CLEAN, BOUNDS)
    assert len(found) == 1 and found[0].startswith("RSS grew")
    drifting = rows([100, 100, 100, 100, 160, 100], [200] * 6)
    found, _ = soak.violations(drifting, CLEAN, BOUNDS)
    assert len(found) == 1 and "P99 160 ms" in found[0]
    lost = CLEAN | {"lost": 3}
    failing = rows([100] * 6, [200] * 6, {"200": 98, "503": 1, "0": 1})
    found, _ = soak.violations(failing, lost, BOUNDS)
    assert found == [
        "lost: 3 events",
        "6 requests answered 5xx",
        "6 requests not answered (the client's errors: client_errors)",
    ]


def test_the_ledger_counts_events_by_request_id(tmp_path: Path) -> None:
    db = tmp_path / "events.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE events (payload TEXT)")
        for rid in ("soak-a-1", "soak-a-2", "soak-a-2", "soak-x-9", "other-1"):
            conn.execute("INSERT INTO events VALUES (?)", (json.dumps({"request_id": rid}),))
    records = [(0.0, 1.0, 200, "soak-a-1"), (0.0, 1.0, 200, "soak-a-2"),
               (0.0, 1.0, 200, "soak-a-3"), (0.0, 1.0, 422, "soak-a-4")]  # fmt: skip
    assert soak.ledger(records, db) == {
        "accepted": 3, "events": 4, "lost": 1, "duplicated": 1, "unexpected": 1,
    }  # fmt: skip


def test_the_report_is_drawn(tmp_path: Path) -> None:
    path = soak.plot(rows([100, 105, 98], [200, 205, 206]), tmp_path / "soak.png", "soak")
    assert path.stat().st_size > 10_000

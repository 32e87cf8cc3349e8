"""The soak's short version in CI (``make soak`` is the 20-minute one): Locust's real
process drives a real gateway and tritonserver with texts for both tasks, raw mail and the
hostile corpus; every accepted request must have exactly one event, nothing may be answered
5xx, and the report (per-window latency, RSS, files, threads, outbox) must be written.

One minute cannot judge drift (RSS growth, P99 flatness need windows after a warm-up on a
quiet box): those bounds are computed here but asserted only by ``make soak``.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from textgate.bench import soak

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]


def _mail(out: Path) -> Path:
    out.mkdir()
    for p in (ROOT / "tests" / "data" / "email").glob("*.eml"):
        shutil.copyfile(p, out / p.name)
    spec = importlib.util.spec_from_file_location(
        "hostile_generate", ROOT / "tests" / "data" / "hostile" / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, raw in module.cases().items():
        (out / f"hostile-{name}.eml").write_bytes(raw)
    return out


def test_a_short_soak_loses_nothing_and_reports(embedded_repo: Path, tmp_path: Path) -> None:
    plan = soak.Plan(
        locustfile=ROOT / "benchmarks" / "suite" / "locustfile.py",
        mail_dir=_mail(tmp_path / "mail"),
        tasks=("spam", "sentiment"),
        minutes=1.0,
        capacity_s=8.0,
        bounds=soak.Bounds(warmup_s=15.0, window_s=15.0),
    )
    out = tmp_path / "soak.json"
    report = soak.run(embedded_repo, plan, out)
    print("\nsoak:", json.dumps({k: v for k, v in report.items() if k != "windows"}))
    books = report["ledger"]
    assert books["accepted"] > 100 and books["events"] == books["accepted"]
    assert (books["lost"], books["duplicated"], books["unexpected"]) == (0, 0, 0)
    assert not [v for v in report["violations"] if "5xx" in v or "events" in v]
    rows = report["windows"]
    assert len(rows) >= 4 and all(r["requests"] > 0 for r in rows[:4])
    assert all(r["rss_mb"] and r["threads"] and r["open_files"] for r in rows[:4])
    # One full-suite run saw 3 of 6,484 requests get no answer (not reproduced alone, nor
    # with both cores busy; make soak fails on any): a connection-level error of at most 1
    # in 1,000 is tolerated here, and what the client saw is printed.
    unanswered = sum(r["statuses"].get("0", 0) for r in rows)
    assert unanswered <= books["accepted"] / 1000, report["client_errors"]
    statuses = {s for r in rows for s in r["statuses"]} - {"0"}
    assert "200" in statuses and statuses <= {"200", "413", "415", "422"}, statuses
    assert json.loads(out.read_text())["ledger"] == books
    assert out.with_suffix(".png").stat().st_size > 10_000
    assert report["drift_judged"]  # the bounds were computed (asserted by make soak only)

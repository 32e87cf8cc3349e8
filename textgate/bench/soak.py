"""The soak run (``make soak``; docs/benchmarks.md): hours of traffic squeezed into minutes.

A real tritonserver and a real gateway process (``textgate serve``), Locust driving the load
(``benchmarks/suite/locustfile.py`` in its soak mode: texts for every task, raw mail, the hostile
corpus). First the capacity is measured (closed loop), then the soak runs open loop at a
share of it (``load``, 0.7) for ``minutes``. Every ``sample_s`` the gateway's process tree
is read from /proc (RSS, open files, threads) with the outbox's size; every request's start,
latency and status come back from Locust. Per window (a minute by default) the report holds
requests, statuses, P50/P99, RSS, files, threads and outbox bytes — JSON and a PNG.

It fails (``violations``) on: any accepted request without exactly one event in the outbox
(by request id), an event for a request never sent, any 5xx or lost connection, and — once
at least two windows follow the warm-up — RSS growing more than ``rss_growth`` from the
first window after the warm-up to the last, or a window's P99 more than ``p99_spread`` away
from the median of those windows' P99s.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from textgate.bench.report import descendants, percentile, rss_mb, write_json

Record = tuple[float, float, int, str]  # start (epoch s), latency ms, status, request id


@dataclass(frozen=True)
class Bounds:
    warmup_s: float = 180.0
    window_s: float = 60.0
    rss_growth: float = 0.05  # RSS after the warm-up may grow at most this share
    p99_spread: float = 0.20  # each window's P99 within this share of their median


@dataclass
class Sample:
    t: float
    rss_mb: float
    open_files: int
    threads: int
    outbox_bytes: int


@dataclass
class Sampler:
    """Reads the gateway's process tree every ``interval_s`` in a thread until ``stop``."""

    pid: int
    outbox: Path
    interval_s: float = 2.0
    samples: list[Sample] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> Sampler:
        self._thread = threading.Thread(target=self._run, daemon=True, name="soak-sampler")
        self._thread.start()
        return self

    def stop(self) -> list[Sample]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        return self.samples

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.samples.append(sample(self.pid, self.outbox))


def sample(pid: int, outbox: Path) -> Sample:
    pids = descendants(pid)
    return Sample(
        t=time.time(),
        rss_mb=rss_mb(pids),
        open_files=sum(_count_fds(p) for p in pids),
        threads=sum(_threads(p) for p in pids),
        outbox_bytes=sum(
            f.stat().st_size for f in outbox.parent.glob(outbox.name + "*") if f.is_file()
        ),
    )


def _count_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _threads(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


# --- judging ----------------------------------------------------------------------------


def windows(
    records: Sequence[Record], samples: Sequence[Sample], t0: float, window_s: float
) -> list[dict[str, Any]]:
    """Per window from ``t0``: requests, statuses, P50/P99 of answered ones, process state."""
    n = 1 + int(max([r[0] - t0 for r in records] + [s.t - t0 for s in samples] + [0]) // window_s)
    out = []
    for i in range(n):
        lo, hi = t0 + i * window_s, t0 + (i + 1) * window_s
        recs = [r for r in records if lo <= r[0] < hi]
        smp = [s for s in samples if lo <= s.t < hi]
        answered = [r[1] for r in recs if r[2]]
        statuses = Counter(str(r[2]) for r in recs)
        out.append(
            {
                "window": i,
                "start_s": round(i * window_s, 1),
                "requests": len(recs),
                "statuses": dict(sorted(statuses.items())),
                "p50_ms": round(percentile(answered, 50), 1) if answered else None,
                "p99_ms": round(percentile(answered, 99), 1) if answered else None,
                "rss_mb": round(max(s.rss_mb for s in smp), 1) if smp else None,
                "open_files": max(s.open_files for s in smp) if smp else None,
                "threads": max(s.threads for s in smp) if smp else None,
                "outbox_mb": round(smp[-1].outbox_bytes / 2**20, 2) if smp else None,
            }
        )
    return out


def ledger(records: Sequence[Record], outbox: Path) -> dict[str, int]:
    """Accepted requests (200) against the outbox's events, by request id."""
    with sqlite3.connect(f"file:{outbox}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT json_extract(payload, '$.request_id') FROM events "
            "WHERE json_extract(payload, '$.request_id') LIKE 'soak-%'"
        ).fetchall()
    events = Counter(r[0] for r in rows)
    accepted = {r[3] for r in records if r[2] == 200}
    sent = {r[3] for r in records}
    return {
        "accepted": len(accepted),
        "events": sum(events.values()),
        "lost": len(accepted - set(events)),
        "duplicated": sum(n - 1 for n in events.values() if n > 1),
        "unexpected": len(set(events) - sent),
    }


def violations(
    rows: Sequence[dict[str, Any]], books: dict[str, int], bounds: Bounds
) -> tuple[list[str], bool]:
    """What breaks the soak's bounds, and whether the run was long enough to judge drift."""
    found = [f"{k}: {books[k]} events" for k in ("lost", "duplicated", "unexpected") if books[k]]
    failed = sum(n for r in rows for s, n in r["statuses"].items() if int(s) >= 500)
    if failed:
        found.append(f"{failed} requests answered 5xx")
    unanswered = sum(n for r in rows for s, n in r["statuses"].items() if int(s) == 0)
    if unanswered:
        found.append(f"{unanswered} requests not answered (the client's errors: client_errors)")
    after = [r for r in rows if r["start_s"] >= bounds.warmup_s and r["requests"]]
    after = after[:-1] if len(after) > 2 else after  # the last window is cut short by the stop
    if len(after) < 2:
        return found, False
    first, last = after[0]["rss_mb"], after[-1]["rss_mb"]
    if first and last and (last - first) / first > bounds.rss_growth:
        found.append(f"RSS grew {100 * (last - first) / first:.1f} % after the warm-up")
    p99s = [r["p99_ms"] for r in after if r["p99_ms"] is not None]
    mid = statistics.median(p99s)
    worst = max(p99s, key=lambda p: abs(p - mid))
    if mid > 0 and abs(worst - mid) / mid > bounds.p99_spread:
        found.append(f"a window's P99 {worst:.0f} ms is {100 * abs(worst - mid) / mid:.0f} % "
                     f"from the median {mid:.0f} ms")  # fmt: skip
    return found, True


def plot(rows: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["start_s"] / 60 for r in rows]
    fig, axes = plt.subplots(3, 1, figsize=(7, 7), dpi=100, sharex=True)
    for key in ("p50_ms", "p99_ms"):
        axes[0].plot(x, [r[key] for r in rows], "o-", label=key.split("_")[0].upper())
    axes[0].set_ylabel("latency (ms)")
    axes[1].plot(x, [r["rss_mb"] for r in rows], "o-", label="RSS (MB)")
    axes[1].set_ylabel("gateway RSS (MB)")
    axes[2].plot(x, [r["open_files"] for r in rows], "o-", label="open files")
    axes[2].plot(x, [r["threads"] for r in rows], "s-", label="threads")
    axes[2].plot(x, [r["outbox_mb"] for r in rows], "^-", label="outbox (MB)")
    axes[2].set_xlabel("minutes")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    axes[0].set_title(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


# --- the run ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    locustfile: Path
    mail_dir: Path
    tasks: tuple[str, ...]
    minutes: float = 20.0
    load: float = 0.7
    capacity_s: float = 20.0
    bounds: Bounds = field(default_factory=Bounds)


def locust(
    plan: Plan, url: str, seconds: float, rate: float, users: int, ledger_path: Path
) -> list[Record]:
    """One Locust run (a subprocess: gevent patches the process it runs in)."""
    env = {
        **os.environ,
        "TEXTGATE_LOCUST_MODE": "soak",
        "TEXTGATE_LOCUST_TASKS": ",".join(plan.tasks),
        "TEXTGATE_LOCUST_MAIL_DIR": str(plan.mail_dir),
        "TEXTGATE_LOCUST_RATE": str(rate),
        "TEXTGATE_LOCUST_USERS": str(users),
        "TEXTGATE_LOCUST_LEDGER": str(ledger_path),
        "TEXTGATE_LOCUST_ID_PREFIX": f"soak-{ledger_path.stem}-",  # distinct across runs
    }
    cmd = [sys.executable, "-m", "locust", "-f", str(plan.locustfile), "--headless",
           "-u", str(users), "-r", str(users), "-t", f"{max(1, round(seconds))}s",
           "--host", url, "--only-summary", "--stop-timeout", "30",
           "--loglevel", "WARNING"]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if not ledger_path.exists():
        why = done.stderr[-2000:]
        raise RuntimeError(f"locust wrote no ledger (exit {done.returncode}): {why}")
    return [tuple(r) for r in json.loads(ledger_path.read_text())]  # type: ignore[misc]


def soak(plan: Plan, url: str, gateway_pid: int, outbox: Path, work: Path) -> dict[str, Any]:
    """Capacity, then the open-loop soak against a running gateway; the report."""
    closed = locust(plan, url, plan.capacity_s, 0.0, 8, work / "capacity.json")
    capacity = sum(1 for r in closed if r[2] == 200) / plan.capacity_s
    rate = max(1.0, plan.load * capacity)
    users = max(4, math.ceil(rate * 0.5))  # each user's pace (2 s) far above a P99
    sampler = Sampler(gateway_pid, outbox, interval_s=min(5.0, plan.bounds.window_s / 6)).start()
    t0 = time.time()
    records = locust(plan, url, plan.minutes * 60, rate, users, work / "soak.json")
    errors = client_errors(work / "soak.json")
    samples = sampler.stop()
    time.sleep(1.0)  # the last answers' events are committed before they are answered
    rows = windows(records, samples, t0, plan.bounds.window_s)
    books = ledger(records + closed, outbox)
    found, judged = violations(rows, books, plan.bounds)
    return {
        "capacity_rps": round(capacity, 1),
        "offered_rps": round(rate, 1),
        "users": users,
        "minutes": plan.minutes,
        "tasks": list(plan.tasks),
        "bounds": asdict(plan.bounds),
        "ledger": books,
        "windows": rows,
        "drift_judged": judged,
        "violations": found,
        "client_errors": errors[:20],
        "passed": not found,
    }


def client_errors(ledger_path: Path) -> list[list[str]]:
    """[request id, what the client saw] of each request that got no answer (the locustfile
    writes them beside its ledger)."""
    path = ledger_path.with_suffix(".errors.json")
    return list(json.loads(path.read_text())) if path.exists() else []


def start_gateway(config: dict[str, Any], work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``textgate serve`` with ``config`` (its port set), ready; its log in ``work``."""
    path = work / "gateway.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    log = (work / "gateway.log").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "textgate", "serve", "--config", str(path)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{config['gateway']['port']}"
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the gateway exited: {(work / 'gateway.log').read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError("the gateway was not ready after 120 s")
        time.sleep(0.3)


def gateway_config(grpc_url: str, port: int, outbox: Path) -> dict[str, Any]:
    """Outbox only (no broker), every event kept, so the ledger can be read from the file."""
    return {
        "gateway": {"host": "127.0.0.1", "port": port, "parse_workers": 2},
        "client": {"endpoints": [grpc_url]},
        "events": {"outbox_path": str(outbox), "retain_published": 100_000_000},
    }


def run(repository: Path, plan: Plan, out: Path) -> dict[str, Any]:
    """Triton on ``repository`` and a gateway in front, soaked; the report written to ``out``
    (JSON) and beside it (PNG). Both servers are always stopped."""
    from textgate.triton import TritonServer, free_port

    work = Path(tempfile.mkdtemp(prefix="textgate-soak-"))
    with TritonServer(repository) as triton:
        outbox = work / "events.sqlite3"
        proc, url = start_gateway(gateway_config(triton.grpc_url, free_port(), outbox), work)
        try:
            report = soak(plan, url, proc.pid, outbox, work)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    report_files(report, out)
    return report


def report_files(report: dict[str, Any], out: Path) -> tuple[Path, Path]:
    write_json(report, out)
    title = (
        f"soak: {report['offered_rps']} req/s ({report['minutes']} min), "
        f"{'passed' if report['passed'] else 'FAILED'}"
    )
    return out, plot(report["windows"], out.with_suffix(".png"), title)

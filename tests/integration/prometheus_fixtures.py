"""A real Prometheus (Debian's ``prometheus`` binary) scraping given targets every second,
with textgate's recording and alert rules loaded; always stopped by its context manager."""

from __future__ import annotations

import contextlib
import math
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml
from deploy_checks import RULE_FILES

from textgate.triton import free_port


class RunningPrometheus:
    def __init__(self, url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.url, self.proc, self.log = url, proc, log

    def query(self, expr: str) -> list[dict[str, Any]]:
        r = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10)
        body = r.json()
        assert body.get("status") == "success", f"{expr!r}: {body}"
        return list(body["data"]["result"])

    def finite(self, expr: str) -> list[float]:
        """The query's finite sample values (NaN from 0/0 shows as "No data" too)."""
        values = [float(s["value"][1]) for s in self.query(expr)]
        return [v for v in values if math.isfinite(v)]

    def wait(self, expr: str, timeout_s: float = 30.0) -> list[float]:
        deadline = time.monotonic() + timeout_s
        while True:
            values = self.finite(expr)
            if values or time.monotonic() > deadline:
                return values
            time.sleep(0.5)


@contextlib.contextmanager
def run_prometheus(jobs: Mapping[str, Sequence[str]], tmp: Path) -> Iterator[RunningPrometheus]:
    """``jobs``: job name -> host:port targets (all scraped at /metrics)."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus not found: apt-get install prometheus (scripts/bootstrap.sh)"
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in RULE_FILES],
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": list(targets)}]}
            for job, targets in jobs.items()
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    port = free_port()
    log = tmp / "prometheus.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [binary, f"--config.file={tmp / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    prom = RunningPrometheus(f"http://127.0.0.1:{port}", proc, log)
    try:
        _wait_ready(prom)
        yield prom
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def _wait_ready(prom: RunningPrometheus, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if prom.proc.poll() is not None:
            raise RuntimeError(f"prometheus exited: {prom.log.read_text()[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{prom.url}/-/ready", timeout=1).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"prometheus not ready: {prom.log.read_text()[-2000:]}")
        time.sleep(0.2)

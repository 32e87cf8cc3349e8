"""Server processes for the integration tests, started on free ports and always stopped:
tritonserver with the test settings, Prometheus, ``textgate serve``, and what any such
process needs (wait until its HTTP endpoint answers, stop it politely, then firmly).

Importable by any test module (a conftest is not); the fixtures that use it live in
``conftest.py`` and in the test modules that need a server of their own.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.helpers.deploy_checks import RULE_FILES
from tests.helpers.triton_settings import server_config
from textgate.triton import TritonServer, free_port

# --- any server process --------------------------------------------------------------------


def debian_tool(name: str) -> str:
    """A binary from a Debian package that scripts/bootstrap.sh installs (no skip: CI has it)."""
    path = shutil.which(name)
    assert path, f"{name} is not installed: scripts/bootstrap.sh installs it (TEST_PACKAGES)"
    return path


def wait_http_ready(
    proc: subprocess.Popen[bytes], log: Path, url: str, *, what: str, timeout_s: float
) -> None:
    """Until ``url`` answers 200; the log's tail in the error if the process dies or is late."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=2).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready: {log.read_text()[-3000:]}")
        time.sleep(0.2)


def stop_process(
    proc: subprocess.Popen[Any], *, sig: int = signal.SIGTERM, timeout_s: float = 10
) -> None:
    """``sig``, then SIGKILL if it has not exited within ``timeout_s``."""
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


# --- tritonserver --------------------------------------------------------------------------


def triton(
    repo: Path, *, api_key: str | None = None, models: Sequence[str] | None = None, **ports: int
) -> TritonServer:
    """A tritonserver for ``repo`` with the test settings, not started: ``with`` it to start,
    wait until ready and stop (stopped too if it never becomes ready)."""
    return TritonServer(repo, models=models, config=server_config(**ports), api_key=api_key)


def start_triton(repo: Path, **kw: Any) -> TritonServer:
    """``triton(...)`` started and ready, for tests that stop and restart it themselves."""
    return triton(repo, **kw).__enter__()


# --- textgate serve ------------------------------------------------------------------------


@contextlib.contextmanager
def serve_cli(cmd: list[str], env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``textgate serve`` (``cmd``) on the port it prints; killed on exit if still running."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "textgate gateway on http://" in line, line + (
            proc.stderr.read() if proc.stderr else ""
        )
        yield proc, line.split(" on ", 1)[1].strip()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


# --- Prometheus ----------------------------------------------------------------------------


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
def prometheus(
    config_file: Path, tmp: Path, *, ready_timeout_s: float = 30.0
) -> Iterator[RunningPrometheus]:
    """Debian's ``prometheus`` on ``config_file``, its data and log under ``tmp``, ready."""
    binary = debian_tool("prometheus")
    port = free_port()
    log = tmp / "prometheus.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [binary, f"--config.file={config_file}",
             f"--storage.tsdb.path={tmp / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    prom = RunningPrometheus(f"http://127.0.0.1:{port}", proc, log)
    try:
        wait_http_ready(
            proc, log, f"{prom.url}/-/ready", what="prometheus", timeout_s=ready_timeout_s
        )
        yield prom
    finally:
        stop_process(proc)


@contextlib.contextmanager
def run_prometheus(jobs: Mapping[str, Sequence[str]], tmp: Path) -> Iterator[RunningPrometheus]:
    """Scraping ``jobs`` (job name -> host:port targets, at /metrics) every second, with
    textgate's recording and alert rules loaded."""
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in RULE_FILES],
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": list(targets)}]}
            for job, targets in jobs.items()
        ],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    with prometheus(tmp / "prometheus.yml", tmp) as prom:
        yield prom

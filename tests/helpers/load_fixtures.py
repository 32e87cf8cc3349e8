"""Gateways as real processes (``textgate serve``) and the load the fault and scale-out runs
put on them: a closed loop to measure capacity, an open loop at a fixed rate, and the
accounting of what was accepted against what reached the broker."""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.helpers.servers import stop_process, wait_http_ready
from textgate.triton import free_port

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "textgate.events"


@dataclasses.dataclass
class Gateway:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path
    config_path: Path

    def metric(self, name: str, labels: str = "") -> float:
        text = httpx.get(f"{self.url}/metrics", timeout=5).text
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and labels in line and not line.startswith(name + "_"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def drained(self, timeout_s: float = 30.0) -> None:
        """Until the outbox owes the broker nothing."""
        deadline = time.monotonic() + timeout_s
        while self.metric("textgate_outbox_depth") > 0:
            if time.monotonic() > deadline:
                raise AssertionError(f"the outbox of {self.url} did not drain")
            time.sleep(0.2)


def gateway_config(
    tmp: Path, name: str, endpoints: list[str], bootstrap: str, port: int
) -> dict[str, Any]:
    return {
        "gateway": {"host": "127.0.0.1", "port": port, "max_in_flight": 16, "max_queue": 256},
        "client": {
            "endpoints": endpoints, "retries": 1, "timeout_s": 10.0,
            "health_interval_s": 0.2, "reconnect_backoff_ms": 200,
        },
        "events": {
            "outbox_path": str(tmp / f"{name}.sqlite3"),
            "kafka": {"bootstrap_servers": [bootstrap], "topic": TOPIC, "linger_ms": 5,
                      "retry_backoff_min_s": 0.05, "retry_backoff_max_s": 0.5,
                      "delivery_timeout_s": 5},
        },
    }  # fmt: skip


def start_gateway(config: dict[str, Any], tmp: Path, name: str) -> Gateway:
    """``textgate serve`` on ``config`` (written to ``<name>.yaml``), ready; log appended."""
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    log = tmp / f"{name}.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from textgate.cli import main; raise SystemExit(main())",
             "serve", "--config", str(path)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
    gw = Gateway(f"http://127.0.0.1:{config['gateway']['port']}", proc, log, path)
    try:
        wait_http_ready(proc, log, f"{gw.url}/readyz", what="gateway", timeout_s=90)
    except BaseException:
        stop_process(proc, timeout_s=5)
        raise
    return gw


@contextlib.contextmanager
def gateway_process(
    tmp: Path, name: str, endpoints: list[str], bootstrap: str, **over: Any
) -> Iterator[Gateway]:
    config = gateway_config(tmp, name, endpoints, bootstrap, free_port())
    for section, values in over.items():
        config[section] = {**config.get(section, {}), **values}
    gw = start_gateway(config, tmp, name)
    try:
        yield gw
    finally:
        if gw.proc.poll() is None:
            stop_process(gw.proc, timeout_s=20)


def kill9(gw: Gateway) -> None:
    gw.proc.send_signal(signal.SIGKILL)
    gw.proc.wait(timeout=10)


@dataclasses.dataclass
class Outcome:
    status: int
    request_id: str = ""
    error: str = ""


def send(client: httpx.Client, url: str, i: int, *, tag: str = "") -> Outcome:
    """One classification; with ``tag`` the client names the request (``{tag}-{i}``), so
    an event committed for a request whose answer was lost can still be told apart."""
    headers = {"X-Request-ID": f"{tag}-{i}"} if tag else {}
    try:
        r = client.post(
            f"{url}/v1/classify/spam", json={"text": f"message number {i}: hi"}, headers=headers
        )
    except httpx.HTTPError as exc:
        return Outcome(0, request_id=headers.get("X-Request-ID", ""), error=type(exc).__name__)
    if r.status_code != 200:
        return Outcome(r.status_code, headers.get("X-Request-ID", ""), error=r.text[:300])
    return Outcome(200, request_id=r.json()["request_id"])


def capacity(
    gateways: list[Gateway], seconds: float = 3.0, concurrency: int = 6
) -> tuple[float, list[str]]:
    """Closed-loop requests/s through the gateways, and the request ids answered."""
    stop = time.monotonic() + seconds
    ids: list[str] = []

    def loop(k: int) -> None:
        with httpx.Client(timeout=30) as c:
            while time.monotonic() < stop:
                outcome = send(c, gateways[k % len(gateways)].url, k)
                assert outcome.status == 200, outcome
                ids.append(outcome.request_id)

    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(loop, range(concurrency)))
    return len(ids) / seconds, ids


class OpenLoop:
    """Requests at a fixed rate whatever the latency (a pool sends them), alternating gateways."""

    def __init__(self, gateways: list[Gateway], rate: float, *, tag: str = "") -> None:
        self.gateways, self.interval, self.tag = gateways, 1.0 / rate, tag
        self.stop = threading.Event()
        self.futures: list[concurrent.futures.Future[Outcome]] = []
        self.pool = concurrent.futures.ThreadPoolExecutor(32)
        self.local = threading.local()
        self.thread = threading.Thread(target=self._run, daemon=True, name="open-loop")

    def _client(self) -> httpx.Client:
        if not hasattr(self.local, "c"):
            self.local.c = httpx.Client(timeout=30)
        return self.local.c  # type: ignore[no-any-return]

    def _run(self) -> None:
        i, t0 = 0, time.monotonic()
        while not self.stop.is_set():
            url = self.gateways[i % len(self.gateways)].url
            self.futures.append(
                self.pool.submit(lambda u=url, n=i: send(self._client(), u, n, tag=self.tag))
            )
            i += 1
            time.sleep(max(0.0, t0 + i * self.interval - time.monotonic()))

    def __enter__(self) -> OpenLoop:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join(timeout=10)
        self.pool.shutdown(wait=True)

    def outcomes(self) -> list[Outcome]:
        return [f.result() for f in self.futures]


def ledger(outcomes: list[Outcome], keys: Counter[str]) -> dict[str, int]:
    """Accepted requests against the broker's events by request id: what was lost (an
    accepted request without an event), duplicated, or unexpected (an event for a request
    never sent; one sent but unanswered — the gateway died after its commit — is fine)."""
    accepted = {o.request_id for o in outcomes if o.status == 200}
    sent = {o.request_id for o in outcomes if o.request_id}
    return {
        "accepted": len(accepted),
        "refused": sum(1 for o in outcomes if o.status != 200),
        "events": sum(keys.values()),
        "lost": len(accepted - set(keys)),
        "duplicated": sum(n - 1 for n in keys.values() if n > 1),
        "unexpected": len(set(keys) - sent),
    }

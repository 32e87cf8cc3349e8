"""Scale-out on one machine: two tritonserver processes, two gateway processes (``textgate
serve``), one Kafka-protocol broker (Tansu). One Triton is killed under open-loop load at
70 % of the measured capacity and restarted on its ports: no request may fail (retry on the
other endpoint, ejection, re-admission), and the topic must hold every answered request's
event exactly once by request id (each gateway has its own outbox).

The load is small and bounded (2 shared cores): capacity from 3 s of closed-loop load, then
at most 60 requests/s for about 12 s. The numbers are printed (run with -s) and written to
``$TEXTGATE_SCALE_REPORT`` when set (docs/deploy.md quotes them).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from kafka_fixtures import TansuBroker, tansu_broker  # noqa: F401  (the fixture)
from servers import start_triton, stop_process, wait_http_ready

from textgate.triton import TritonServer, free_port

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.kafka]

ROOT = Path(__file__).resolve().parents[2]
TOPIC = "textgate.events"
MAX_RATE = 60.0


@dataclasses.dataclass
class Gateway:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def metric(self, name: str, labels: str = "") -> float:
        text = httpx.get(f"{self.url}/metrics", timeout=5).text
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and labels in line and not line.startswith(name + "_"):
                total += float(line.rsplit(" ", 1)[1])
        return total


@contextlib.contextmanager
def gateway_process(
    tmp: Path, name: str, endpoints: list[str], bootstrap: str
) -> Iterator[Gateway]:
    port = free_port()
    config = {
        "gateway": {"host": "127.0.0.1", "port": port, "max_in_flight": 16, "max_queue": 256},
        "client": {
            "endpoints": endpoints, "retries": 1, "timeout_s": 10.0,
            "health_interval_s": 0.2, "reconnect_backoff_ms": 200,
        },
        "events": {
            "outbox_path": str(tmp / f"{name}.sqlite3"),
            "kafka": {"bootstrap_servers": [bootstrap], "topic": TOPIC, "linger_ms": 5,
                      "retry_backoff_min_s": 0.05, "retry_backoff_max_s": 0.5},
        },
    }  # fmt: skip
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    log = tmp / f"{name}.log"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from textgate.cli import main; raise SystemExit(main())",
             "serve", "--config", str(path)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
        )  # fmt: skip
    gw = Gateway(f"http://127.0.0.1:{port}", proc, log)
    try:
        wait_http_ready(proc, log, f"{gw.url}/readyz", what="gateway", timeout_s=90)
        yield gw
    finally:
        stop_process(proc, timeout_s=20)


@dataclasses.dataclass
class Outcome:
    status: int
    request_id: str = ""
    error: str = ""


def send(client: httpx.Client, url: str, i: int) -> Outcome:
    try:
        r = client.post(f"{url}/v1/classify/spam", json={"text": f"message number {i}: hi"})
    except httpx.HTTPError as exc:
        return Outcome(0, error=f"{type(exc).__name__}: {exc}")
    if r.status_code != 200:
        return Outcome(r.status_code, error=r.text[:300])
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

    def __init__(self, gateways: list[Gateway], rate: float) -> None:
        self.gateways, self.interval = gateways, 1.0 / rate
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
            self.futures.append(self.pool.submit(lambda u=url, n=i: send(self._client(), u, n)))
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


def triton_successes(server: TritonServer) -> float:
    try:
        text = httpx.get(server.metrics_url, timeout=2).text
    except httpx.HTTPError:
        return 0.0
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("nv_inference_request_success{")
    )


def test_kill_one_triton_under_load_fails_nothing_and_loses_no_event(
    embedded_repo: Path,
    tansu_broker: TansuBroker,  # noqa: F811
    tmp_path: Path,
) -> None:
    tritons = [start_triton(embedded_repo), start_triton(embedded_repo)]
    report: dict[str, Any] = {}
    try:
        endpoints = [t.grpc_url for t in tritons]
        with (
            gateway_process(tmp_path, "gw-a", endpoints, tansu_broker.bootstrap) as a,
            gateway_process(tmp_path, "gw-b", endpoints, tansu_broker.bootstrap) as b,
        ):
            gateways = [a, b]
            rps, ids = capacity(gateways)
            report["capacity_rps"] = round(rps, 1)
            rate = min(MAX_RATE, 0.7 * report["capacity_rps"])
            report["load_rps"] = round(rate, 1)
            victim = tritons[0]
            with OpenLoop(gateways, rate) as load:
                time.sleep(3.0)
                assert victim.pid is not None
                os.killpg(victim.pid, signal.SIGKILL)
                killed_at = time.monotonic()
                time.sleep(2.0)
                victim.stop()
                ports = {"http_port": victim.http_port, "grpc_port": victim.grpc_port,
                         "metrics_port": victim.metrics_port}  # fmt: skip
                tritons[0] = victim = start_triton(embedded_repo, **ports)
                back_at = time.monotonic()
                while triton_successes(victim) == 0 and time.monotonic() - back_at < 30:
                    time.sleep(0.05)
                first_at = time.monotonic()
                time.sleep(2.0)  # traffic on both again
            outcomes = load.outcomes()
            report["requests"] = len(outcomes)
            report["down_s"] = round(back_at - killed_at, 2)
            report["return_to_first_request_s"] = round(first_at - back_at, 2)
            report["served_by_returned_replica"] = triton_successes(victim)
            failed = [o for o in outcomes if o.status != 200]
            report["failed"] = len(failed)
            report["retries"] = sum(g.metric("textgate_triton_retries") for g in gateways)
            for g in gateways:  # every event published before reading the topic
                deadline = time.monotonic() + 30
                while g.metric("textgate_outbox_depth") > 0 and time.monotonic() < deadline:
                    time.sleep(0.2)
        ids += [o.request_id for o in outcomes if o.status == 200]
        # Kafka keys are the server's event ids; the request id is a field of each event.
        keys = tansu_broker.keys(TOPIC, field="request_id")
        report["events_expected"] = len(ids)
        report["events_lost"] = len(set(ids) - set(keys))
        report["events_duplicated"] = sum(n - 1 for n in keys.values() if n > 1)
        report["events_unexpected"] = len(set(keys) - set(ids))
    finally:
        for t in tritons:
            t.stop()
    print("\nscale-out:", json.dumps(report))
    if os.environ.get("TEXTGATE_SCALE_REPORT"):
        Path(os.environ["TEXTGATE_SCALE_REPORT"]).write_text(json.dumps(report, indent=2))
    assert failed == [], failed[:5]
    assert report["served_by_returned_replica"] > 0, "the restarted Triton got no traffic"
    assert len(set(ids)) == len(ids) > report["requests"] > 0  # server ids, all distinct
    assert (report["events_lost"], report["events_duplicated"], report["events_unexpected"]) == (
        0,
        0,
        0,
    ), report

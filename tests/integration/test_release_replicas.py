"""Release operations across two real Triton replicas behind one gateway (issue 13, 3):
``add`` loads on both; a replica that is down during ``add``/``promote`` misses them, and
when it comes back it is reconciled (the new version loaded) before it gets traffic again;
a replica that cannot be reconciled stays out of rotation with the reason. A light load
runs throughout: no request may fail."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.gateway_fixtures import run_gateway
from tests.helpers.servers import start_triton
from textgate import release
from textgate.triton import TritonServer

pytestmark = [pytest.mark.slow, pytest.mark.triton]

TOKEN = "t" * 32
KEY = "k" * 32


def start(repo: Path, key: str = KEY, **ports: int) -> TritonServer:
    return start_triton(repo, api_key=key, **ports)


def restart(server: TritonServer, repo: Path, key: str = KEY) -> TritonServer:
    """The replica comes back on its ports with the models it started with (v1 only)."""
    server.stop()
    ports = {"http_port": server.http_port, "grpc_port": server.grpc_port,
             "metrics_port": server.metrics_port}  # fmt: skip
    return start_triton(repo, api_key=key, models=server.models, **ports)


def ready_models(server: TritonServer) -> set[str]:
    return {n for n, s in server.model_states().items() if s.state == "READY"}


class Load:
    def __init__(self, url: str) -> None:
        self.url, self.stop, self.codes = url, threading.Event(), Counter[int]()
        self.errors: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as c:
            while not self.stop.is_set():
                r = c.post("/v1/classify/spam", json={"text": "hello there"})
                self.codes[r.status_code] += 1
                if r.status_code != 200:
                    self.errors.append(r.text[:300])
                time.sleep(0.05)

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


def endpoint(c: httpx.Client, grpc_url: str) -> dict[str, Any]:
    eps = c.get("/v1/models").json()["endpoints"]
    return next(e for e in eps if e["endpoint"] == grpc_url)


def until(cond: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def admin(c: httpx.Client, op: str, body: dict[str, Any]) -> dict[str, Any]:
    r = c.post(f"/admin/release/{op}", json=body, headers={"Authorization": f"Bearer {TOKEN}"},
               timeout=120)  # fmt: skip
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_switches_reach_every_replica_and_a_returning_one_is_reconciled_first(
    tiny_bundles: dict[str, Path], tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    release.Releases(repo).add(tiny_bundles["spam"], "spam")  # v1 serves
    a, b = start(repo), start(repo)
    report: dict[str, Any] = {}
    try:
        cfg = {
            "gateway": {"admin_token": TOKEN},
            "client": {"health_interval_s": 0.2, "reconnect_backoff_ms": 200},
            "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
            "release": {"repository": str(repo), "triton_http": f"{a.http_url},{b.http_url}",
                        "triton_api_key": KEY},
        }  # fmt: skip
        with (
            run_gateway(cfg, [a.grpc_url, b.grpc_url]) as gw,
            gw.client() as c,
            Load(gw.url) as load,
        ):
            v2 = admin(
                c,
                "add",
                {
                    "bundle": str(shutil.copytree(tiny_bundles["spam"], tmp_path / "v2")),
                    "task": "spam",
                },
            )
            names2 = set(release.version_models(repo, "spam", v2["version"]))
            assert names2 <= ready_models(a) and names2 <= ready_models(b)  # both replicas

            assert b.pid is not None
            os.killpg(b.pid, signal.SIGKILL)
            until(lambda: not endpoint(c, b.grpc_url)["healthy"], 20, "b not ejected")
            v3 = admin(
                c,
                "add",
                {
                    "bundle": str(shutil.copytree(tiny_bundles["spam"], tmp_path / "v3")),
                    "task": "spam",
                },
            )
            admin(c, "promote", {"task": "spam", "force": True, "reason": "replica test"})
            names3 = set(release.version_models(repo, "spam", v3["version"]))
            assert names3 <= ready_models(a)

            b = restart(b, repo)  # back with v1 only: it missed v2, v3 and the promote
            back = time.monotonic()
            seen: list[set[str]] = []

            def admitted() -> bool:
                if not endpoint(c, b.grpc_url)["healthy"]:
                    return False
                seen.append(ready_models(b))  # what b holds when it is first in rotation
                return True

            until(admitted, 60, "b not re-admitted")
            report["return_to_admitted_s"] = round(time.monotonic() - back, 2)
            assert names2 | names3 <= seen[0], "b was admitted before it was reconciled"
            time.sleep(1.0)

            b = restart(b, repo, key="z" * 32)  # cannot be controlled with our key
            time.sleep(2.0)
            ep = endpoint(c, b.grpc_url)
            assert not ep["healthy"] and "not reconciled" in ep["last_error"], ep
            assert c.get("/readyz").status_code == 200  # a serves alone
        report["requests"] = sum(load.codes.values())
        print("\nrelease replicas:", report, dict(load.codes))
        assert load.errors == [] and report["requests"] > 0
    finally:
        a.stop()
        b.stop()

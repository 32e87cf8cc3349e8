"""Group commit under a crash (issue 12 §3): the gateway killed between the outbox commit
and the responses. Every answered request has exactly one event, and a client that
retries with the same request id and body gets the same verdict and no second event."""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.helpers.servers import serve_cli
from textgate.triton import TritonServer

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.timeout(300)]

# run as a script by path: importing it would patch the outbox of this process
KILLER = Path(__file__).resolve().parents[1] / "helpers" / "kill_after_commit.py"
N = 10


def _config(tmp: Path) -> Path:
    cfg = {
        "gateway": {"parse_workers": 0},
        "policy": {
            "tasks": [
                {"task": "spam", "kind": "threshold", "positive_label": "spam"},
                {"task": "sentiment", "kind": "label"},
            ]
        },
        "events": {"outbox_path": str(tmp / "events.sqlite3")},
    }
    path = tmp / "textgate.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _post(url: str, i: int) -> httpx.Response | None:
    body = {"text": f"request {i}: " + "claim your prize " * (i % 4)}
    try:
        return httpx.post(
            f"{url}/v1/classify/spam", json=body, headers={"X-Request-ID": f"k-{i}"}, timeout=60
        )
    except httpx.TransportError:  # the gateway died before answering this one
        return None


def _events(db: Path) -> collections.Counter[str]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT payload FROM events").fetchall()
    finally:
        conn.close()
    return collections.Counter(json.loads(r[0])["request_id"] for r in rows)


def _stored(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute("SELECT client_id, response FROM requests").fetchall()
    finally:
        conn.close()
    return {cid: json.loads(resp) for cid, resp in rows}


def _verdict(results: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["label"], r["action"], r["score"], r["request_id"]) for r in results]


def test_killed_between_commit_and_responses(triton_server: TritonServer, tmp_path: Path) -> None:
    path = _config(tmp_path)
    db = tmp_path / "events.sqlite3"
    args = ["serve", "--config", str(path), "--triton", triton_server.grpc_url, "--port", "0"]
    env = {**os.environ, "COLUMNS": "200", "KILL_AFTER_PUTS": "4"}
    killer = [sys.executable, str(KILLER), *args]
    with serve_cli(killer, env) as (proc, url):
        first = {i: _post(url, i) for i in range(2)}  # answered one by one, then the rest
        with concurrent.futures.ThreadPoolExecutor(N) as pool:
            rest = dict(
                zip(range(2, N), pool.map(lambda i: _post(url, i), range(2, N)), strict=True)
            )
        assert proc.wait(timeout=60) == 17  # died in the writer, just after a commit
    answered = {i: r for i, r in {**first, **rest}.items() if r is not None}
    assert all(r.status_code == 200 for r in answered.values())
    assert set(range(2)) <= set(answered) and len(answered) < N  # some never answered
    events = _events(db)
    for i in answered:
        assert events[f"k-{i}"] == 1  # every answered request: exactly one event
    committed = _stored(db)  # requests whose events committed, answered or not
    assert len(committed) >= 4 and all(events[cid] == 1 for cid in committed)

    plain = [sys.executable, "-m", "textgate.cli", *args]
    with serve_cli(plain, env) as (_proc, url):
        again = {i: _post(url, i) for i in range(N)}
    for i, r in again.items():
        assert r is not None and r.status_code == 200, r
        results = r.json()["results"]
        cid = f"k-{i}"
        if cid in committed:  # the verdict given (or about to be given) before the crash
            assert r.headers.get("x-idempotent-replay") == "true"
            assert _verdict(results) == _verdict(committed[cid])
        if i in answered:
            assert _verdict(results) == _verdict(answered[i].json()["results"])
    after = _events(db)
    assert all(after[f"k-{i}"] == 1 for i in range(N))  # no second event for any retry

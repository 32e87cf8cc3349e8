"""The front door on a real uvicorn socket (no Triton needed): oversized heads, slow-loris
heads and bodies, silent and idle connections, the connection cap, and metric labels for
unknown tasks. Counts and times are bounded; each bound is a multiple of the configured
deadline, with room for a shared 2-core machine."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.helpers.gateway_fixtures import RunningGateway, run_gateway

DEADLINE_S = 1.0
SLACK = 4.0  # a connection must be closed within SLACK x its deadline


@pytest.fixture(scope="module")
def gateway() -> Iterator[RunningGateway]:
    config = {
        "client": {"endpoints": ["127.0.0.1:9"]},  # nothing there: no task is discovered
        "gateway": {
            "parse_workers": 0,
            "header_timeout_s": DEADLINE_S,
            "body_timeout_s": DEADLINE_S,
            "idle_timeout_s": DEADLINE_S,
            "max_request_header_bytes": 16_384,
            "max_connections": 40,
        },
    }
    with run_gateway(config, ["127.0.0.1:9"]) as gw:
        yield gw


def _connect(gw: RunningGateway) -> socket.socket:
    host, port = gw.url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    return s


def _until_closed(s: socket.socket, limit_s: float) -> tuple[bytes, float]:
    """Read until the server closes; (what it sent, seconds it took)."""
    start = time.monotonic()
    s.settimeout(limit_s)
    got = b""
    try:
        while chunk := s.recv(65_536):
            got += chunk
    except TimeoutError:
        pytest.fail(f"connection still open after {limit_s} s; got {got[:80]!r}")
    except ConnectionResetError:
        pass
    return got, time.monotonic() - start


def test_an_oversized_head_is_431_and_closed(gateway: RunningGateway) -> None:
    s = _connect(gateway)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n")
    got, _ = _until_closed(s, 10)
    assert got.startswith(b"HTTP/1.1 431"), got[:80]


def test_a_slow_loris_head_is_cut_at_its_deadline(gateway: RunningGateway) -> None:
    s = _connect(gateway)
    s.sendall(b"POST /v1/classify/spam HTTP/1.1\r\nHost: x\r\n")
    start = time.monotonic()
    sent = 0
    s.settimeout(0.2)
    while time.monotonic() - start < SLACK * DEADLINE_S:
        try:
            s.sendall(b"X")  # one byte at a time, never the end of the head
            sent += 1
            if s.recv(65_536, socket.MSG_PEEK):
                break
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            break
    got, _ = _until_closed(s, SLACK * DEADLINE_S)
    assert time.monotonic() - start < 2 * SLACK * DEADLINE_S
    assert got.startswith(b"HTTP/1.1 408") or got == b"", got[:80]
    assert sent < 100


def test_a_body_shorter_than_its_content_length_is_cut(gateway: RunningGateway) -> None:
    s = _connect(gateway)
    s.sendall(
        b"POST /v1/classify/spam HTTP/1.1\r\nHost: x\r\ncontent-type: text/plain\r\n"
        b"content-length: 1000\r\n\r\nonly a few bytes"
    )
    got, took = _until_closed(s, SLACK * DEADLINE_S)
    assert got.startswith(b"HTTP/1.1 408"), got[:80]
    assert took >= 0.5 * DEADLINE_S  # the deadline, not an immediate refusal


def test_silent_connections_are_closed_and_the_cap_holds(gateway: RunningGateway) -> None:
    idle = [_connect(gateway) for _ in range(45)]  # over max_connections, sending nothing
    try:
        with httpx.Client(base_url=gateway.url, timeout=10) as c:
            assert c.get("/healthz").status_code == 503  # at the cap: refused, not queued
        for s in idle:
            _until_closed(s, SLACK * DEADLINE_S)  # each closed by the head deadline
    finally:
        for s in idle:
            s.close()
    with httpx.Client(base_url=gateway.url, timeout=10) as c:
        assert c.get("/healthz").status_code == 200


def test_an_idle_kept_alive_connection_is_closed(gateway: RunningGateway) -> None:
    s = _connect(gateway)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    got, _ = _until_closed(s, SLACK * DEADLINE_S + 5)
    assert got.startswith(b"HTTP/1.1 200")


def test_unknown_tasks_share_one_metric_label(gateway: RunningGateway) -> None:
    with httpx.Client(base_url=gateway.url, timeout=10) as c:
        for i in range(30):
            r = c.post(f"/v1/classify/random-{i}", json={"text": "x"})
            assert r.status_code == 404
        metrics = c.get("/metrics").text
    assert "random-" not in metrics
    # (the tenant label came with the operations work; no tenant is "none")
    want = 'textgate_requests_total{action="none",status="404",task="unknown",tenant="none"} 30.0'
    assert want in metrics

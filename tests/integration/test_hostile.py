"""The hostile-mail corpus against a real gateway + tritonserver (issue 10).

Every case answers a verdict (or a 4xx) in bounded time, never a 5xx, while a stream of
ordinary requests keeps its latency: its P99 during the attack is compared with its P99
without one, measured in the same run (a ratio with a generous bound, not milliseconds).
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import json
import os
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from tests.helpers.gateway_fixtures import RunningGateway, httpx_kwargs, run_gateway
from textgate.triton import TritonServer

pytestmark = [pytest.mark.slow, pytest.mark.triton]

GENERATOR = Path(__file__).resolve().parents[1] / "data" / "hostile" / "generate.py"
NORMAL = b"From: friend@example.org\r\nSubject: lunch\r\n\r\nsee you at noon tomorrow\r\n"
MAIL = {"content-type": "message/rfc822"}
# The stream's P99 under attack may grow to this multiple of its quiet P99 (plus a floor
# for timer noise on a shared 2-core machine): the loop must not stall, not be unaffected.
P99_RATIO = 5.0
# Measured on a 2-core box: 0.19-0.33 s under attack against 0.011-0.015 s quiet, with and
# without language detection, so 0.25 failed one run in a few; the stalls this guards
# against took seconds (BOUND_S below).
FLOOR_S = 0.5
BOUND_S = 20.0  # no single answer may take longer (a stalled loop took 4 s to 108 s)


def _cases() -> dict[str, bytes]:
    spec = importlib.util.spec_from_file_location("hostile_generate", GENERATOR)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cases: dict[str, bytes] = module.cases()
    return cases


@pytest.fixture(scope="module")
def gateway(
    triton_server: TritonServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    """A gateway of its own (its parse budget and queue) on the session's tritonserver: the
    hostile corpus needs no other Triton settings, so it starts no second server."""
    tmp = tmp_path_factory.mktemp("hostile")
    config = {
        "gateway": {"parse_workers": 2, "parse_budget_s": 1.0, "max_queue": 256},
        "policy": {"tasks": [{"task": "spam", "kind": "threshold", "positive_label": "spam"}]},
        "events": {"outbox_path": str(tmp / "events.sqlite3")},
        "client": {"timeout_s": 10.0},
    }
    with run_gateway(config, [triton_server.grpc_url]) as gw:
        gw.outbox_path = tmp / "events.sqlite3"  # type: ignore[attr-defined]
        yield gw


def _stream(url: str, n: int, stop: threading.Event | None = None) -> list[float]:
    """``n`` ordinary mails one after another; each one's latency in seconds."""
    out: list[float] = []
    with httpx.Client(base_url=url, timeout=60) as c:
        for _ in range(n):
            if stop is not None and stop.is_set() and len(out) >= n // 2:
                break
            t = time.perf_counter()
            r = c.post("/v1/classify/spam", content=NORMAL, headers=MAIL)
            out.append(time.perf_counter() - t)
            assert r.status_code == 200, r.text
    return out


def _p99(xs: list[float]) -> float:
    return statistics.quantiles(xs, n=100, method="inclusive")[98] if len(xs) > 1 else xs[0]


def _attack(url: str, name: str, raw: bytes) -> tuple[str, int, float, dict[str, object]]:
    with httpx.Client(base_url=url, timeout=60) as c:
        t = time.perf_counter()
        r = c.post("/v1/classify/spam", content=raw, headers=MAIL)
        took = time.perf_counter() - t
        body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
    return name, r.status_code, took, body


@pytest.mark.timeout(600)
def test_hostile_corpus_gets_verdicts_while_normal_traffic_keeps_its_p99(
    gateway: RunningGateway,
) -> None:
    cases = _cases()
    _stream(gateway.url, 5)  # warm-up: workers, Triton, connection pools
    quiet = _stream(gateway.url, 60)

    stop = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        normal = pool.submit(_stream, gateway.url, 60, stop)
        answers = list(
            pool.map(lambda kv: _attack(gateway.url, *kv), [*cases.items(), *cases.items()])
        )
        stop.set()
        loud = normal.result()

    for name, status, took, body in answers:
        assert status < 500, (name, status, body)
        assert took < BOUND_S, (name, took)
        if status == 200:
            (item,) = body["results"]  # type: ignore[index]
            if item["normalization"]["best_effort"]:
                assert item["action"] in ("review", "quarantine"), (name, item)
                assert item["normalization"]["defects"], name
    assert sum(status == 200 for _, status, _, _ in answers) == len(answers)

    quiet_p99, loud_p99 = _p99(quiet), _p99(loud)
    print(
        f"normal-stream P99: quiet {quiet_p99 * 1000:.1f} ms, under attack {loud_p99 * 1000:.1f} ms"
    )
    assert loud_p99 <= P99_RATIO * quiet_p99 + FLOOR_S, (quiet_p99, loud_p99)


@pytest.mark.timeout(120)
def test_health_answers_while_hostile_mail_is_parsed(gateway: RunningGateway) -> None:
    cases = _cases()
    heavy = [cases[n] for n in ("parts_short_80k", "blank_lines_500k", "header_block_1mib")]
    with httpx.Client(base_url=gateway.url, timeout=30) as c:
        quiet = _health(c, 20)
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            futures = [pool.submit(_attack, gateway.url, "heavy", raw) for raw in heavy * 3]
            loud = _health(c, 20)
            for f in futures:
                assert f.result()[1] == 200
    # A stalled loop answered /healthz after seconds; a live one as fast as when quiet.
    assert max(loud) <= P99_RATIO * max(quiet) + FLOOR_S, (max(quiet), max(loud))


def _health(c: httpx.Client, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        assert c.get("/healthz").status_code == 200
        out.append(time.perf_counter() - t)
    return out


def _events(gateway: RunningGateway, request_id: str) -> list[dict[str, object]]:
    from textgate.gateway.records.outbox import read_rows

    rows = [json.loads(r.payload) for r in read_rows(gateway.outbox_path)]  # type: ignore[attr-defined]
    return [e for e in rows if e.get("request_id") == request_id]


def test_request_id_replay_is_idempotent_only_for_the_same_payload(
    gateway: RunningGateway,
) -> None:
    with gateway.client() as c:
        post = lambda text, rid: c.post(  # noqa: E731
            "/v1/classify/spam", json={"text": text}, headers={"X-Request-ID": rid}
        )
        first = post("see you at lunch", "replay-1")
        again = post("see you at lunch", "replay-1")
        assert first.status_code == again.status_code == 200
        assert again.headers.get("x-idempotent-replay") == "true"
        assert again.json()["results"] == first.json()["results"]
        assert len(_events(gateway, "replay-1")) == 1  # the repeat wrote nothing

        # The same id with another text is a new request: scored, and its own event.
        spam = post("WIN a FREE prize, call now", "replay-1")
        assert spam.status_code == 200 and "x-idempotent-replay" not in spam.headers
        events = _events(gateway, "replay-1")
        assert len(events) == 2 and events[0]["event_id"] != events[1]["event_id"]
        assert events[1]["text_sha256"] != events[0]["text_sha256"]

        # A client id spelled like a release key is just a field.
        assert post("hello", "release/spam/7").status_code == 200
        (ev,) = _events(gateway, "release/spam/7")
        assert ev["schema"] == "textgate.event/2" and ev["event_id"] != "release/spam/7"
        metrics = c.get("/metrics").text
        assert 'textgate_repeated_request_ids_total{outcome="replayed"} 1.0' in metrics
        assert 'textgate_repeated_request_ids_total{outcome="new_payload"} 1.0' in metrics


# --- schemathesis: many cases, real tasks and random ones ----------------------------------

# Cases of POST /v1/classify per run (the other operations get a few each): the issue's
# 10,000 took 101 s on the shared 2-core machine (~100 cases/s with Triton answering);
# TEXTGATE_FUZZ_CASES lowers it where CI's budget is tighter.
FUZZ_CASES = int(os.environ.get("TEXTGATE_FUZZ_CASES", "10000"))
_FEW = 50


@pytest.mark.timeout(1500)
def test_schemathesis_many_cases_zero_5xx(gateway: RunningGateway) -> None:
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    with gateway.client() as c:
        schema = schemathesis.openapi.from_dict(c.get("/openapi.json").json())
        ops = [r.ok() for r in schema.get_all_operations()]
        failures: list[str] = []
        counts = {"cases": 0, "classify": 0}
        current = {"classify": False}  # the operation under test (read by check)

        for op in ops:
            strategy = op.as_strategy()
            is_classify = op.path.startswith("/v1/classify")
            current["classify"] = is_classify

            @settings(
                max_examples=FUZZ_CASES if is_classify else _FEW,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(case=strategy, real=st.booleans())
            def check(case: Any, real: bool) -> None:
                if real and "task" in (case.path_parameters or {}):
                    case.path_parameters["task"] = "spam"  # a real task half the time
                kwargs = case.as_transport_kwargs(base_url=gateway.url)
                kwargs.pop("base_url", None)
                method, target = kwargs.pop("method"), kwargs.pop("url")
                r = c.request(method, target, **httpx_kwargs(kwargs))
                counts["cases"] += 1
                counts["classify"] += current["classify"]
                if r.status_code >= 500 and r.status_code not in (503, 504):
                    failures.append(f"{method} {target} -> {r.status_code}: {r.text[:200]}")

            check()
        series = [
            ln
            for ln in c.get("/metrics").text.splitlines()
            if ln.startswith("textgate_requests_total{")
        ]
    print(f"schemathesis: {counts['cases']} cases ({counts['classify']} classify)")
    assert counts["classify"] >= FUZZ_CASES
    assert not failures, failures[:5]
    # Random task names share the "unknown" label: the series stay few.
    assert len(series) < 50, len(series)

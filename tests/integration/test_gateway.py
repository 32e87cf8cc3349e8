"""The gateway against a real tritonserver: contract, bad input, re-score, tenants,
overload, reload under load, Triton killed and back, and a schemathesis run.

One tritonserver per module (tiny models start in seconds); it is killed and restarted on
the same port by the last test.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.helpers import servers
from tests.helpers.gateway_fixtures import (
    RunningGateway,
    httpx_kwargs,
    run_gateway,
    two_variant_repo,
)
from textgate.triton import TritonServer

pytestmark = [pytest.mark.slow, pytest.mark.triton]

ADMIN = "admin-token-0123456789"
# The tiny random models answer P(spam) close to 0.5: a tenant whose review threshold sits
# there lands every text inside the re-score band.
STRICT = {
    "name": "strict",
    "api_key": "strict-key-123",
    "tasks": [{"task": "spam", "review_at": 0.49, "quarantine_at": 0.99, "rescore_band": 0.05}],
}


@pytest.fixture(scope="module")
def triton(
    tiny_bundles: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TritonServer]:
    repo = two_variant_repo(tiny_bundles, tmp_path_factory.mktemp("gateway"))
    with servers.triton(repo) as server:
        yield server


def _config(tmp: Path, **gateway: object) -> dict[str, object]:
    return {
        "gateway": {"admin_token": ADMIN, "replay_dir": str(tmp / "replay"), **gateway},
        "policy": {
            "tasks": [
                {"task": "spam", "kind": "threshold", "positive_label": "spam"},
                {"task": "sentiment", "kind": "label"},
            ],
            "tenants": [STRICT],
        },
        "events": {"outbox_path": str(tmp / "events.sqlite3")},
        "client": {"timeout_s": 5.0, "health_interval_s": 0.3},
    }


@pytest.fixture(scope="module")
def gateway(
    triton: TritonServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    tmp = tmp_path_factory.mktemp("gw")
    path = tmp / "textgate.yaml"
    path.write_text(yaml.safe_dump(_config(tmp)), encoding="utf-8")
    from textgate.config import Config

    with run_gateway(Config.from_file(path), [triton.grpc_url], config_path=path) as gw:
        gw.config_path = path  # type: ignore[attr-defined]
        yield gw


@pytest.fixture
def http(gateway: RunningGateway) -> Iterator[httpx.Client]:
    with gateway.client() as c:
        yield c


# --- contract ------------------------------------------------------------------------------


def test_classify_text_contract(http: httpx.Client) -> None:
    r = http.post(
        "/v1/classify/spam",
        json={"text": "WIN a free prize, call now"},
        headers={
            "X-Request-ID": "req-1",
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        },
    )
    assert r.status_code == 200, r.text
    assert r.headers["x-request-id"] == "req-1"
    assert r.headers["traceparent"].startswith("00-4bf92f3577b34da6a3ce929d0e0e4736-")
    body = r.json()
    assert body["request_id"] == "req-1" and body["task"] == "spam"
    (item,) = body["results"]
    assert set(item["probabilities"]) == {"ham", "spam"}
    assert item["score"] == pytest.approx(item["probabilities"]["spam"])
    assert item["action"] in ("allow", "review", "quarantine")
    assert item["model"] == {"name": "spam", "version": "1", "variant": "int8"}
    assert item["precision_path"] == "int8" and item["rescored"] is False
    assert set(item["timings_ms"]) >= {"normalize", "queue", "triton", "policy", "total"}
    assert item["normalization"]["chunks"] >= 1


def test_batch_and_sentiment(http: httpx.Client) -> None:
    r = http.post("/v1/classify/sentiment", json={"texts": ["great film", "awful", "meh"]})
    assert r.status_code == 200, r.text
    results = r.json()["results"]
    assert len(results) == 3
    assert {x["action"] for x in results} <= {"negative", "positive", "uncertain"}
    assert [x["request_id"].rsplit("/", 1)[1] for x in results] == ["0", "1", "2"]


def test_concurrent_requests_each_get_their_own_answer_and_id(gateway: RunningGateway) -> None:
    # Coalesced into shared Triton calls (gateway.coalesce), every request still gets its
    # own rows, id and status; the one invalid request is a 422 and fails nobody else.
    texts = [f"message {i}: " + "win cash now " * (i % 9) for i in range(24)]
    with gateway.client() as c:
        alone = {t: c.post("/v1/classify/spam", json={"text": t}).json() for t in texts[:3]}

    def send(i: int) -> httpx.Response:
        body: dict[str, Any] = {"text": texts[i]} if i != 7 else {"texts": ["ok", 42]}
        with gateway.client() as c:
            return c.post("/v1/classify/spam", json=body, headers={"X-Request-ID": f"co-{i}"})

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(send, range(len(texts))))
    for i, r in enumerate(answers):
        assert r.headers["x-request-id"] == f"co-{i}"
        if i == 7:
            assert r.status_code == 422 and r.json()["error"].get("field"), r.text
            continue
        assert r.status_code == 200, r.text
        (item,) = r.json()["results"]
        assert item["request_id"] == f"co-{i}"
        if texts[i] in alone:  # the same probabilities as when it was sent alone
            want = alone[texts[i]]["results"][0]["probabilities"]
            assert item["probabilities"] == pytest.approx(want, abs=1e-5)


def test_raw_email_equals_extracted_text(http: httpx.Client) -> None:
    raw = (
        b"From: a@example.com\r\nTo: b@example.com\r\nSubject: Cheap meds\r\n"
        b"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=XX\r\n\r\n"
        b"--XX\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Content-Transfer-Encoding: quoted-printable\r\n\r\nBuy n=C3=B6w, limited offer\r\n"
        b"--XX\r\nContent-Type: text/html\r\n\r\n<p>Buy <b>now</b></p>\r\n--XX--\r\n"
    )
    r = http.post("/v1/classify/spam", content=raw, headers={"content-type": "message/rfc822"})
    assert r.status_code == 200, r.text
    item = r.json()["results"][0]
    text = http.post("/v1/classify/spam", json={"text": "Cheap meds\nBuy nöw, limited offer"})
    assert text.status_code == 200
    assert item["probabilities"] == pytest.approx(
        text.json()["results"][0]["probabilities"], abs=1e-5
    )


def test_models_health_ready_metrics(http: httpx.Client) -> None:
    models = http.get("/v1/models").json()
    spam = next(t for t in models["tasks"] if t["task"] == "spam")
    assert spam["rescore"] == {
        "model": "spam_fp32",
        "variant": "fp32",
        "enabled": True,
        "band": 0.05,
    }
    assert spam["policy"]["thresholds"] == [0.85, 0.95]
    assert spam["tenant_overrides"] == ["strict"]
    assert http.get("/healthz").json() == {"status": "ok"}
    assert http.get("/readyz").status_code == 200
    http.post("/v1/classify/spam", json={"text": "hello"})
    metrics = http.get("/metrics").text
    for name in (
        "textgate_requests_total",
        'textgate_stage_seconds_bucket{le="0.005",stage="triton",task="spam"}',
        "textgate_in_flight",
        "textgate_outbox_depth",
    ):
        assert name in metrics


# --- bad input: each its 4xx, never a 5xx ----------------------------------------------------

NESTED_MULTIPART = b"".join(
    b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (i, i) for i in range(200)
)
HTML_BOMB = b"Content-Type: text/html\r\n\r\n" + b"<div>" * 100_000 + b"x"


@pytest.mark.parametrize(
    ("body", "ctype", "expected"),
    [
        (b"{not json", "application/json", 422),
        (b'{"text": 5}', "application/json", 422),
        (b'{"texts": "abc"}', "application/json", 422),
        (b'{"texts": ["a", 3]}', "application/json", 422),
        (b'["a"]', "application/json", 422),
        (b'{"text": "a", "texts": ["b"]}', "application/json", 422),
        (b'{"text": ""}', "application/json", 422),
        (b'{"text": "   \\u0000 "}', "application/json", 422),
        (b'{"text": "\\ud800"}', "application/json", 422),
        (b"[" * 100_000 + b"]" * 100_000, "application/json", 422),
        (b'{"text": "\xff\xfe"}', "application/json", 422),
        (b"\xff\xfe\xfd", "text/plain", 422),
        (b"x" * (10 * 1024 * 1024), "application/json", 413),
        (b"hello", "image/png", 415),
        (b"hello", "", 415),
        (b"", "message/rfc822", 422),
        # Strange MIME is a spammer's trick: a best-effort verdict, never a refusal.
        (b"Content-Type: multipart/mixed\r\n\r\n--\r\nno boundary", "message/rfc822", 200),
        (NESTED_MULTIPART + b"hello", "message/rfc822", 200),
        (HTML_BOMB, "message/rfc822", 200),
    ],
    ids=[
        "invalid-json",
        "text-int",
        "texts-str",
        "texts-mixed",
        "not-object",
        "both-fields",
        "empty",
        "only-control",
        "lone-surrogate",
        "deep-json",
        "json-bad-utf8",
        "plain-bad-utf8",
        "10MB",
        "png",
        "no-content-type",
        "empty-mail",
        "malformed-mime",
        "nested-multiparts",
        "html-100k-nested",
    ],
)
def test_bad_input_status(http: httpx.Client, body: bytes, ctype: str, expected: int) -> None:
    headers = {"content-type": ctype} if ctype else {}
    start = time.monotonic()
    r = http.post("/v1/classify/spam", content=body, headers=headers)
    assert time.monotonic() - start < 20  # never a hang
    assert r.status_code < 500, r.text
    if expected == 200 and ctype == "message/rfc822" and body.startswith(b"Content-Type: multi"):
        assert r.status_code == 200, r.text
        item = r.json()["results"][0]
        assert item["normalization"]["best_effort"] and item["action"] in ("review", "quarantine")
        return
    if expected == 200:
        assert r.status_code in (200, 413, 422), r.text
        return
    assert r.status_code == expected, r.text
    err = r.json()["error"]
    assert err["message"] and err["request_id"] == r.headers["x-request-id"]
    if expected == 422:
        assert err.get("field"), err


def test_unknown_task_names_the_field(http: httpx.Client) -> None:
    r = http.post("/v1/classify/nope", json={"text": "x"})
    assert r.status_code == 404 and r.json()["error"]["field"] == "task"


def test_too_many_texts(http: httpx.Client) -> None:
    r = http.post("/v1/classify/spam", json={"texts": ["a"] * 1000})
    assert r.status_code == 422 and r.json()["error"]["field"] == "texts"


# --- policy: tenants and the re-score --------------------------------------------------------


def test_tenant_override_and_rescore_in_band(http: httpx.Client) -> None:
    base = http.post("/v1/classify/spam", json={"text": "lunch tomorrow?"}).json()["results"][0]
    assert base["action"] == "allow" and base["rescored"] is False  # far from 0.85/0.95
    before = _metric(http, "textgate_rescores_total")
    r = http.post(
        "/v1/classify/spam",
        json={"text": "lunch tomorrow?"},
        headers={"X-Tenant": "strict", "X-API-Key": STRICT["api_key"]},
    )
    assert r.status_code == 200, r.text
    item = r.json()["results"][0]
    assert item["action"] == "review"  # the tenant's review_at 0.49 applies
    assert item["rescored"] is True and item["precision_path"] == "fp32"
    assert _metric(http, "textgate_rescores_total") == before + 1


def test_tenant_by_api_key_alone_and_bad_keys(http: httpx.Client) -> None:
    r = http.post(
        "/v1/classify/spam", json={"text": "lunch"}, headers={"X-API-Key": STRICT["api_key"]}
    )
    assert r.json()["results"][0]["action"] == "review"
    assert (
        http.post("/v1/classify/spam", json={"text": "x"}, headers={"X-API-Key": "wrong-key"})
    ).status_code == 401
    assert (
        http.post("/v1/classify/spam", json={"text": "x"}, headers={"X-Tenant": "strict"})
    ).status_code == 401
    r = http.post("/v1/classify/spam", json={"text": "x"}, headers={"X-Tenant": "nobody"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "X-Tenant"


def _metric(http: httpx.Client, name: str) -> float:
    total = 0.0
    for line in http.get("/metrics").text.splitlines():
        if line.startswith(name):
            total += float(line.rsplit(" ", 1)[1])
    return total


# --- overload, reload ------------------------------------------------------------------------


def test_overload_gives_429_with_retry_after(triton: TritonServer, tmp_path: Path) -> None:
    cfg = _config(tmp_path, max_in_flight=1, max_queue=0, retry_after_s=3)
    with run_gateway(cfg, [triton.grpc_url]) as gw, gw.client() as c:
        texts = {"texts": ["free prize " * 40] * 16}

        def send(_: int) -> httpx.Response:
            return c.post("/v1/classify/spam", json=texts)

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            codes = [r for r in pool.map(send, range(48))]
    statuses = {r.status_code for r in codes}
    assert statuses <= {200, 429}, statuses
    assert 429 in statuses and 200 in statuses
    rejected = next(r for r in codes if r.status_code == 429)
    assert rejected.headers["retry-after"] == "3"
    assert rejected.json()["error"]["type"] == "Overloaded"


def test_reload_under_load_drops_nothing(gateway: RunningGateway) -> None:
    path: Path = gateway.config_path  # type: ignore[attr-defined]
    original = path.read_text(encoding="utf-8")
    data = yaml.safe_load(original)
    stop = time.monotonic() + 4
    auth = {"Authorization": f"Bearer {ADMIN}"}

    def load() -> list[int]:
        codes = []
        with gateway.client() as c:
            while time.monotonic() < stop:
                codes.append(c.post("/v1/classify/spam", json={"text": "see you soon"}).status_code)
        return codes

    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(load) for _ in range(3)]
            with gateway.client() as admin:
                for i in range(6):
                    data["policy"]["tasks"][0]["review_at"] = 0.5 + i * 0.05
                    path.write_text(yaml.safe_dump(data), encoding="utf-8")
                    r = admin.post("/admin/reload", headers=auth)
                    assert r.status_code == 200, r.text
                    time.sleep(0.3)
                # An invalid config is refused with the reason; the last good one stays.
                bad = json.loads(json.dumps(data))
                bad["policy"]["tasks"][0]["review_at"] = 2
                path.write_text(yaml.safe_dump(bad), encoding="utf-8")
                r = admin.post("/admin/reload", headers=auth)
                assert r.status_code == 422
                assert "policy.tasks[0].review_at" in r.json()["error"]["message"]
                spam = next(
                    t for t in admin.get("/v1/models").json()["tasks"] if t["task"] == "spam"
                )
                assert spam["policy"]["review_at"] == pytest.approx(0.75)
                assert admin.post("/admin/reload").status_code == 401
            codes = [c for f in futures for c in f.result()]
    finally:
        path.write_text(original, encoding="utf-8")
        with gateway.client() as admin:
            admin.post("/admin/reload", headers=auth)
    assert codes and set(codes) == {200}, {c: codes.count(c) for c in set(codes)}


def test_reload_moves_the_review_store(gateway: RunningGateway) -> None:
    """review.path is read on reload, not only at start: the next kept verdict is in the
    new file (the store was fixed at start before)."""
    path: Path = gateway.config_path  # type: ignore[attr-defined]
    original = path.read_text(encoding="utf-8")
    data = yaml.safe_load(original)
    moved = path.parent / "review-moved.sqlite3"
    everything = ["allow", "review", "quarantine"]
    data["review"] = {"path": str(moved), "actions": everything, "explain": 0}
    auth = {"Authorization": f"Bearer {ADMIN}"}
    try:
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        with gateway.client() as c:
            r = c.post("/admin/reload", headers=auth)
            assert r.status_code == 200 and r.json()["review"] == str(moved), r.text
            rid = c.post("/v1/classify/spam", json={"text": "see you soon"}).json()["request_id"]
        with sqlite3.connect(moved) as db:
            kept = [row[0] for row in db.execute("SELECT request_id FROM messages")]
        assert kept == [rid]
    finally:
        path.write_text(original, encoding="utf-8")
        with gateway.client() as admin:
            admin.post("/admin/reload", headers=auth)


# --- schemathesis ----------------------------------------------------------------------------


def test_openapi_fuzz_has_no_5xx(gateway: RunningGateway) -> None:
    schemathesis = pytest.importorskip("schemathesis")
    with gateway.client() as c:
        schema = schemathesis.openapi.from_dict(c.get("/openapi.json").json())
        failures: list[str] = []
        for result in schema.get_all_operations():
            op = result.ok()
            if not op.path.startswith("/admin"):
                _fuzz(op, c, gateway.url, failures)
    assert not failures, failures[:5]


def _fuzz(op: Any, c: httpx.Client, url: str, failures: list[str]) -> None:
    from hypothesis import HealthCheck, given, settings

    @settings(
        max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(case=op.as_strategy())
    def check(case: Any) -> None:
        kwargs = case.as_transport_kwargs(base_url=url)
        kwargs.pop("base_url", None)
        method, target = kwargs.pop("method"), kwargs.pop("url")
        r = c.request(method, target, **httpx_kwargs(kwargs))
        # 503/504 are Triton's state, not the input's; anything else >= 500 is a bug.
        if r.status_code >= 500 and r.status_code not in (503, 504):
            failures.append(f"{method} {target} -> {r.status_code}: {r.text[:200]}")

    check()


# --- the CLI: serve (SIGHUP, SIGTERM) and replay ---------------------------------------------


def test_cli_serve_reloads_on_sighup_and_stops_on_sigterm(
    triton: TritonServer, tmp_path: Path
) -> None:
    import os
    import signal
    import sys

    path = tmp_path / "textgate.yaml"
    path.write_text(yaml.safe_dump(_config(tmp_path)), encoding="utf-8")
    cmd = [sys.executable, "-m", "textgate.cli", "serve", "--config", str(path)]
    cmd += ["--triton", triton.grpc_url, "--port", "0"]
    env = {**os.environ, "COLUMNS": "200"}
    with servers.serve_cli(cmd, env) as (proc, url):
        r = httpx.post(f"{url}/v1/classify/spam", json={"text": "hi"}, timeout=30)
        assert r.status_code == 200, r.text
        proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        logs = proc.stderr.read() if proc.stderr else ""
        lines = [json.loads(x) for x in logs.splitlines() if x.startswith("{")]
        assert any(x["msg"] == "config reloaded" for x in lines), logs[-2000:]
        assert any(x["msg"] == "classify" and x.get("request_id") for x in lines)


def test_cli_replay_reruns_a_record(triton: TritonServer, tmp_path: Path) -> None:
    import subprocess
    import sys

    from textgate.gateway.records.replay import FORMAT

    record = {
        "format": FORMAT,
        "request_id": "r-replay",
        "reason": "fast and fp32 variants differ by 0.5000",
        "task": "spam",
        "model": "spam",
        "precise_model": "spam_fp32",
        "model_version": "1",
        "tokenizer_sha256": "0" * 64,
        "pieces": ["free prize now"],
        "outputs": {"fast": [0.9, 0.1], "precise": [0.4, 0.6]},
    }
    path = tmp_path / "r.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    cmd = [sys.executable, "-m", "textgate.cli", "replay", str(path), "--json"]
    proc = subprocess.run(
        [*cmd, "--triton", triton.grpc_url], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert set(report["outputs"]) == {"fast", "precise"}
    assert report["outputs"]["fast"]["recorded"] == [0.9, 0.1]
    assert len(report["outputs"]["fast"]["now"]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    proc = subprocess.run([*cmd[:4], str(bad)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and "replay" in proc.stderr


# --- Triton killed, then back (last: it replaces the module's server) ----------------------


def test_triton_killed_gives_503_then_recovers(triton: TritonServer) -> None:
    import os
    import signal

    cfg = {**_config(Path(triton.repository).parent), "events": {"outbox_path": ":memory:"}}
    cfg["events"] = {"outbox_path": str(Path(triton.repository).parent / "ev-kill.sqlite3")}
    with run_gateway(cfg, [triton.grpc_url]) as gw, gw.client() as c:
        assert c.post("/v1/classify/spam", json={"text": "hi"}).status_code == 200
        assert triton.pid is not None
        os.killpg(triton.pid, signal.SIGKILL)
        time.sleep(0.5)
        r = c.post("/v1/classify/spam", json={"text": "hi"})
        assert r.status_code == 503, r.text
        assert "Triton unavailable" in r.json()["error"]["message"]
        assert r.headers["retry-after"] == "1"
        assert c.get("/readyz").status_code == 503
        triton.stop()
        again = dataclasses.replace(
            triton.config,
            http_port=triton.http_port,
            grpc_port=triton.grpc_port,
            metrics_port=triton.metrics_port,
        )
        triton.config = again
        triton.start()
        triton.wait_ready()
        deadline = time.monotonic() + 20
        status = 0
        while time.monotonic() < deadline:
            status = c.post("/v1/classify/spam", json={"text": "hi"}).status_code
            if status == 200:
                break
            assert status == 503
            time.sleep(0.2)
        assert status == 200
        assert c.get("/readyz").status_code == 200

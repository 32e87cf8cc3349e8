"""Campaign memory against a real tritonserver: a repeated message is answered without a
Triton request and with the same answer; never across tenants; a policy change misses."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.gateway_fixtures import run_gateway
from textgate.triton import TritonServer

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.timeout(300)]

MAIL = b"From: promo@deals.example\r\nSubject: last chance\r\n\r\nwin a free cruise today\r\n"
TENANTS = [{"name": "acme", "api_key": "acme-key-123"}, {"name": "globex", "api_key": "gx-key-456"}]


def _triton_requests(server: TritonServer) -> float:
    text = httpx.get(server.metrics_url, timeout=5).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("nv_inference_request_success{") and 'model="spam"' in line
    )


def _post(c: httpx.Client, key: str) -> dict[str, Any]:
    r = c.post("/v1/classify/spam", content=MAIL,
               headers={"content-type": "message/rfc822", "X-API-Key": key})  # fmt: skip
    assert r.status_code == 200, r.text
    return dict(r.json()["results"][0])


def test_a_repeated_message_is_answered_from_memory(
    triton_server: TritonServer, tmp_path: Path
) -> None:
    config = {
        "gateway": {"parse_workers": 0, "campaign_entries": 100, "campaign_ttl_s": 60},
        "policy": {"tenants": TENANTS},
        "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
    }
    with run_gateway(config, [triton_server.grpc_url]) as gw, gw.client() as c:
        first = _post(c, "acme-key-123")
        before = _triton_requests(triton_server)
        again = _post(c, "acme-key-123")
        assert _triton_requests(triton_server) == before  # no Triton request
        assert again.get("cached") is True and "cached" not in first
        for k in ("label", "probabilities", "score", "action", "model", "precision_path"):
            assert again[k] == first[k], k
        assert again["request_id"] != first["request_id"]  # its own request and event
        other = _post(c, "gx-key-456")  # the same mail, another tenant: scored afresh
        assert "cached" not in other and _triton_requests(triton_server) > before
        metrics = c.get("/metrics").text
    with sqlite3.connect(tmp_path / "events.sqlite3") as db:
        events = [json.loads(r[0])["request_id"] for r in db.execute("SELECT payload FROM events")]
    assert sorted(events) == sorted(r["request_id"] for r in (first, again, other))  # each one
    hits = [x for x in metrics.splitlines() if x.startswith("textgate_campaign_memory_total")]
    assert any('result="hit"' in x and x.endswith(" 1.0") for x in hits), hits
    assert any('result="miss"' in x and x.endswith(" 2.0") for x in hits), hits

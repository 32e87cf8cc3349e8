"""Sender lists through a real gateway and tritonserver: an authenticated listed sender is
allowed, the same From without the MTA's authentication is scored as usual, a blocked
domain is quarantined; another tenant's lists do not apply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers.gateway_fixtures import run_gateway
from textgate.triton import TritonServer

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.timeout(300)]

TENANTS = [
    {"name": "acme", "api_key": "acme-key-123", "allow": ["partner.example"],
     "block": ["spam.example"],
     # every unlisted message is quarantined, so an allow is visible whatever the tiny model says
     "tasks": [{"task": "spam", "kind": "threshold", "positive_label": "spam",
                "review_at": 0.0, "quarantine_at": 0.0}]},
    {"name": "globex", "api_key": "gx-key-456"},
]  # fmt: skip


def mail(sender: str, auth: str = "") -> bytes:
    head = f"Authentication-Results: mx.acme.example; {auth}\r\n" if auth else ""
    return f"{head}From: {sender}\r\nSubject: invoice\r\n\r\nplease find it attached\r\n".encode()


def post(c: Any, raw: bytes, key: str) -> dict[str, Any]:
    r = c.post("/v1/classify/spam", content=raw,
               headers={"content-type": "message/rfc822", "X-API-Key": key})  # fmt: skip
    assert r.status_code == 200, r.text
    return dict(r.json()["results"][0])


def test_sender_lists_decide_for_their_tenant(triton_server: TritonServer, tmp_path: Path) -> None:
    config = {
        "gateway": {"parse_workers": 0},
        "policy": {"tenants": TENANTS},
        "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
    }
    signed = mail("billing@partner.example", "dkim=pass header.d=partner.example")
    forged = mail("billing@partner.example")
    blocked = mail("promo@spam.example")
    with run_gateway(config, [triton_server.grpc_url]) as gw, gw.client() as c:
        allowed = post(c, signed, "acme-key-123")
        assert allowed["action"] == "allow" and allowed["listed"]["list"] == "allow"
        assert "dkim" in allowed["listed"]["why"]
        unauthenticated = post(c, forged, "acme-key-123")
        assert unauthenticated["action"] == "quarantine" and "listed" not in unauthenticated
        dropped = post(c, blocked, "acme-key-123")
        assert dropped["action"] == "quarantine" and dropped["listed"]["entry"] == "spam.example"
        other = post(c, blocked, "gx-key-456")
        assert "listed" not in other
        metrics = c.get("/metrics").text
    assert 'textgate_sender_listed_total{list="allow",task="spam"} 1.0' in metrics
    assert 'textgate_sender_listed_total{list="block",task="spam"} 1.0' in metrics


def test_the_milter_picks_the_tenant_by_envelope_recipient(
    triton_server: TritonServer, tmp_path: Path
) -> None:
    """miltertest's transaction is addressed to rcpt@example.net: with no AUTH user, the
    tenant owning example.net decides (it quarantines everything); unowned, the default."""
    from tests.helpers.mailtools import run_miltertest
    from textgate.triton import free_port

    strict = [{"name": "netco", "domains": ["example.net"],
               "tasks": [{"task": "spam", "kind": "threshold", "positive_label": "spam",
                          "review_at": 0.0, "quarantine_at": 0.0}]}]  # fmt: skip
    raw = mail("someone@sender.example")
    for tenants, quarantined in ((strict, True), ([{**strict[0], "domains": []}], False)):
        config = {
            "gateway": {"parse_workers": 0},
            "policy": {"tenants": tenants},
            "events": {"outbox_path": str(tmp_path / f"events-{quarantined}.sqlite3")},
            "mail": {"milter_port": free_port()},
        }
        with run_gateway(config, [triton_server.grpc_url]):
            out = run_miltertest(config["mail"]["milter_port"], raw, tmp_path, user="")
        assert ("QUARANTINE" in out) == quarantined, out

"""The language policy through a real gateway and tritonserver, and real spamc: a tenant that
reads English sends German mail to review and says why (result, metric, spamd's rule list);
English mail and another tenant's German mail are left to the model."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.gateway_fixtures import run_gateway
from tests.helpers.servers import debian_tool
from textgate.triton import TritonServer, free_port

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.timeout(300)]

# the model's score never acts (thresholds at 1.0): any review below is the language's
NEVER = {
    "task": "spam",
    "kind": "threshold",
    "positive_label": "spam",
    "review_at": 1.0,
    "quarantine_at": 1.0,
}
TENANTS = [
    {"name": "acme", "api_key": "acme-key-123", "tasks": [{**NEVER, "ok_languages": ["en"]}]},
    {"name": "globex", "api_key": "gx-key-456", "tasks": [NEVER]},
]  # fmt: skip

GERMAN = (
    "Sehr geehrte Damen und Herren, vielen Dank für Ihre Bestellung. Die Ware wird am Montag "
    "verschickt und sollte innerhalb von zwei Werktagen bei Ihnen eintreffen."
)
ENGLISH = (
    "Dear customer, thank you for your order. The goods will be shipped on Monday and should "
    "reach you within two working days."
)


def mail(body: str) -> bytes:
    return f"From: shop@example.org\r\nSubject: Bestellung 4711\r\n\r\n{body}\r\n".encode()


def post(c: Any, raw: bytes, key: str) -> dict[str, Any]:
    r = c.post("/v1/classify/spam", content=raw,
               headers={"content-type": "message/rfc822", "X-API-Key": key})  # fmt: skip
    assert r.status_code == 200, r.text
    return dict(r.json()["results"][0])


def test_a_tenant_reading_english_reviews_german_mail(
    triton_server: TritonServer, tmp_path: Path
) -> None:
    spamd_port = free_port()
    config = {
        "gateway": {"parse_workers": 0},
        "policy": {"tenants": TENANTS},
        "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
        "mail": {"spamd_port": spamd_port},
    }
    with run_gateway(config, [triton_server.grpc_url]) as gw, gw.client() as c:
        german = post(c, mail(GERMAN), "acme-key-123")
        english = post(c, mail(ENGLISH), "acme-key-123")
        elsewhere = post(c, mail(GERMAN), "gx-key-456")
        text = c.post("/v1/classify/spam", json={"text": GERMAN},
                      headers={"X-API-Key": "acme-key-123"}).json()["results"][0]  # fmt: skip
        metrics = c.get("/metrics").text
        cmd = [debian_tool("spamc"), "-d", "127.0.0.1", "-p", str(spamd_port), "-u", "acme",
               "-t", "30", "-R"]  # fmt: skip
        report = subprocess.run(cmd, input=mail(GERMAN), capture_output=True, timeout=60)
    assert german["action"] == "review"
    assert german["language"] == {"code": "de", "confidence": 1.0, "unwanted": True}
    assert english["action"] == "allow" and english["language"]["code"] == "en"
    assert not english["language"]["unwanted"]
    assert elsewhere["action"] == "allow" and elsewhere["language"]["code"] == "de"
    assert text["action"] == "review" and text["language"]["unwanted"]  # a text, under a list
    assert 'textgate_language_unwanted_total{language="de",task="spam"} 2.0' in metrics
    out = report.stdout.decode()
    assert "UNWANTED_LANGUAGE_BODY" in out and "undesired language" in out, out

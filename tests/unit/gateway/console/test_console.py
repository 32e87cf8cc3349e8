"""The console's HTTP side without Triton: login, tenant scoping, CSRF, decisions written
once to the feedback store and the outbox, security headers, the offline /docs page."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from textgate.config import Config
from textgate.gateway.app import create_app
from textgate.gateway.console.session import COOKIE, LOGIN_COOKIE

ADMIN = "admin-token-0123456789"
TENANTS = [{"name": "acme", "api_key": "acme-key-123"}, {"name": "globex", "api_key": "gx-key-456"}]


def result(rid: str, action: str) -> dict[str, Any]:
    return {
        "request_id": rid,
        "label": "spam",
        "action": action,
        "score": 0.9,
        "probabilities": {"ham": 0.1, "spam": 0.9},
        "model": {"name": "spam", "version": "1"},
        "normalization": {"link_domains": ["evil.example"], "parts": 1},
    }


def console_config(tmp_path: Path) -> Config:
    return Config.from_dict(
        {
            "client": {"endpoints": ["127.0.0.1:9"]},
            "gateway": {"parse_workers": 0, "admin_token": ADMIN},
            "policy": {"tenants": TENANTS},
            "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
            "feedback": {"path": str(tmp_path / "feedback.sqlite3")},
            "review": {"path": str(tmp_path / "review.sqlite3"), "explain": 0},
        }
    )


@pytest.fixture
def app_client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(console_config(tmp_path)), raise_server_exceptions=False) as c:
        store = c.app.state.gateway.review  # type: ignore[attr-defined]
        for rid, tenant, action in (("a1", "acme", "review"), ("g1", "globex", "quarantine")):
            store.keep(
                request_id=rid,
                task="spam",
                tenant=tenant,
                result=result(rid, action),
                text="cheap <script>pills</script>",
                raw=b"Subject: hi\r\n\r\n<script>x()</script>",
            )
        c.tmp = tmp_path  # type: ignore[attr-defined]
        yield c


def form_token(c: TestClient) -> str:
    """The login page's one-time token (its cookie is now in the client's jar)."""
    page = c.get("/ui/").text
    return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]


def post_login(c: TestClient, key: str, token: str | None = None) -> Any:
    form = {"key": key} if token is None else {"key": key, "csrf": token}
    return c.post("/ui/login", data=form, follow_redirects=False)


def login(c: TestClient, key: str) -> str:
    c.cookies.clear()
    r = post_login(c, key, form_token(c))
    assert r.status_code == 303, r.text
    cookie = r.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    csrf: str = c.get("/ui/api/session").json()["csrf"]
    return csrf


def decide(c: TestClient, rid: str, decision: str, csrf: str | None) -> Any:
    headers = {"x-csrf-token": csrf} if csrf is not None else {}
    return c.post(f"/ui/api/messages/{rid}/decision", json={"decision": decision}, headers=headers)


def test_without_a_session_the_console_is_a_login_page(app_client: TestClient) -> None:
    r = app_client.get("/ui/")
    assert r.status_code == 200 and 'action="/ui/login"' in r.text
    assert app_client.get("/ui/api/queue").status_code == 401
    bad = post_login(app_client, "wrong-key-here", form_token(app_client))
    assert bad.status_code == 401 and COOKIE not in bad.headers.get("set-cookie", "")
    assert "Unknown admin token or API key" in bad.text


def test_every_console_answer_has_a_strict_csp(app_client: TestClient) -> None:
    for path in ("/ui/", "/ui/static/console.js", "/docs"):
        csp = app_client.get(path).headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
    assert app_client.get("/ui/static/../app.py").status_code == 404


def test_docs_page_is_local(app_client: TestClient) -> None:
    page = app_client.get("/docs").text
    assert "/v1/classify/{task}" in page and "http" not in page.split("</title>", 1)[1]
    assert app_client.get("/redoc").status_code == 404


def test_a_tenant_sees_only_its_own_mail(app_client: TestClient) -> None:
    login(app_client, "acme-key-123")
    queue = app_client.get("/ui/api/queue?state=all").json()
    assert [m["request_id"] for m in queue["items"]] == ["a1"]
    assert app_client.get("/ui/api/queue?tenant=globex").status_code == 403
    assert app_client.get("/ui/api/messages/g1").status_code == 403
    assert app_client.get("/ui/api/messages/g1/source").status_code == 403
    page = app_client.get("/ui/message/g1")
    assert page.status_code == 403 and "403 Forbidden" in page.text
    assert app_client.get("/ui/message/a1").status_code == 200
    m = app_client.get("/ui/api/messages/a1").json()
    assert m["text"] == "cheap <script>pills</script>" and m["link_domains"] == ["evil.example"]
    assert "raw" not in m


def test_admin_sees_every_tenant_and_filters(app_client: TestClient) -> None:
    login(app_client, ADMIN)
    q = app_client.get("/ui/api/queue").json()
    assert [m["request_id"] for m in q["items"]] == ["g1", "a1"]  # newest first
    assert q["counts"]["open"] == 2 and q["counts"]["quarantine"] == 1
    only = app_client.get("/ui/api/queue?action=quarantine&min_score=0.5").json()["items"]
    assert [m["request_id"] for m in only] == ["g1"]
    assert app_client.get("/ui/api/queue?min_score=2").status_code == 422
    assert app_client.get("/ui/api/queue?state=maybe").status_code == 422
    src = app_client.get("/ui/api/messages/g1/source").json()
    assert src["headers"] == [["Subject", "hi"]] and "<script>" in src["source"]


def test_a_decision_without_the_csrf_token_is_refused(app_client: TestClient) -> None:
    csrf = login(app_client, ADMIN)
    assert decide(app_client, "a1", "spam", None).status_code == 403
    assert decide(app_client, "a1", "spam", "not-the-token").status_code == 403
    assert feedback_rows(app_client) == [] and review_events(app_client) == []
    assert decide(app_client, "a1", "eggs", csrf).status_code == 422
    assert decide(app_client, "a1", "release", csrf).status_code == 422  # not quarantined


def test_decisions_write_feedback_and_an_event_exactly_once(app_client: TestClient) -> None:
    csrf = login(app_client, ADMIN)
    first = decide(app_client, "a1", "ham", csrf)
    assert first.status_code == 200 and first.json()["label"] == "ham"
    again = decide(app_client, "a1", "ham", csrf)
    assert again.status_code == 200 and again.json()["repeated"] is True
    assert decide(app_client, "a1", "spam", csrf).status_code == 409
    assert decide(app_client, "g1", "release", csrf).status_code == 200
    assert feedback_rows(app_client) == [("a1", "ham", "console"), ("g1", "ham", "console")]
    events = review_events(app_client)
    assert [(e["request_id"], e["decision"], e["reviewer"]) for e in events] == [
        ("a1", "ham", "admin"),
        ("g1", "release", "admin"),
    ]
    assert events[1]["previous_action"] == "quarantine" and events[1]["key"] == "review/g1"
    q = app_client.get("/ui/api/queue?state=decided").json()
    assert {m["request_id"]: m["decision"] for m in q["items"]} == {"a1": "ham", "g1": "release"}


def test_a_tenant_cannot_decide_another_tenants_mail(app_client: TestClient) -> None:
    csrf = login(app_client, "acme-key-123")
    assert decide(app_client, "g1", "spam", csrf).status_code == 403
    assert decide(app_client, "a1", "spam", csrf).status_code == 200
    assert feedback_rows(app_client) == [("a1", "spam", "console")]


def test_live_panel_answers_without_traffic(app_client: TestClient) -> None:
    login(app_client, ADMIN)
    stats = app_client.get("/ui/api/stats").json()
    assert stats["spam_rate"] is None and stats["queue"]["open"] == 2


def test_live_panel_counts_the_gateways_verdicts_per_tenant(app_client: TestClient) -> None:
    requests = app_client.app.state.gateway.metrics.requests  # type: ignore[attr-defined]
    for tenant, action, n in (
        ("acme", "review", 3),
        ("acme", "allow", 1),
        ("globex", "quarantine", 4),
    ):
        requests.labels("spam", tenant, action, "200").inc(n)
    requests.labels("spam", "acme", "none", "503").inc(5)  # failures are not verdicts
    login(app_client, ADMIN)
    every = app_client.get("/ui/api/stats").json()
    assert every["verdicts"] == {"allow": 1, "quarantine": 4, "review": 3}
    assert every["spam_rate"] == 0.5 and every["review_share"] == 0.375
    assert every["verdicts_per_minute"] > 0
    login(app_client, "acme-key-123")
    own = app_client.get("/ui/api/stats").json()
    assert own["verdicts"] == {"allow": 1, "review": 3} and own["spam_rate"] == 0.0
    assert own["queue"]["total"] == 1


def feedback_rows(c: TestClient) -> list[tuple[str, str, str]]:
    path = c.tmp / "feedback.sqlite3"  # type: ignore[attr-defined]
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        return list(db.execute("SELECT request_id, label, source FROM corrections ORDER BY id"))


def review_events(c: TestClient) -> list[dict[str, Any]]:
    with sqlite3.connect(c.tmp / "events.sqlite3") as db:  # type: ignore[attr-defined]
        rows = [json.loads(r[0]) for r in db.execute("SELECT payload FROM events ORDER BY id")]
    return [e for e in rows if e["schema"] == "textgate.review-event/1"]


def test_console_bodies_are_bounded_before_they_are_read(app_client: TestClient) -> None:
    big = app_client.post("/ui/login", content="key=" + "x" * 20_000)
    assert big.status_code == 413 and big.json()["error"]["field"] == "body"
    csrf = login(app_client, ADMIN)
    chunked = app_client.post(
        "/ui/api/messages/a1/decision",
        content=iter([b'{"decision": "spam"}']),  # no Content-Length: chunked
        headers={"x-csrf-token": csrf, "content-type": "application/json"},
    )
    assert chunked.status_code == 413
    assert (
        app_client.post(
            "/ui/api/messages/a1/decision",
            content=b"[",
            headers={"x-csrf-token": csrf, "content-type": "application/json"},
        ).status_code
        == 422
    )


def test_a_batch_item_id_with_a_slash_opens_and_a_text_has_a_preview(
    app_client: TestClient,
) -> None:
    store = app_client.app.state.gateway.review  # type: ignore[attr-defined]
    store.keep(
        request_id="batch/1",
        task="spam",
        tenant="acme",
        result=result("batch/1", "review"),
        text="win a free cruise now",
        raw=b"win a free cruise now",
    )
    csrf = login(app_client, "acme-key-123")
    row = app_client.get("/ui/api/queue").json()["items"][0]
    assert row["request_id"] == "batch/1" and row["preview"] == "win a free cruise now"
    assert app_client.get("/ui/api/messages/batch%2F1").json()["text"] == "win a free cruise now"
    assert app_client.get("/ui/api/messages/batch/1/source").json()["headers"] == []
    assert decide(app_client, "batch%2F1", "spam", csrf).json()["request_id"] == "batch/1"


def test_a_login_without_the_form_token_is_refused(app_client: TestClient) -> None:
    """Login CSRF: another site's page posting a key logs no one in."""
    app_client.cookies.clear()
    r = post_login(app_client, ADMIN)  # no token, no login cookie: a cross-site form
    assert r.status_code == 403 and COOKIE not in r.headers.get("set-cookie", "")
    assert "expired or came from another page" in r.text
    token = form_token(app_client)
    app_client.cookies.clear()
    app_client.cookies.set(LOGIN_COOKIE, "someone-elses-token")
    r = post_login(app_client, ADMIN, token)  # the field and the cookie disagree
    assert r.status_code == 403 and COOKIE not in r.headers.get("set-cookie", "")
    app_client.cookies.clear()
    r = post_login(app_client, ADMIN, form_token(app_client))
    assert r.status_code == 303 and COOKIE in r.headers["set-cookie"]


def test_failed_logins_are_throttled_per_address(app_client: TestClient) -> None:
    attempts = app_client.app.state.gateway.config.review.login_attempts  # type: ignore[attr-defined]
    for _ in range(attempts):
        assert post_login(app_client, "wrong-key-here", form_token(app_client)).status_code == 401
    r = post_login(app_client, ADMIN, form_token(app_client))  # even the right key waits
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert COOKIE not in r.headers.get("set-cookie", "")
    assert "Too many failed logins" in r.text


def test_a_session_survives_a_restart(tmp_path: Path) -> None:
    config = console_config(tmp_path)
    with TestClient(create_app(config), raise_server_exceptions=False) as c:
        csrf = login(c, "acme-key-123")
        cookie = c.cookies.get(COOKIE)
    assert cookie and cookie.encode() not in (tmp_path / "review.sqlite3.sessions").read_bytes()
    with TestClient(create_app(config), raise_server_exceptions=False) as c:
        c.cookies.set(COOKIE, cookie, path="/ui")
        r = c.get("/ui/api/session")
        assert r.status_code == 200 and r.json()["tenant"] == "acme" and r.json()["csrf"] == csrf

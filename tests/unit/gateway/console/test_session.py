"""Console sessions: who a key logs in as, expiry, the bound on live sessions."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from textgate.errors import Unauthorized
from textgate.gateway.console import session
from textgate.gateway.console.session import LoginThrottle, SessionFile, Sessions

ADMIN = "admin-token-0123456789"


def test_admin_token_tenant_key_and_unknown_key() -> None:
    s = Sessions(ttl_s=60)
    admin = s.login(ADMIN, ADMIN, None)
    assert admin.admin and admin.reviewer == "admin" and admin.may_see("acme")
    tenant = s.login("acme-key", ADMIN, "acme")
    assert not tenant.admin and tenant.reviewer == "tenant:acme"
    assert tenant.may_see("acme") and not tenant.may_see("globex") and not tenant.may_see(None)
    assert admin.token != tenant.token and admin.csrf != tenant.csrf
    with pytest.raises(Unauthorized):
        s.login("wrong", ADMIN, None)
    with pytest.raises(Unauthorized):
        s.login("", None, None)  # no admin token configured: the empty key is no login


def test_sessions_expire_and_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(session.time, "time", lambda: now[0])
    monkeypatch.setattr(session, "MAX_SESSIONS", 3)
    s = Sessions(ttl_s=10)
    first = s.login(ADMIN, ADMIN, None)
    now[0] += 11
    for _ in range(3):
        s.login(ADMIN, ADMIN, None)
    assert session.digest(first.token) not in s._by_digest  # expired, then swept
    assert len(s._by_digest) <= 3


def test_sessions_are_kept_as_digests_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "review.sqlite3.sessions"
    s = Sessions(ttl_s=60, file=SessionFile(path))
    kept = s.login("acme-key", ADMIN, "acme")
    gone = s.login(ADMIN, ADMIN, None)
    s.logout(gone.token)
    s.close()
    on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir())  # the file, any WAL
    assert kept.token.encode() not in on_disk and b"acme-key" not in on_disk
    again = Sessions(ttl_s=60, file=SessionFile(path))
    assert set(again._by_digest) == {session.digest(kept.token)}
    back = again._by_digest[session.digest(kept.token)]
    assert (back.tenant, back.admin, back.csrf) == ("acme", False, kept.csrf)
    again.close()


def test_a_rotated_key_ends_its_sessions() -> None:
    creds: dict[str, Any] = {"admin": ADMIN, "keys": {"acme": "acme-key"}}
    s = Sessions(ttl_s=60, credentials=lambda: (creds["admin"], creds["keys"]))
    admin, tenant = s.login(ADMIN, ADMIN, None), s.login("acme-key", ADMIN, "acme")

    def alive(x: session.Session) -> bool:
        return s.of(SimpleNamespace(cookies={session.COOKIE: x.token})) is not None  # type: ignore[arg-type]

    assert alive(admin) and alive(tenant)
    creds["keys"] = {"acme": "acme-key-rotated"}
    assert alive(admin) and not alive(tenant)
    creds["admin"] = None  # the admin token removed from the config
    assert not alive(admin)


def test_the_login_throttle_counts_failures_per_address(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(session.time, "time", lambda: now[0])
    t = LoginThrottle(attempts=2, window_s=60)
    t.failed("10.0.0.1")
    assert t.wait_s("10.0.0.1") == 0
    t.failed("10.0.0.1")
    assert t.wait_s("10.0.0.1") == 61 and t.wait_s("10.0.0.2") == 0
    now[0] += 30
    assert t.wait_s("10.0.0.1") == 31
    now[0] += 31
    assert t.wait_s("10.0.0.1") == 0  # the window passed
    monkeypatch.setattr(session, "MAX_THROTTLED", 2)
    for a in ("a", "b", "c"):
        t.failed(a)
    assert len(t._failures) == 2 and "10.0.0.1" not in t._failures

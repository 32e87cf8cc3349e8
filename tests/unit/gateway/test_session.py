"""Console sessions: who a key logs in as, expiry, the bound on live sessions."""

from __future__ import annotations

import pytest

from textgate.gateway import session
from textgate.gateway.http_errors import Unauthorized
from textgate.gateway.session import Sessions

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
    assert first.token not in s._by_token  # expired, then swept
    assert len(s._by_token) <= 3

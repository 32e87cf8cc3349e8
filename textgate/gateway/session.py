"""Console logins: the admin token or a tenant's API key buys a session cookie.

The cookie is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page
sends it) and scoped to ``/ui``; every state-changing call also needs the session's CSRF
token in ``X-CSRF-Token``, which only the console's own script can read (from
``/ui/api/session``). Sessions live in memory: a restart logs reviewers out, which is
cheaper than storing credentials-equivalent tokens on disk.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass

from fastapi import Request

from textgate.gateway.http_errors import Forbidden, Unauthorized

COOKIE = "textgate_console"
CSRF_HEADER = "x-csrf-token"
MAX_SESSIONS = 10_000


@dataclass(frozen=True)
class Session:
    token: str
    csrf: str
    tenant: str | None  # None with admin: every tenant's mail
    admin: bool
    expires: float

    @property
    def reviewer(self) -> str:
        return "admin" if self.admin else f"tenant:{self.tenant}"

    def may_see(self, tenant: str | None) -> bool:
        return self.admin or (tenant is not None and tenant == self.tenant)


class Sessions:
    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._by_token: dict[str, Session] = {}

    def login(self, key: str, admin_token: str | None, tenant_of_key: str | None) -> Session:
        """A session for the admin token or a tenant key; ``Unauthorized`` otherwise."""
        admin = bool(admin_token) and hmac.compare_digest(
            str(admin_token).encode(), key.encode("utf-8", "surrogateescape")
        )
        if not admin and tenant_of_key is None:
            raise Unauthorized("unknown admin token or API key", field="key")
        self._expire()
        s = Session(
            token=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            tenant=None if admin else tenant_of_key,
            admin=admin,
            expires=time.time() + self.ttl_s,
        )
        self._by_token[s.token] = s
        return s

    def logout(self, token: str | None) -> None:
        if token:
            self._by_token.pop(token, None)

    def of(self, request: Request) -> Session | None:
        s = self._by_token.get(request.cookies.get(COOKIE, ""))
        if s is None or s.expires < time.time():
            return None
        return s

    def require(self, request: Request) -> Session:
        s = self.of(request)
        if s is None:
            raise Unauthorized(
                "not logged in to the console", field="cookie", hint="POST /ui/login"
            )
        return s

    def require_csrf(self, request: Request) -> Session:
        s = self.require(request)
        given = request.headers.get(CSRF_HEADER, "")
        if not given or not hmac.compare_digest(s.csrf.encode(), given.encode()):
            raise Forbidden("missing or wrong CSRF token", field=CSRF_HEADER)
        return s

    def _expire(self) -> None:
        now = time.time()
        for token in [t for t, s in self._by_token.items() if s.expires < now]:
            del self._by_token[token]
        while len(self._by_token) >= MAX_SESSIONS:  # the oldest login goes first
            del self._by_token[next(iter(self._by_token))]

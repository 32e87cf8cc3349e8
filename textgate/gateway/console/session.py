"""Console logins: the admin token or a tenant's API key buys a session cookie.

The cookie is ``HttpOnly`` (no script reads it), ``SameSite=Strict`` (no other site's page
sends it) and scoped to ``/ui``; every state-changing call also needs the session's CSRF
token in ``X-CSRF-Token``, which only the console's own script can read (from
``/ui/api/session``). The login form itself carries a one-time token that must match a
cookie set with the form (a page on another site cannot log a reviewer in as someone else).

Sessions survive a restart: with a review store they are kept in an SQLite file beside it
(``<review file>.sessions``), holding SHA-256 digests of the cookie tokens, never the tokens
nor the keys. A session lives only while the key it logged in with is still configured: a
rotated admin token or tenant key (reload) ends its sessions.

Failed logins are throttled per client address (``review.login_attempts`` per
``review.login_window_s``): beyond, even a right key is answered 429 until the window ends.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fastapi import Request

from textgate.errors import Forbidden, ReviewStoreError, Unauthorized
from textgate.store import SQLiteStore

COOKIE = "textgate_console"
LOGIN_COOKIE = "textgate_login"  # the login form's token (double submit)
CSRF_HEADER = "x-csrf-token"
MAX_SESSIONS = 10_000
MAX_THROTTLED = 10_000  # client addresses remembered by the login throttle
SCHEMA_VERSION = 1
_DDL = """
CREATE TABLE IF NOT EXISTS sessions (
    token_sha256 TEXT PRIMARY KEY,
    csrf TEXT NOT NULL,
    tenant TEXT,
    admin INTEGER NOT NULL,
    expires REAL NOT NULL,
    key_sha256 TEXT NOT NULL
);
"""

# The credentials a session may still stand on: the admin token and each tenant's key.
Credentials = Callable[[], tuple[str | None, Mapping[str, str]]]


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(frozen=True)
class Session:
    token: str  # the cookie; "" for a session read back from the file (only its digest is)
    csrf: str
    tenant: str | None  # None with admin: every tenant's mail
    admin: bool
    expires: float
    key_sha256: str = ""

    @property
    def reviewer(self) -> str:
        return "admin" if self.admin else f"tenant:{self.tenant}"

    def may_see(self, tenant: str | None) -> bool:
        return self.admin or (tenant is not None and tenant == self.tenant)


class SessionFile(SQLiteStore):
    """Where sessions outlive the process (one row per live session)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, ddl=_DDL, schema_version=SCHEMA_VERSION, error=ReviewStoreError)

    @staticmethod
    def beside(review_path: Path) -> Path:
        return review_path.with_name(review_path.name + ".sessions")

    def load(self, now: float) -> dict[str, Session]:
        self._run("DELETE FROM sessions WHERE expires < ?", (now,))
        rows = self._run(
            "SELECT token_sha256, csrf, tenant, admin, expires, key_sha256 FROM sessions "
            "ORDER BY expires"
        )
        return {r[0]: Session("", r[1], r[2], bool(r[3]), r[4], r[5]) for r in rows}

    def put(self, token_sha256: str, s: Session) -> None:
        self._run(
            "INSERT OR REPLACE INTO sessions VALUES (?, ?, ?, ?, ?, ?)",
            (token_sha256, s.csrf, s.tenant, int(s.admin), s.expires, s.key_sha256),
        )

    def delete(self, token_sha256s: list[str]) -> None:
        for t in token_sha256s:
            self._run("DELETE FROM sessions WHERE token_sha256 = ?", (t,))


class Sessions:
    """Live sessions by the digest of their cookie; written through to ``file`` if any."""

    def __init__(
        self,
        ttl_s: float,
        *,
        file: SessionFile | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self.ttl_s = ttl_s
        self.file = file
        self.credentials = credentials
        self._by_digest: dict[str, Session] = file.load(time.time()) if file else {}
        self._lock = threading.Lock()  # login and logout run in worker threads (disk)

    def login(self, key: str, admin_token: str | None, tenant_of_key: str | None) -> Session:
        """A session for the admin token or a tenant key; ``Unauthorized`` otherwise."""
        admin = bool(admin_token) and hmac.compare_digest(
            str(admin_token).encode(), key.encode("utf-8", "surrogateescape")
        )
        if not admin and tenant_of_key is None:
            raise Unauthorized("unknown admin token or API key", field="key")
        s = Session(
            token=secrets.token_urlsafe(32),
            csrf=secrets.token_urlsafe(32),
            tenant=None if admin else tenant_of_key,
            admin=admin,
            expires=time.time() + self.ttl_s,
            key_sha256=digest(key),
        )
        with self._lock:
            self._expire()
            self._by_digest[digest(s.token)] = s
            if self.file is not None:
                self.file.put(digest(s.token), s)
        return s

    def logout(self, token: str | None) -> None:
        with self._lock:
            if token and self._by_digest.pop(digest(token), None) is not None and self.file:
                self.file.delete([digest(token)])

    def of(self, request: Request) -> Session | None:
        s = self._by_digest.get(digest(request.cookies.get(COOKIE, "")))
        if s is None or s.expires < time.time() or not self._still_keyed(s):
            return None
        return s

    def _still_keyed(self, s: Session) -> bool:
        """The key the session logged in with is still the admin token or its tenant's key."""
        if self.credentials is None:
            return True
        admin_token, keys = self.credentials()
        current = admin_token if s.admin else keys.get(s.tenant or "")
        return bool(current) and hmac.compare_digest(digest(str(current)), s.key_sha256)

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

    def close(self) -> None:
        if self.file is not None:
            self.file.close()

    def _expire(self) -> None:
        now = time.time()
        gone = {t for t, s in self._by_digest.items() if s.expires < now}
        kept = [t for t in self._by_digest if t not in gone]
        gone.update(kept[: max(0, len(kept) - MAX_SESSIONS + 1)])  # the oldest logins go first
        for t in gone:
            del self._by_digest[t]
        if gone and self.file is not None:
            self.file.delete(sorted(gone))


def login_form_ok(request: Request, form_token: str) -> bool:
    """The login form's token matches its cookie (which only our own page set)."""
    cookie = request.cookies.get(LOGIN_COOKIE, "")
    return bool(cookie) and hmac.compare_digest(cookie.encode(), form_token.encode())


class LoginThrottle:
    """Failed logins per client address in a sliding window; bounded in addresses."""

    def __init__(self, attempts: int, window_s: float) -> None:
        self.attempts, self.window_s = attempts, window_s
        self._failures: OrderedDict[str, list[float]] = OrderedDict()

    def wait_s(self, address: str) -> int:
        """0 when ``address`` may try; otherwise the seconds until it may."""
        recent = self._recent(address)
        if len(recent) < self.attempts:
            return 0
        return max(1, int(recent[0] + self.window_s - time.time()) + 1)

    def failed(self, address: str) -> None:
        self._failures[address] = [*self._recent(address), time.time()]
        self._failures.move_to_end(address)
        while len(self._failures) > MAX_THROTTLED:
            self._failures.popitem(last=False)

    def _recent(self, address: str) -> list[float]:
        since = time.time() - self.window_s
        return [t for t in self._failures.get(address, ()) if t >= since]

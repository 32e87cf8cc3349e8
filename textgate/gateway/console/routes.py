"""The review console at ``/ui/`` (docs/console.md).

    GET  /ui/                          the queue (login page without a session)
    GET  /ui/message/{request_id}      one message (403 page: another tenant's)
    POST /ui/login, /ui/logout         form fields ``key`` (admin token or tenant API key) and
                                       ``csrf`` (the form's token, matched to its cookie)
    GET  /ui/api/session | queue | messages/{id} | messages/{id}/source | stats
    POST /ui/api/messages/{id}/decision  {"decision": "spam"|"ham"|"release"} + X-CSRF-Token

Mail is an attack on the reviewer's browser: the API sends text as JSON strings and the
page's script puts them in the DOM as text nodes only; links are shown as their domains.
Every console answer carries a strict Content-Security-Policy (no inline script, no
remote anything), so even a rendering bug could not run a script or fetch a remote image.

Past 400 lines on purpose: every route, the checks it makes (login throttle and form token,
session, CSRF, tenant visibility, body size) and the decision they guard stand together, so a
reader can see that no path reaches a message or a decision without them.
"""

from __future__ import annotations

import asyncio
import email.parser
import email.policy
import html
import secrets
import urllib.parse
from importlib import resources
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import BaseModel

from textgate.errors import (
    Forbidden,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    Unauthorized,
)
from textgate.gateway.console import panel
from textgate.gateway.console.session import (
    COOKIE,
    LOGIN_COOKIE,
    LoginThrottle,
    Session,
    Sessions,
    login_form_ok,
)
from textgate.gateway.records import held_mail, logs, review_records
from textgate.gateway.records.review_store import Filters, Held, ReviewStore
from textgate.gateway.scoring.policy import spamc_label
from textgate.gateway.scoring.service import Context

if TYPE_CHECKING:
    from textgate.gateway.runtime import Gateway

router = APIRouter(include_in_schema=False)
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
ASSETS = {"console.js": "text/javascript", "console.css": "text/css"}
MAX_SOURCE_BYTES = 65_536
_LOGIN_REFUSED = "Unknown admin token or API key."
_LOGIN_STALE = "The login form expired or came from another page; please log in again."
_LOGIN_THROTTLED = "Too many failed logins from your address; try again in {s} seconds."
LOGIN_FORM_TTL_S = 3600
MAX_BODY = 16_384  # a console POST: the login form or a decision


def _asset(name: str) -> bytes:
    return (resources.files("textgate.gateway.console") / "static" / name).read_bytes()


def _gw(request: Request) -> Gateway:
    return request.app.state.gateway  # type: ignore[no-any-return]


def _sessions(request: Request) -> Sessions:
    return request.app.state.sessions  # type: ignore[no-any-return]


def _store(request: Request) -> ReviewStore:
    store = _gw(request).review
    if store is None:
        raise NotFound(
            "the review store is off", field="review.path", hint="set review.path to keep mail"
        )
    return store


def _page(name: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(_asset(name), status_code=status)


def _login_page(request: Request, status: int = 200, error: str = "") -> HTMLResponse:
    """The login form with a fresh one-time token, set as a cookie too (double submit)."""
    token = secrets.token_urlsafe(32)
    page = _asset("login.html").replace(
        b"<!--csrf-->", f'<input type="hidden" name="csrf" value="{token}">'.encode()
    )
    if error:
        alert = f'<p id="refused" role="alert">{html.escape(error)}</p>'
        page = page.replace(b"<!--error-->", alert.encode())
    response = HTMLResponse(page, status_code=status)
    response.set_cookie(
        LOGIN_COOKIE,
        token,
        max_age=LOGIN_FORM_TTL_S,
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


# --- pages -----------------------------------------------------------------------------------


@router.get("/ui")
async def ui_root() -> Response:
    return RedirectResponse("/ui/", status_code=308)


@router.get("/ui/")
async def ui_queue(request: Request) -> Response:
    if _sessions(request).of(request) is None:
        return _login_page(request)
    return _page("console.html")


@router.get("/ui/message/{request_id:path}")
async def ui_message(request: Request, request_id: str) -> Response:
    session = _sessions(request).of(request)
    if session is None:
        return _login_page(request, 401)
    held = await _store(request).get_async(request_id)
    if held is not None and not session.may_see(held.tenant):
        return _page("forbidden.html", 403)
    return _page("console.html", 200 if held is not None else 404)


@router.get("/ui/static/{name}")
async def ui_static(name: str) -> Response:
    if name not in ASSETS:
        raise NotFound(f"no console asset {name[:64]!r}", field="name")
    return Response(_asset(name), media_type=ASSETS[name])


@router.post("/ui/login")
async def ui_login(request: Request) -> Response:
    """Throttle by address, then the form's token, then the key (docs/console.md)."""
    form = urllib.parse.parse_qs((await request.body()).decode("utf-8", "replace"))  # bounded
    key = (form.get("key") or [""])[0].strip()
    throttle: LoginThrottle = request.app.state.login_throttle
    address = request.client.host if request.client else ""
    wait = throttle.wait_s(address)
    if wait:
        logs.event("console login throttled", client=address)
        page = _login_page(request, 429, _LOGIN_THROTTLED.format(s=wait))
        page.headers["Retry-After"] = str(wait)
        return page
    if not login_form_ok(request, (form.get("csrf") or [""])[0]):
        logs.event("console login refused", reason="form token")
        return _login_page(request, 403, _LOGIN_STALE)
    gw = _gw(request)
    tenant = gw.runtime.policy._match_key(key) if key else None
    try:
        session = await asyncio.to_thread(
            _sessions(request).login, key, gw.config.gateway.admin_token, tenant
        )
    except Unauthorized:
        throttle.failed(address)
        logs.event("console login refused", reason="key", client=address)
        return _login_page(request, 401, _LOGIN_REFUSED)
    logs.event("console login", reviewer=session.reviewer)
    response = RedirectResponse("/ui/", status_code=303)
    response.set_cookie(
        COOKIE,
        session.token,
        max_age=int(gw.config.review.session_ttl_s),
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    response.delete_cookie(LOGIN_COOKIE, path="/ui")
    return response


@router.post("/ui/logout")
async def ui_logout(request: Request) -> Response:
    sessions = _sessions(request)
    sessions.require_csrf(request)
    await asyncio.to_thread(sessions.logout, request.cookies.get(COOKIE))
    response = RedirectResponse("/ui/", status_code=303)
    response.delete_cookie(COOKIE, path="/ui")
    return response


# --- the console's API -----------------------------------------------------------------------


@router.get("/ui/api/session")
async def api_session(request: Request) -> dict[str, Any]:
    s = _sessions(request).require(request)
    gw = _gw(request)
    return {
        "reviewer": s.reviewer,
        "tenant": s.tenant,
        "admin": s.admin,
        "csrf": s.csrf,
        "tasks": sorted(gw.runtime.router.public()),
        "tenants": sorted(t.name for t in gw.config.policy.tenants) if s.admin else [s.tenant],
    }


def _score(value: str | None, name: str) -> float | None:
    if value in (None, ""):
        return None
    try:
        x = float(str(value))
    except ValueError:
        raise InvalidInput("must be a number within 0..1", field=name) from None
    if not 0.0 <= x <= 1.0:
        raise InvalidInput("must be within 0..1", field=name)
    return x


def _int(value: str | None, name: str, default: int | None, top: int) -> int | None:
    if value in (None, ""):
        return default
    if not str(value).isdigit() or not 0 < int(str(value)) <= top:
        raise InvalidInput(f"must be an integer within 1..{top}", field=name)
    return int(str(value))


def _filters(request: Request, s: Session) -> Filters:
    q = request.query_params
    state = q.get("state") or "open"
    if state not in ("open", "decided", "all"):
        raise InvalidInput("must be open, decided or all", field="state")
    tenant = q.get("tenant") or None
    if not s.admin:
        if tenant not in (None, s.tenant):
            raise Forbidden("a tenant key sees only its own tenant's mail", field="tenant")
        tenant = s.tenant
    return Filters(
        task=q.get("task") or None,
        tenant=tenant,
        action=q.get("action") or None,
        min_score=_score(q.get("min_score"), "min_score"),
        max_score=_score(q.get("max_score"), "max_score"),
        decided={"open": False, "decided": True, "all": None}[state],
    )


@router.get("/ui/api/queue")
async def api_queue(request: Request) -> dict[str, Any]:
    s = _sessions(request).require(request)
    store = _store(request)
    f = _filters(request, s)
    before = _int(request.query_params.get("before"), "before", None, 2**62)
    limit = _int(request.query_params.get("limit"), "limit", 50, 500) or 50
    items = store.find(f, before_id=before, limit=limit)
    everything = Filters(task=f.task, tenant=f.tenant)
    return {
        "items": [h.summary() for h in items],
        "counts": {"filtered": store.count(f), **store.counts(everything)},
    }


async def _visible(request: Request, request_id: str) -> tuple[Session, Held]:
    s = _sessions(request).require(request)
    held = await _store(request).get_async(request_id)
    if held is None:
        raise NotFound(f"no kept message {request_id[:80]!r}", field="request_id")
    if not s.may_see(held.tenant):
        raise Forbidden("this message belongs to another tenant", field="request_id")
    return s, held


@router.get("/ui/api/messages/{request_id:path}/source")
async def api_source(request: Request, request_id: str) -> dict[str, Any]:
    _, held = await _visible(request, request_id)
    raw = held.raw[:MAX_SOURCE_BYTES]
    head: list[list[str]] = []
    try:
        parsed = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(raw)
        head = [[str(k), str(v)] for k, v in parsed.items()]
    except Exception:  # hostile headers: the source below still shows them as text
        head = []
    return {
        "headers": head,
        "source": raw.decode("utf-8", "replace"),
        "truncated": len(held.raw) > MAX_SOURCE_BYTES,
    }


@router.get("/ui/api/messages/{request_id:path}")
async def api_message(request: Request, request_id: str) -> dict[str, Any]:
    _, held = await _visible(request, request_id)
    if held.explanation is None:
        held = await _explain(request, held)
    out = held.detail()
    out["link_domains"] = list(held.notes.get("link_domains") or [])
    return out


async def _explain(request: Request, held: Held) -> Held:
    """Trigger words for a message kept without them (one Triton request, then stored)."""
    gw = _gw(request)
    n = gw.config.review.explain
    if n == 0 or held.task not in gw.runtime.router.routes:
        return held
    ctx = Context(request_id=held.request_id, tenant=held.tenant)
    raw: str | bytes = held.raw if held.notes.get("parts") else held.raw.decode("utf-8")
    try:
        spans = await gw.desk.spans(gw.runtime, held.task, raw, ctx, n)
    except Exception as exc:  # Triton down: the message is shown without highlights
        logs.event("console explanation failed", error=type(exc).__name__)
        return held
    found = [s.as_dict() for s in spans]
    _store(request).set_explanation(held.request_id, found)
    return _store(request).get(held.request_id) or held


class DecisionRequest(BaseModel):
    decision: str


@router.post("/ui/api/messages/{request_id:path}/decision")
async def api_decide(request: Request, request_id: str, body: DecisionRequest) -> dict[str, Any]:
    s = _sessions(request).require_csrf(request)
    _, held = await _visible(request, request_id)
    return await decide(request, held, body.decision, s.reviewer)


async def decide(request: Request, held: Held, decision: str, reviewer: str) -> dict[str, Any]:
    """The review store's decision transaction; a repeat answers the first."""
    gw = _gw(request)
    label = mail_headers_label(decision, tuple(held.probabilities))
    review = gw.runtime.config.review
    released: list[str] = []

    async def release(queue_id: str) -> None:  # the MTA's hold queue: docs/operators.md
        await held_mail.release(review.release_command, queue_id, review.release_timeout_s)
        released.append(queue_id)

    feedback_id = await review_records.decide(
        _store(request),
        gw.desk.store,
        gw.events,
        held,
        decision,
        label=label,
        by=reviewer,
        release=release if review.release_command else None,
    )
    if feedback_id is None:
        return {"request_id": held.request_id, "decision": decision, "repeated": True}
    logs.event("console decision", request_id=held.request_id, decision=decision, by=reviewer)
    return {
        "request_id": held.request_id,
        "decision": decision,
        "label": label,
        "feedback_id": feedback_id,
        "repeated": False,
        "mta_released": released[0] if released else None,
    }


def mail_headers_label(decision: str, labels: tuple[str, ...]) -> str:
    """spam -> the task's positive label; ham and release -> its negative one."""
    return spamc_label("spam" if decision == "spam" else "ham", labels or ("ham", "spam"))


# --- the live panel ---------------------------------------------------------------------


@router.get("/ui/api/stats")
async def api_stats(request: Request) -> dict[str, Any]:
    s = _sessions(request).require(request)
    gw = _gw(request)
    rates: panel.Rates = request.app.state.rates
    out = rates.observe(gw, None if s.admin else s.tenant)
    if gw.review is not None:
        scope = Filters(tenant=None if s.admin else s.tenant)
        out["queue"] = gw.review.counts(scope)
    return out


def check_before_body(request: Request) -> None:
    """A console POST declares a small body (login form, decision JSON); checked from the
    headers by the app's middleware before anything reads it."""
    if request.method in ("GET", "HEAD"):
        return
    length = request.headers.get("content-length")
    if length is None or not length.isdigit():
        raise PayloadTooLarge(
            f"console requests need a Content-Length of at most {MAX_BODY} bytes",
            field="content-length",
            reason="length_required",
            limit=MAX_BODY,
        )
    if int(length) > MAX_BODY:
        raise PayloadTooLarge(
            f"body of {length} bytes is over the console limit of {MAX_BODY}",
            field="body",
            reason="too_large",
            limit=MAX_BODY,
        )


def security_headers(path: str) -> list[tuple[bytes, bytes]]:
    """The console's and /docs' security headers (the app's middleware adds them)."""
    if path.startswith("/ui") or path == "/docs":
        return [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in SECURITY_HEADERS.items()
        ]
    return []

"""Plain ASGI middleware around every request: the request id and trace context, the
in-flight gauge, the classify log line and its metrics; and the gate that checks an admin or
console request from its headers before anything reads the body.

What a path prefix checks before the body, and which paths get security headers, the app
passes in (``install``): the console is a room of its own, not imported here.

Plain ASGI, not Starlette's ``@app.middleware("http")``: that one runs every request through
an anyio task group and memory streams per layer, a measurable share of a request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI
from starlette.datastructures import Headers
from starlette.requests import Request

from textgate.errors import GatewayError
from textgate.gateway.http.error_handlers import error_response
from textgate.gateway.http.fastpath import ClassifyFastPath
from textgate.gateway.records import logs
from textgate.gateway.runtime import Gateway

Check = Callable[[Request], None]
SecurityHeaders = Callable[[str], list[tuple[bytes, bytes]]]


def _none(_path: str) -> list[tuple[bytes, bytes]]:
    return []


def install(
    app: FastAPI, *, gates: Mapping[str, Check] = {}, security: SecurityHeaders = _none
) -> None:
    """``gates``: path prefix -> its check before the body; ``security``: a path's headers."""
    # Added first, so they run inside ``RequestContext`` (which sets the request id); the
    # classify fast path innermost, where the router would have run.
    app.add_middleware(ClassifyFastPath)
    app.add_middleware(AdminGate, gates=dict(gates))
    app.add_middleware(RequestContext, security=security)


class AdminGate:
    """Admin and console requests are checked (peer, token shape, size) before any body is
    read."""

    def __init__(self, app: Any, gates: dict[str, Check]) -> None:
        self.app = app
        self.gates = gates

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        check = next((c for p, c in self.gates.items() if path.startswith(p)), None)
        if check is not None:
            gw: Gateway | None = getattr(scope["app"].state, "gateway", None)
            if gw is not None:
                request = Request(scope)
                try:
                    check(request)
                except GatewayError as exc:
                    await error_response(exc, request)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


class RequestContext:
    """Request id and trace context, in-flight gauge, and the classify log line."""

    def __init__(self, app: Any, security: SecurityHeaders) -> None:
        self.app = app
        self.security = security

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        rid = logs.request_id(headers.get("x-request-id"))
        trace = logs.trace(headers.get("traceparent"))
        state = scope.setdefault("state", {})
        state["request_id"], state["trace"] = rid, trace
        token = logs.request_id_var.set(rid)
        gw: Gateway | None = getattr(scope["app"].state, "gateway", None)
        start = time.perf_counter()
        status = 500
        ours = [(b"x-request-id", rid.encode("latin-1")),
                (b"traceparent", trace.traceparent.encode("latin-1"))]  # fmt: skip
        secure = self.security(scope["path"])

        async def send_with_ids(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                kept = [(k, v) for k, v in message.get("headers", ()) if k.lower() not in _IDS]
                present = {k.lower() for k, _ in kept}  # a route's own value wins
                extra = [(k, v) for k, v in secure if k not in present]
                message = {**message, "headers": [*kept, *ours, *extra]}
            await send(message)

        if gw is not None:
            gw.metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_with_ids)
        finally:
            if gw is not None:
                gw.metrics.in_flight.dec()
            logs.request_id_var.reset(token)
        if gw is not None and scope["path"].startswith("/v1/classify"):
            _account(gw, scope, status, rid, start)


_IDS = (b"x-request-id", b"traceparent")


def _account(gw: Gateway, scope: Any, code: int, rid: str, start: float) -> None:
    # From the scope itself: a Request (and its URL) built for three lookups was a
    # measurable share of a request.
    task = scope.get("path_params", {}).get("task") or Request(scope).url.path.rsplit("/", 1)[-1]
    # Labels only for tasks that exist: 60 random task names were 60 new series each.
    router = gw.runtime.router
    task = task if router.is_public(task) else "unknown"
    state = scope["state"]
    if code != 200:
        gw.metrics.failed(task, router.routes, state.get("tenant"), code)
    if code == 429:
        gw.metrics.rejected.inc()
    logs.logger.info(
        "classify",
        extra={
            "request_id": rid,
            "fields": {
                "task": task,
                "status": code,
                "ms": round((time.perf_counter() - start) * 1000, 2),
                "trace_id": state["trace"].trace_id,
            },
        },
    )

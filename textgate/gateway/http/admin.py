"""The admin API (docs/lifecycle.md): release operations, Triton model control, reload.

    POST /admin/release/{add,canary,shadow,standby,compare,promote,rollback,gc}
    GET  /admin/release/versions
    POST /admin/triton/{load,unload}
    POST /admin/reload                     (the one admin route in the public schema)

The release routes are made from ``release.OPERATIONS`` (the table the CLI uses too). Every
route needs ``Authorization: Bearer <gateway.admin_token>`` (``require_admin``, compared in
constant time); with no token configured the admin API refuses everything. A middleware
runs ``check_before_body`` first, so neither a wrong token nor a large body is ever read.
Operations run in a worker thread (they load models, hash bundles); each commit swaps the
routing state in memory and re-discovers the models, so the next request already sees the
switch. The version routing itself is ``release_hook.ReleaseHook``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import inspect
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field, create_model

from textgate import release
from textgate.errors import (
    BundleError,
    Conflict,
    InvalidInput,
    PayloadTooLarge,
    ReleaseError,
    TextgateError,
    Unauthorized,
)
from textgate.gateway.http.schema import ERRORS, ErrorResponse
from textgate.gateway.records import logs
from textgate.gateway.runtime import Gateway, gateway_of
from textgate.gateway.scoring.release_hook import ReleaseHook

# Admin bodies are a few small JSON fields; a 32 MB unauthenticated body was read and
# parsed before the token was looked at.
MAX_BODY = 65_536
_MODEL = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$", description="Triton model name")


def require_admin(request: Request) -> None:
    token = gateway_of(request).config.gateway.admin_token
    given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if not token or not hmac.compare_digest(token.encode(), given.encode()):
        raise Unauthorized("admin token missing or wrong", field="authorization")


def check_before_body(request: Request) -> None:
    """Auth, then the body's declared size, from the headers alone (a middleware calls
    this before anything reads the body)."""
    require_admin(request)
    if request.method in ("GET", "HEAD"):
        return
    length = request.headers.get("content-length")
    chunked = "chunked" in request.headers.get("transfer-encoding", "").lower()
    if (length is None and chunked) or (length is not None and not length.isdigit()):
        raise PayloadTooLarge(
            f"admin requests need a Content-Length of at most {MAX_BODY} bytes",
            field="content-length",
            reason="length_required",
            limit=MAX_BODY,
        )
    if length is not None and int(length) > MAX_BODY:
        raise PayloadTooLarge(
            f"body of {length} bytes is over the admin limit of {MAX_BODY}",
            field="body",
            reason="too_large",
            limit=MAX_BODY,
        )


# Operator-only: kept out of the public OpenAPI schema (docs/lifecycle.md documents it).
router = APIRouter(
    prefix="/admin",
    tags=["admin"],
    dependencies=[Depends(require_admin)],
    include_in_schema=False,
)


class ModelBody(BaseModel):
    model: str = _MODEL


def _hook(request: Request) -> ReleaseHook:
    hook = gateway_of(request).releases
    if hook is None:
        raise Conflict("releases are off: set release.repository", field="release.repository")
    return hook


async def _run(request: Request, op: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """One operation in a worker thread, then re-discover so routes include new models."""
    hook = _hook(request)
    started = time.perf_counter()
    try:
        result = await asyncio.to_thread(fn, *args, **kw)
    except (ReleaseError, BundleError):  # 409 and 422 in the status table
        hook.operations.labels(op, "refused").inc()
        raise
    except OSError as exc:  # a path the OS refuses (too long, not a directory): the input
        hook.operations.labels(op, "refused").inc()
        why = exc.strerror or type(exc).__name__
        raise InvalidInput(f"path cannot be used: {why}", field="bundle") from None
    except TextgateError:
        hook.operations.labels(op, "failed").inc()
        raise
    hook.operations.labels(op, "ok").inc()
    hook.eject_missed()
    with contextlib.suppress(TextgateError):
        await gateway_of(request).rediscover()
    logs.event("release " + op, ms=round((time.perf_counter() - started) * 1000, 1))
    return result


def _body_model(op: release.Operation) -> type[BaseModel] | None:
    """The request body of ``op``, from its parameters in the operations table."""
    fields: dict[str, Any] = {}
    for p in op.params:
        if not p.remote:
            continue
        kind: Any = p.kind if p.required else p.kind | None
        bounds = {k: getattr(p, k) for k in ("ge", "le", "min_length", "max_length", "pattern")}
        bounds = {k: v for k, v in bounds.items() if v is not None}
        default = ... if p.required else p.default
        fields[p.name] = (kind, Field(default, description=p.help, **bounds))
    return create_model(f"{op.name.title()}Body", **fields) if fields else None


def _infer_of(hook: ReleaseHook) -> release.Infer:
    """Compare's inference through the gateway's own Triton client, from a worker thread."""
    loop = asyncio.get_running_loop()

    def infer(model: str, texts: Sequence[str]) -> np.ndarray:
        coro = hook.infer(model, texts)
        return asyncio.run_coroutine_threadsafe(coro, loop).result().probabilities

    return infer


def _feedback_of(gw: Gateway) -> Path | None:
    """The operators' corrections this gateway collected: their accuracy goes in the report."""
    store = gw.config.feedback.path
    return store if store.is_file() else None


async def _operate(request: Request, op: release.Operation, args: dict[str, Any]) -> Any:
    hook = _hook(request)
    if op.read_only:
        return await asyncio.to_thread(op.call, hook.manager, args, None)
    if op.restarts_watch:
        hook.watches.pop(args["task"], None)  # a new canary is judged on its own requests
    infer = None
    if op.runs_models:
        infer, args["feedback"] = _infer_of(hook), _feedback_of(gateway_of(request))
    result = await _run(request, op.name, op.call, hook.manager, args, infer)
    if op.emits:
        await hook.emit(args["task"], op.name, result)
    return result


def _endpoint(op: release.Operation) -> Any:
    """A route of ``op``: query parameters for a GET, else its body model (or none)."""
    model = _body_model(op)
    kw = inspect.Parameter.KEYWORD_ONLY
    params = [inspect.Parameter("request", kw, annotation=Request)]
    if op.method == "GET":
        params += [inspect.Parameter(p.name, kw, default=None, annotation=str | None)
                   for p in op.params]  # fmt: skip
    elif model is not None:
        params.append(inspect.Parameter("body", kw, annotation=model))

    async def endpoint(request: Request, body: BaseModel | None = None, **query: Any) -> Any:
        args = body.model_dump() if body is not None else dict(query)
        return await _operate(request, op, args)

    endpoint.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    endpoint.__name__ = f"release_{op.name}"
    return endpoint


for _op in release.OPERATIONS:
    router.add_api_route(_op.route, _endpoint(_op), methods=[_op.method], summary=_op.help)


@router.post("/triton/load", summary="Load one Triton model (through the release control)")
async def load(body: ModelBody, request: Request) -> dict[str, Any]:
    control = _control(request)
    await _run(request, "load", control.load_model, body.model)
    return {"loaded": body.model}


@router.post("/triton/unload", summary="Unload one Triton model")
async def unload(body: ModelBody, request: Request) -> dict[str, Any]:
    control = _control(request)
    await _run(request, "unload", control.unload_model, body.model)
    return {"unloaded": body.model}


def _control(request: Request) -> Any:
    control = _hook(request).manager.control
    if control is None:
        raise Conflict("no Triton model control: set release.triton_http", field="release")
    return control


# Published in the schema (docs/openapi.json), unlike the release operations above.
reload_router = APIRouter(dependencies=[Depends(require_admin)])


@reload_router.post(
    "/admin/reload",
    summary="Reload the config file (Authorization: Bearer <gateway.admin_token>)",
    responses={401: ERRORS[401], 422: {"model": ErrorResponse, "description": "rejected"}},
)
async def reload(request: Request) -> dict[str, Any]:
    return {"reloaded": True, **await gateway_of(request).reload()}

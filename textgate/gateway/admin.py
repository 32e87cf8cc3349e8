"""The release admin API and the gateway's release hook (docs/lifecycle.md).

    POST /admin/release/{add,canary,shadow,standby,compare,promote,rollback,gc}
    GET  /admin/release/versions
    POST /admin/triton/{load,unload}

Every route needs ``Authorization: Bearer <gateway.admin_token>`` (compared in constant
time); with no token configured the admin API refuses everything. Operations run in a
worker thread (they load models, hash bundles); each commit swaps the routing state in
memory and re-discovers the models, so the next request already sees the switch.

``ReleaseHook`` is what ``routing.Router`` calls: which version answers (``pick``), and how
each request went (``observe``): the canary watch (automatic rollback) and shadow copies.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import inspect
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from fastapi import APIRouter, Depends, Request
from prometheus_client import Counter
from pydantic import BaseModel, Field, create_model

from textgate import release, replicas
from textgate.config import Config
from textgate.errors import (
    BundleError,
    ConfigError,
    InvalidInput,
    PayloadTooLarge,
    ReleaseError,
    TextgateError,
)
from textgate.gateway import logs
from textgate.gateway.events import text_hash
from textgate.gateway.http_errors import Conflict, Unauthorized
from textgate.gateway.routing import Route

if TYPE_CHECKING:
    from textgate.gateway.app import Gateway

_SHADOW_IN_FLIGHT = 8  # shadow copies beyond this are dropped: they must never slow serving


class ReleaseHook(release.StateView):
    """The routing view of the release state plus the canary watch and shadow copies."""

    def __init__(self, config: Config, gateway: Gateway) -> None:
        assert config.release.repository is not None
        super().__init__(config.release.repository)
        self.settings = config.release
        self.gateway = gateway
        control = _control_of(config, gateway)
        self.manager = release.Releases(
            config.release.repository, self.settings, repository=config.repository, control=control
        )
        self.manager.on_commit = self.set  # the in-memory swap, same thread as the rename
        self.watches: dict[str, release.CanaryWatch] = {}
        self._shadows = 0
        self._monitor: asyncio.Task[None] | None = None
        registry = gateway.metrics.registry
        self.auto_rollbacks = Counter(
            "textgate_release_auto_rollbacks", "Canaries stopped by the watch", ["task"],
            registry=registry,
        )  # fmt: skip
        self.shadowed = Counter(
            "textgate_release_shadow", "Shadow copies by agreement", ["task", "agree"],
            registry=registry,
        )  # fmt: skip
        self.operations = Counter(
            "textgate_release_operations", "Admin release operations", ["op", "result"],
            registry=registry,
        )  # fmt: skip

    async def start(self) -> None:
        await self.reconcile()
        self._monitor = asyncio.create_task(self._watch_loop(), name="release-watch")

    async def reconcile(self) -> None:
        """Make Triton match the state before routes are discovered (docs/lifecycle.md):
        a restarted Triton may lack a live version, a crash may have left a retired one."""
        if self.manager.control is None:
            return
        try:
            done = await asyncio.to_thread(self.manager.reconcile)
        except TextgateError as exc:  # serving what Triton has beats not starting at all
            logs.event("release reconcile failed", logging.WARNING, error=exc.message)
            return
        if done["loaded"] or done["unloaded"]:
            logs.event("release state reconciled", loaded=done["loaded"], unloaded=done["unloaded"])

    async def admit(self, grpc_url: str) -> str | None:
        """Before the client re-admits a Triton replica: make it match the release state
        (it may have missed a switch while down). None admits it; else the reason it stays
        out (logged, and shown in /v1/models)."""
        control = self.manager.control
        if not isinstance(control, replicas.Replicas):
            return None
        http = _http_of(self.gateway, control).get(grpc_url)
        if http is None:
            return None
        why = await asyncio.to_thread(
            replicas.reconcile_replica, self.manager, control.replica(http)
        )
        if why is None:
            control.missed.discard(http)
            logs.event("triton replica reconciled", endpoint=grpc_url)
        else:
            logs.event("triton replica kept out", logging.WARNING, endpoint=grpc_url, reason=why)
        return why

    def eject_missed(self) -> None:
        """Replicas that were down during an operation leave rotation until reconciled."""
        control = self.manager.control
        if isinstance(control, replicas.Replicas) and control.missed:
            by_http = {h: g for g, h in _http_of(self.gateway, control).items()}
            for http in control.missed:
                if http in by_http:
                    self.gateway.runtime.client.eject(by_http[http], "missed a release switch")

    async def stop(self) -> None:
        if self._monitor is not None:
            self._monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._monitor

    # --- per request -------------------------------------------------------------------

    def observe(
        self,
        route: Route,
        *,
        ok: bool,
        latency_s: float,
        texts: Sequence[str] = (),
        probs: Sequence[Sequence[float]] = (),
    ) -> None:
        t = self.state.tasks.get(route.task)
        if t is None or not route.version.isdigit():
            return
        if t.mode == "canary":
            watch = self.watches.setdefault(route.task, release.CanaryWatch(self.settings))
            scores: list[float | None] = [float(p[-1]) for p in probs] or [None]
            for score in scores:
                watch.record(int(route.version), ok=ok, latency_s=latency_s, score=score)
        elif (
            t.mode == "shadow"
            and t.candidate is not None
            and ok
            and texts
            and self._shadows < _SHADOW_IN_FLIGHT
        ):
            self._shadows += 1
            task = asyncio.ensure_future(self._shadow(route, t.candidate, texts, probs))
            task.add_done_callback(lambda _t: self._release_shadow())

    def _release_shadow(self) -> None:
        self._shadows -= 1

    async def _shadow(
        self,
        route: Route,
        candidate: int,
        texts: Sequence[str],
        probs: Sequence[Sequence[float]],
    ) -> None:
        try:
            pred = await self.gateway.runtime.client.infer(
                release.ensemble(route.task, candidate), list(texts)
            )
        except TextgateError as exc:
            logs.event("shadow copy failed", logging.WARNING, error=exc.message)
            return
        rows = []
        store = bool(getattr(getattr(self.gateway.config, "events", None), "store_text", False))
        for text, s, c in zip(texts, probs, pred.probabilities.tolist(), strict=True):
            agree = int(np.argmax(s)) == int(np.argmax(c))
            self.shadowed.labels(route.task, str(agree).lower()).inc()
            # events.store_text: false keeps texts off disk here too (compare then needs
            # labelled data: it has no shadowed texts to run).
            kept: dict[str, Any] = {"text": text} if store else {"text_sha256": text_hash(text)}
            row = {**kept, "serving": route.version, "candidate": candidate}
            rows.append({**row, "agree": agree, "serving_probs": list(s), "candidate_probs": c})
        await asyncio.to_thread(self._record, route.task, rows)

    def _record(self, task: str, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            self.manager.record_shadow(task, row)

    # --- automatic rollback ------------------------------------------------------------

    async def _watch_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.watch_interval_s)
            with contextlib.suppress(TextgateError):
                await self.check_canaries()

    async def check_canaries(self) -> list[str]:
        """Stop every canary past its bounds; return the tasks rolled back."""
        stopped = []
        for task, t in self.refresh(force=True).tasks.items():
            watch = self.watches.get(task)
            if t.mode != "canary" or t.candidate is None or watch is None:
                continue
            why = watch.verdict(t.serving, t.candidate)
            if why is None:
                continue
            reason = f"automatic rollback of canary v{t.candidate}: {why}"
            after = await asyncio.to_thread(self.manager.standby, task, reason)
            watch.reset()
            self.auto_rollbacks.labels(task).inc()
            logs.event("release canary rolled back", logging.WARNING, task=task, reason=reason)
            await self.emit(task, "auto-rollback", after)
            stopped.append(task)
        return stopped

    async def emit(self, task: str, op: str, t: dict[str, Any]) -> None:
        """The switch's event into the outbox, from the history entry it committed.

        The switch has happened whatever the outbox says: a full or broken outbox is
        logged, never turned into a failed operation.
        """
        last = (t.get("history") or [{}])[-1]
        try:
            await self.gateway.events.put_release(
                request_id=f"release/{task}/{last.get('seq')}",
                task=task,
                op=op,
                version=int(last.get("version", t["serving"])),
                serving=int(t["serving"]),
                previous_serving=last.get("previous"),
                reason=str(last.get("reason", "")),
                forced=bool(last.get("forced", False)),
            )
        except TextgateError as exc:
            logs.event("release event not stored", logging.WARNING, task=task, error=exc.message)


def _control_of(config: Config, gateway: Gateway) -> release.ModelControl | None:
    """release.triton_http: one host:port, or one per Triton gRPC endpoint (same order)."""
    urls = [u.strip() for u in config.release.triton_http.split(",") if u.strip()]
    key = config.release.triton_api_key
    if len(urls) <= 1:
        return release.HttpControl(urls[0], key) if urls else None
    grpc = gateway.endpoints_override or list(config.client.endpoints)
    if len(grpc) != len(urls):
        raise ConfigError(
            "release.triton_http",
            f"{len(urls)} HTTP endpoints for {len(grpc)} Triton gRPC endpoints",
            hint="list one host:port per client.endpoints entry, in the same order",
        )
    return replicas.Replicas(urls, key)


def _http_of(gateway: Gateway, control: replicas.Replicas) -> dict[str, str]:
    grpc = gateway.endpoints_override or list(gateway.config.client.endpoints)
    return dict(zip(grpc, control.controls, strict=False))


def release_hook(config: Config, gateway: Gateway) -> ReleaseHook | None:
    """The hook when ``release.repository`` is set; None leaves routing as discovered."""
    return ReleaseHook(config, gateway) if config.release.repository is not None else None


# --- the admin API -----------------------------------------------------------------------------


# Admin bodies are a few small JSON fields; a 32 MB unauthenticated body was read and
# parsed before the token was looked at.
MAX_BODY = 65_536
_MODEL = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$", description="Triton model name")


def require_admin(request: Request) -> None:
    token = request.app.state.gateway.config.gateway.admin_token
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
    hook = request.app.state.gateway.releases
    if hook is None:
        raise Conflict("releases are off: set release.repository", field="release.repository")
    return hook  # type: ignore[no-any-return]


async def _run(request: Request, op: str, fn: Any, *args: Any, **kw: Any) -> Any:
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
    gw = request.app.state.gateway
    with contextlib.suppress(TextgateError):
        await gw.rediscover()
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
        coro = hook.gateway.runtime.client.infer(model, list(texts))
        return asyncio.run_coroutine_threadsafe(coro, loop).result().probabilities

    return infer


def _feedback_of(hook: ReleaseHook) -> Path | None:
    """The operators' corrections this gateway collected: their accuracy goes in the report."""
    store = getattr(getattr(hook.gateway.config, "feedback", None), "path", None)
    return Path(store) if store is not None and Path(store).is_file() else None


async def _operate(request: Request, op: release.Operation, args: dict[str, Any]) -> Any:
    hook = _hook(request)
    if op.read_only:
        return await asyncio.to_thread(op.call, hook.manager, args, None)
    if op.restarts_watch:
        hook.watches.pop(args["task"], None)  # a new canary is judged on its own requests
    infer = None
    if op.runs_models:
        infer, args["feedback"] = _infer_of(hook), _feedback_of(hook)
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

"""The ASGI app: ``POST /v1/classify/{task}``, models, health, readiness, metrics, reload.

    app = create_app(Config.load("textgate.yaml"), endpoints=["127.0.0.1:8001"])

Every error leaves through ``http_errors.status_of`` (one table) as
``{"error": {"type", "message", "field"?, "hint"?, "request_id"}}``; 429 and 503 carry
``Retry-After``. Every answer carries ``X-Request-ID`` and ``traceparent``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import signal
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from textgate import __version__, normalize
from textgate.config import Config
from textgate.errors import (
    ConfigError,
    InvalidInput,
    PayloadTooLarge,
    TextgateError,
    TritonError,
    UnsupportedContentType,
)
from textgate.gateway import admin, apidocs, console, corrections, logs, mail, panel, review
from textgate.gateway.coalesce import Coalescer
from textgate.gateway.event_sink import EventSink
from textgate.gateway.http_errors import (
    GatewayError,
    Unauthorized,
    error_body,
    retry_after,
    status_of,
)
from textgate.gateway.limiter import Limiter
from textgate.gateway.policy import Policy, check_labels
from textgate.gateway.pool import ParsePool
from textgate.gateway.prepare import Preparer
from textgate.gateway.prometheus import Metrics
from textgate.gateway.replay import ReplayStore
from textgate.gateway.routing import Router, discover
from textgate.gateway.service import Context, Runtime, Service
from textgate.gateway.session import Sessions
from textgate.triton_client import TritonClient

JSON_TYPES = ("application/json",)
EMAIL_TYPES = ("message/rfc822",)
TEXT_TYPES = ("text/plain",)
_DISCOVERY_RETRY_S = 1.0
_READY_MISSES = 3


# --- schema (documentation of the wire format; the handlers validate by hand) -------------


class ClassifyRequest(BaseModel):
    """Exactly one of ``text`` or ``texts``."""

    text: str | None = Field(None, description="one text", min_length=1)
    texts: list[str] | None = Field(None, description="several texts (batch)", min_length=1)


class ModelRef(BaseModel):
    name: str
    version: str
    variant: str


class ItemResult(BaseModel):
    label: str
    probabilities: dict[str, float | None]
    score: float | None = Field(description="what the policy thresholds compare")
    action: str = Field(description="allow | review | quarantine, or a label | uncertain")
    model: ModelRef
    precision_path: str = Field(description="the variant that answered (fp32 after a re-score)")
    rescored: bool
    request_id: str
    timings_ms: dict[str, float]
    normalization: dict[str, Any] = Field(description="what normalization did")
    explanation: list[dict[str, Any]] | None = Field(
        None, description="with ?explain=N: the N spans that moved the score most (occlusion)"
    )


class ClassifyResponse(BaseModel):
    request_id: str
    task: str
    results: list[ItemResult]


class ErrorDetail(BaseModel):
    type: str
    message: str
    request_id: str
    field: str | None = None
    hint: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": why}
    for code, why in (
        (401, "unknown API key or tenant key"),
        (404, "unknown task"),
        (413, "body over gateway.max_body_bytes"),
        (415, "unsupported Content-Type"),
        (422, "invalid input; `field` names it"),
        (429, "overloaded; see Retry-After"),
        (502, "Triton rejected the request"),
        (503, "Triton or the event outbox unavailable; see Retry-After"),
        (504, "Triton did not answer within the deadline"),
    )
}

_REQUEST_BODY = {
    "required": True,
    "content": {
        # Inline: no route declares the model, so a $ref to it dangled in the published schema.
        "application/json": {"schema": ClassifyRequest.model_json_schema()},
        "message/rfc822": {"schema": {"type": "string", "format": "binary"}},
        "text/plain": {"schema": {"type": "string"}},
    },
}


# --- the gateway object --------------------------------------------------------------------


class Gateway:
    """Owns the runtime (swapped on reload), the metrics and the event sink of one app."""

    def __init__(
        self,
        config: Config,
        *,
        endpoints: Sequence[str] = (),
        config_path: Path | None = None,
    ) -> None:
        self.config = config
        self.endpoints_override = list(endpoints)
        self.config_path = config_path
        # Kept from the start: a reloaded file (which may lack it) must not lock the client
        # out of Triton's restricted repository index.
        self.triton_api_key = config.release.triton_api_key
        self.metrics = Metrics()
        self.events = EventSink(getattr(config, "events", None))
        self.service = Service(self.metrics, self.events)
        # Kept from the start like the outbox: a reload does not move the review store.
        self.review: review.ReviewStore | None = None
        if config.review.path is not None:
            self.review = review.ReviewStore.from_config(config.review, self.metrics.registry)
        self.runtime = self._runtime(config, self._client(config), Router({}))
        self._discovery: asyncio.Task[None] | None = None
        self._reload_lock = asyncio.Lock()
        self.releases = admin.release_hook(config, self)  # versions of released tasks
        self.parse_pool: ParsePool | None = None
        self._misses: dict[str, int] = {}  # consecutive failed readiness probes per model
        self._was_ready: set[str] = set()

    def _endpoints(self, config: Config) -> list[str]:
        return self.endpoints_override or list(config.client.endpoints)

    def _client(self, config: Config) -> TritonClient:
        client = TritonClient(self._endpoints(config), config.client, api_key=self.triton_api_key)
        client.admit = self._admit
        return client

    async def _admit(self, endpoint: str) -> str | None:
        """A returning Triton replica first matches the release state (admin.ReleaseHook)."""
        hook = getattr(self, "releases", None)
        return await hook.admit(endpoint) if hook is not None else None

    def _runtime(self, config: Config, client: TritonClient, router: Router) -> Runtime:
        gw = config.gateway
        return Runtime(
            config=config,
            policy=Policy(config.policy),
            limiter=Limiter(gw),
            router=router,
            client=client,
            preparer=Preparer(config.normalize, max_body_bytes=gw.max_body_bytes),
            replay=ReplayStore(gw.replay_dir) if gw.replay_dir else None,
            parse_pool=getattr(self, "parse_pool", None),
            coalescer=Coalescer.from_config(client, gw),
        )

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        gw = self.config.gateway
        if gw.parse_workers:
            self.parse_pool = ParsePool(workers=gw.parse_workers, budget_s=gw.parse_budget_s)
            await self.parse_pool.start()
            self.runtime.parse_pool = self.parse_pool
        await self.events.start(self.metrics.registry)
        await self.runtime.client.start()
        if self.releases is not None:
            await self.releases.start()
        try:
            await self._discover()
        except TritonError as exc:
            logs.event("triton not ready yet; discovering in the background", error=exc.message)
            self._discovery = asyncio.create_task(self._discover_until_found())

    async def stop(self) -> None:
        if self._discovery is not None:
            self._discovery.cancel()
        if self.runtime.coalescer is not None:
            await self.runtime.coalescer.close()
        await self.runtime.client.close()
        if self.parse_pool is not None:
            await self.parse_pool.close()
            self.parse_pool = None
        await self.events.stop()
        if self.releases is not None:
            await self.releases.stop()
        if self.review is not None:
            self.review.close()
            self.review = None

    async def _discover(self) -> None:
        rt = self.runtime
        router = await discover(rt.client, rt.config.gateway.tasks, self.releases)
        _check_policy(rt.config, router)
        _check_normalization(rt.preparer.settings, router)
        rt.router = router
        logs.event("tasks discovered", tasks=sorted(router.routes))

    async def rediscover(self) -> None:
        """After a release operation: the routes include models loaded since the last look."""
        async with self._reload_lock:
            await self._discover()

    async def _discover_until_found(self) -> None:
        while True:
            await asyncio.sleep(_DISCOVERY_RETRY_S)
            with contextlib.suppress(TritonError, ConfigError):
                await self._discover()
                return

    async def reload(self) -> dict[str, Any]:
        """Load the config again; on any problem keep the old one and raise the reason."""
        async with self._reload_lock:
            try:
                new = Config.load(self.config_path)
                result = await self._swap(new)
            except TextgateError as exc:
                self.metrics.reloads.labels("rejected").inc()
                logs.event("config reload rejected", logging.WARNING, error=exc.message)
                raise
            self.metrics.reloads.labels("applied").inc()
            logs.event("config reloaded", **result)
            return result

    async def _swap(self, new: Config) -> dict[str, Any]:
        old = self.runtime
        same_client = (
            self._endpoints(new) == self._endpoints(old.config) and new.client == old.config.client
        )
        client = old.client if same_client else self._client(new)
        if not same_client:
            await client.start()
        try:
            router = await discover(client, new.gateway.tasks, self.releases)
            _check_policy(new, router)
            _check_normalization(self._runtime(new, client, router).preparer.settings, router)
        except TextgateError:
            if not same_client:
                await client.close()
            raise
        # Requests already running keep the runtime they started with.
        self.runtime = self._runtime(new, client, router)
        self.config = new
        if not same_client:
            asyncio.get_running_loop().call_later(
                new.client.timeout_s + 1, lambda: asyncio.ensure_future(old.client.close())
            )
        return {"tasks": sorted(router.routes), "new_client": not same_client}

    async def ready(self) -> tuple[bool, str]:
        """Ready when every model is. Hysteresis: a model that was ready counts as down
        only after ``_READY_MISSES`` failed probes in a row (one slow probe under load
        flipped /readyz and took the gateway out of its load balancer)."""
        rt = self.runtime
        if not rt.router.routes:
            return False, "no task discovered yet"
        states = await rt.client.models_ready(rt.router.models())
        down = []
        for model, ok in states.items():
            misses = 0 if ok else self._misses.get(model, 0) + 1
            self._misses[model] = misses
            if ok:
                self._was_ready.add(model)
            elif model not in self._was_ready or misses >= _READY_MISSES:
                down.append(model)
        return (not down, f"not ready: {', '.join(down)}" if down else "ready")


def _check_policy(config: Config, router: Router) -> None:
    """A policy must fit the models it applies to (validated at load, not per request)."""
    for route in router.routes.values():
        rules = [config.policy.for_task(route.task)]
        rules += [p for t in config.policy.tenants for p in t.tasks if p.task == route.task]
        for rule in rules:
            problem = check_labels(rule, route.labels)
            if problem:
                raise ConfigError(f"policy.tasks[{route.task}].positive_label", problem)


def _check_normalization(settings: Any, router: Router) -> None:
    """Train/serve skew is an error: a model trained on other normalization is refused."""
    for route in router.routes.values():
        if not route.normalization or settings is None:
            continue  # bundles from before textgate recorded it
        problems = normalize.skew(json.loads(route.normalization), settings)
        if problems:
            raise ConfigError(
                "normalize",
                f"task '{route.task}' ({route.model}) was trained with other normalization "
                f"than this gateway's: {'; '.join(problems)}",
                hint="set the normalize section to the bundle's settings, or rebuild the bundle",
            )


# --- request plumbing ----------------------------------------------------------------------


async def _read_body(request: Request, limit: int) -> bytes:
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise PayloadTooLarge(
            f"body of {length} bytes is over the limit of {limit}",
            field="body",
            reason="too_large",
            limit=limit,
        )
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(
                    f"body is over the limit of {limit} bytes",
                    field="body",
                    reason="too_large",
                    limit=limit,
                )
            chunks.append(chunk)
    except ClientDisconnect:  # the front door's body deadline, or the client gave up
        raise InvalidInput("did not arrive", field="body", reason="incomplete") from None
    return b"".join(chunks)


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def _parse(media: str, body: bytes, max_batch: int) -> list[str | bytes]:
    if media in EMAIL_TYPES:
        return [body]
    if media in TEXT_TYPES:
        return [_utf8(body, "body")]
    if media not in JSON_TYPES and not media.endswith("+json"):
        raise UnsupportedContentType(
            f"unsupported Content-Type '{media[:80] or '(none)'}'",
            field="content-type",
            hint="send application/json, message/rfc822 or text/plain",
        )
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        # orjson is stricter (lone surrogates, NaN, huge ints, depth): the standard parser
        # decides, so answers and error messages are exactly those of json.loads.
        data = _json_slow(body)
    return _texts(data, max_batch)


def _json_slow(body: bytes) -> Any:
    try:
        return json.loads(_utf8(body, "body"))
    except RecursionError:
        raise InvalidInput("JSON nested too deeply", field="body") from None
    except ValueError as exc:
        raise InvalidInput(f"not valid JSON: {exc}", field="body") from None


def _utf8(body: bytes, name: str) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"not valid UTF-8 (byte {exc.start})", field=name) from None


def _texts(data: Any, max_batch: int) -> list[str | bytes]:
    if not isinstance(data, dict):
        raise InvalidInput("must be a JSON object", field="body")
    unknown = sorted(set(data) - {"text", "texts"})
    if unknown:
        raise InvalidInput("unknown field", field=unknown[0][:64])
    if ("text" in data) == ("texts" in data):
        raise InvalidInput("send exactly one of 'text' or 'texts'", field="text")
    if "text" in data:
        if not isinstance(data["text"], str):
            raise InvalidInput("must be a string", field="text")
        return [data["text"]]
    texts = data["texts"]
    if not isinstance(texts, list) or not texts:
        raise InvalidInput("must be a non-empty list of strings", field="texts")
    if len(texts) > max_batch:
        raise InvalidInput(f"{len(texts)} texts; at most {max_batch}", field="texts")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InvalidInput("must be a string", field=f"texts[{i}]")
    return list(texts)


def _error_response(exc: BaseException, request: Request, gateway: Gateway) -> JSONResponse:
    rid = getattr(request.state, "request_id", "") or logs.request_id_var.get()
    code = status_of(exc)
    if code >= 500 and not isinstance(exc, TextgateError):
        # The detail goes to the log, under the request id; the client gets a generic body.
        logs.logger.error("unexpected error", exc_info=exc, extra={"request_id": rid, "fields": {}})
    headers = {}
    after = retry_after(exc, gateway.config.gateway.retry_after_s)
    if after is not None:
        headers["Retry-After"] = str(after)
    if code == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(error_body(exc, rid), status_code=code, headers=headers)


# --- the app -------------------------------------------------------------------------------


def create_app(
    config: Config | None = None,
    *,
    endpoints: Sequence[str] = (),
    config_path: Path | None = None,
) -> FastAPI:
    config = config or Config()
    holder: dict[str, Gateway] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        gw = holder.setdefault("gw", Gateway(config, endpoints=endpoints, config_path=config_path))
        app.state.gateway = gw
        app.state.sessions = Sessions(gw.config.review.session_ttl_s)
        app.state.rates = panel.Rates()
        await gw.start()
        app.state.rates.sample(gw)  # the live panel's base: rates since startup
        app.state.mail = desk = mail.Mail(gw)  # spamd/milter listeners, feedback store
        await desk.start()
        _install_sighup(gw)
        try:
            yield
        finally:
            await desk.stop()
            await gw.stop()

    app = FastAPI(
        title="textgate",
        version=__version__,
        description="Text classification (spam, sentiment) on NVIDIA Triton: verdicts, not logits.",
        lifespan=lifespan,
        docs_url=None,  # Swagger UI loads its assets from a CDN: blank offline (apidocs)
        redoc_url=None,
    )
    _routes(app)
    _handlers(app)
    app.include_router(admin.router)
    app.include_router(corrections.router)
    app.include_router(console.router)
    app.include_router(apidocs.router)
    _middleware(app)
    return app


def _install_sighup(gw: Gateway) -> None:
    # Signal handlers belong to the main thread; an app run in a test thread reloads via
    # the admin endpoint instead.
    if threading.current_thread() is not threading.main_thread():
        return

    async def reload() -> None:
        with contextlib.suppress(TextgateError):  # logged; the old config stays
            await gw.reload()

    with contextlib.suppress(NotImplementedError, RuntimeError):
        asyncio.get_running_loop().add_signal_handler(
            signal.SIGHUP, lambda: asyncio.ensure_future(reload())
        )


def _gw(request: Request) -> Gateway:
    return request.app.state.gateway  # type: ignore[no-any-return]


def _routes(app: FastAPI) -> None:
    @app.post(
        "/v1/classify/{task}",
        response_model=ClassifyResponse,
        responses=_ERRORS,
        openapi_extra={"requestBody": _REQUEST_BODY},
        summary="Classify a text, a batch of texts, or a raw e-mail",
    )
    async def classify(task: str, request: Request) -> Any:
        gw = _gw(request)
        rt = gw.runtime  # this request's runtime, whatever a reload does meanwhile
        ctx = Context(request_id=request.state.request_id, headers=_triton_headers(request))
        media = _media_type(request)
        if media not in (*JSON_TYPES, *EMAIL_TYPES, *TEXT_TYPES) and not media.endswith("+json"):
            _parse(media, b"", 1)  # 415 before reading the body
        body = await _read_body(request, rt.config.gateway.max_body_bytes)
        raw = _parse(media, body, rt.config.gateway.max_batch)
        ctx.tenant = request.state.tenant = rt.policy.tenant(request.headers)
        ctx.sender = request.headers.get("x-sender")  # a canary key option
        if request.headers.get("x-request-id") == ctx.request_id:  # the client's own id
            ctx.client_id = ctx.request_id
            ctx.payload_sha256 = _payload_hash(task, media, body)
        results = await gw.service.classify(rt, task, raw, ctx)
        desk: mail.Mail = request.app.state.mail
        desk.remember(task, raw, ctx.tenant, results)
        await corrections.add_explanations(request, desk, rt, task, raw, results, ctx)
        if gw.review is not None:
            actions = rt.config.review.actions
            await review.keep_results(gw.review, actions, task, raw, ctx.tenant, results, ctx.texts)
        gw.metrics.classified(task, ctx.tenant, results)
        gw.metrics.observe_stages(ctx.timings_ms, task)
        request.state.task = task
        # Serialized here, not validated into ClassifyResponse by FastAPI (~80 us an answer,
        # benchmarks/response_validation.py); the contract test and the schemathesis run
        # check every answer's shape against the schema.
        out = {"request_id": ctx.request_id, "task": task, "results": results}
        replay = {"X-Idempotent-Replay": "true"} if ctx.repeated else None
        return Response(orjson.dumps(out), media_type="application/json", headers=replay)

    @app.get("/v1/models", summary="Tasks, models, versions, variants and thresholds")
    async def models(request: Request) -> dict[str, Any]:
        rt = _gw(request).runtime
        out = []
        for name in rt.router.public():
            route = rt.router.routes[name]
            rule = rt.policy.rule(name)
            out.append(
                {
                    "task": name,
                    "labels": list(route.labels),
                    "model": route.describe(),
                    "rescore": {
                        "model": route.precise,
                        "variant": route.precise_variant,
                        "enabled": bool(route.precise and rt.config.gateway.rescore),
                        "band": rule.rescore_band,
                    },
                    "policy": {
                        "kind": rule.kind,
                        "positive_label": rule.positive_label,
                        "review_at": rule.review_at,
                        "quarantine_at": rule.quarantine_at,
                        "uncertain_band": rule.uncertain_band,
                        "thresholds": list(rule.thresholds()),
                    },
                    "tenant_overrides": [
                        t.name
                        for t in rt.config.policy.tenants
                        if any(p.task == name for p in t.tasks)
                    ],
                }
            )
        return {"tasks": out, "endpoints": rt.client.describe()}

    @app.get("/healthz", summary="The process is alive")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", summary="Every configured task's Triton models are ready")
    async def readyz(request: Request) -> JSONResponse:
        ok, reason = await _gw(request).ready()
        return JSONResponse({"ready": ok, "reason": reason}, status_code=200 if ok else 503)

    @app.get("/metrics", summary="Prometheus metrics", response_class=Response)
    async def metrics(request: Request) -> Response:
        gw = _gw(request)
        for ep in gw.runtime.client.describe():
            gw.metrics.endpoint_healthy.labels(ep["endpoint"]).set(1 if ep["healthy"] else 0)
        gw.metrics.retries.set(gw.runtime.client.retries)
        return Response(gw.metrics.render(), media_type="text/plain; version=0.0.4")

    @app.post(
        "/admin/reload",
        summary="Reload the config file (Authorization: Bearer <gateway.admin_token>)",
        responses={401: _ERRORS[401], 422: {"model": ErrorResponse, "description": "rejected"}},
    )
    async def reload(request: Request) -> dict[str, Any]:
        gw = _gw(request)
        token = gw.config.gateway.admin_token
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not token or not hmac.compare_digest(token.encode(), given.encode()):
            raise Unauthorized("admin token missing or wrong", field="authorization")
        return {"reloaded": True, **await gw.reload()}


def _payload_hash(task: str, media: str, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (task.encode("utf-8", "surrogatepass"), media.encode("latin-1", "replace"), body):
        digest.update(len(part).to_bytes(8, "big") + part)  # length-prefixed: unambiguous
    return digest.hexdigest()


def _overrides(rt: Runtime, task: str) -> list[str]:
    return [t.name for t in rt.config.policy.tenants if any(p.task == task for p in t.tasks)]


def _triton_headers(request: Request) -> dict[str, str]:
    """What Triton gets as gRPC metadata: the trace context of this request."""
    return {"traceparent": request.state.trace.traceparent}


def _handlers(app: FastAPI) -> None:
    @app.exception_handler(TextgateError)
    async def textgate_error(request: Request, exc: TextgateError) -> JSONResponse:
        return _error_response(exc, request, _gw(request))

    @app.exception_handler(RequestValidationError)
    async def validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = (exc.errors() or [{}])[0]
        where = ".".join(str(x) for x in first.get("loc", ()) if x not in ("body", "path"))
        err = InvalidInput(str(first.get("msg", "invalid request")), field=where or None)
        return _error_response(err, request, _gw(request))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        err = GatewayError(str(exc.detail))
        response = _error_response(err, request, _gw(request))
        response.status_code = exc.status_code
        return response

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        return _error_response(exc, request, _gw(request))


def _middleware(app: FastAPI) -> None:
    # Plain ASGI middleware: Starlette's @app.middleware("http") runs every request through
    # an anyio task group and memory streams per layer, a measurable share of a request.
    # Added first, so it runs inside ``_Context`` (which sets the request id).
    app.add_middleware(_AdminGate)
    app.add_middleware(_Context)


class _AdminGate:
    """Admin and console requests are checked (peer, token shape, size) before any body is
    read."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path.startswith("/admin/") or path.startswith("/ui/"):
            gw: Gateway | None = getattr(scope["app"].state, "gateway", None)
            if gw is not None:
                request = Request(scope)
                check = admin.check_before_body if path.startswith("/admin/") else None
                try:
                    (check or console.check_before_body)(request)
                except GatewayError as exc:
                    await _error_response(exc, request, gw)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


class _Context:
    """Request id and trace context, in-flight gauge, and the classify log line."""

    def __init__(self, app: Any) -> None:
        self.app = app

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
        secure = console.security_headers(scope["path"])

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
            _account(gw, Request(scope), status, rid, start)


_IDS = (b"x-request-id", b"traceparent")


def _account(gw: Gateway, request: Request, code: int, rid: str, start: float) -> None:
    task = request.path_params.get("task") or request.url.path.rsplit("/", 1)[-1]
    # Labels only for tasks that exist: 60 random task names were 60 new series each.
    task = task if task in gw.runtime.router.public() else "unknown"
    if code != 200:
        tenant = getattr(request.state, "tenant", None)
        gw.metrics.failed(task, gw.runtime.router.routes, tenant, code)
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
                "trace_id": request.state.trace.trace_id,
            },
        },
    )


def openapi_json() -> str:
    """The schema as committed in docs/openapi.json (stable key order)."""
    return json.dumps(create_app().openapi(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(openapi_json(), end="")

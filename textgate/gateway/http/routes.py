"""HTTP's own routes: ``POST /v1/classify/{task}``, models, health, readiness, metrics.

The admin, feedback and docs routes come from their own modules in this room; body reading
and parsing in ``request_body.py``; the wire schema in ``schema.py``; errors in
``error_handlers.py`` (one table: ``http_errors.py``); request ids, traces and the admin
gate in ``middleware.py``. Every answer carries ``X-Request-ID`` and ``traceparent``.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from textgate.gateway.http import corrections, request_body
from textgate.gateway.http.schema import ERRORS, REQUEST_BODY, ClassifyResponse
from textgate.gateway.runtime import gateway_of
from textgate.gateway.scoring.context import Context, Runtime


def install(app: FastAPI) -> None:
    @app.post(
        "/v1/classify/{task}",
        response_model=ClassifyResponse,
        responses=ERRORS,
        openapi_extra={"requestBody": REQUEST_BODY},
        summary="Classify a text, a batch of texts, or a raw e-mail",
    )
    async def classify(task: str, request: Request) -> Any:
        gw = gateway_of(request)
        rt = gw.runtime  # this request's runtime, whatever a reload does meanwhile
        media = request_body.media_type(request)
        request_body.check_media(media)  # 415 before reading the body
        body = await request_body.read_body(request, rt.config.gateway.max_body_bytes)
        raw = request_body.parse(media, body, rt.config.gateway.max_batch)
        ctx = _context(request, rt, task, media, body)
        explain = corrections.explain_count(request)
        results = (await gw.service.run(rt, task, raw, ctx, explain=explain)).results
        # Serialized here, not validated into ClassifyResponse by FastAPI (its cost: docs/
        # benchmarks.md, response validation); the contract test and the schemathesis run
        # check every answer's shape against the schema.
        out = {"request_id": ctx.request_id, "task": task, "results": results}
        replay = {"X-Idempotent-Replay": "true"} if ctx.repeated else None
        return Response(orjson.dumps(out), media_type="application/json", headers=replay)

    @app.get("/v1/models", summary="Tasks, models, versions, variants and thresholds")
    async def models(request: Request) -> dict[str, Any]:
        rt = gateway_of(request).runtime
        out = [_describe(rt, name) for name in rt.router.public()]
        return {"tasks": out, "endpoints": rt.client.describe()}

    @app.get("/healthz", summary="The process is alive")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", summary="Every configured task's Triton models are ready")
    async def readyz(request: Request) -> JSONResponse:
        ok, reason = await gateway_of(request).ready()
        return JSONResponse({"ready": ok, "reason": reason}, status_code=200 if ok else 503)

    @app.get("/metrics", summary="Prometheus metrics", response_class=Response)
    async def metrics(request: Request) -> Response:
        gw = gateway_of(request)
        for ep in gw.runtime.client.describe():
            gw.metrics.endpoint_healthy.labels(ep["endpoint"]).set(1 if ep["healthy"] else 0)
        gw.metrics.retries.set(gw.runtime.client.retries)
        return Response(gw.metrics.render(), media_type="text/plain; version=0.0.4")


def _context(request: Request, rt: Runtime, task: str, media: str, body: bytes) -> Context:
    # Triton gets the trace context as gRPC metadata.
    ctx = Context(
        request_id=request.state.request_id,
        headers={"traceparent": request.state.trace.traceparent},
    )
    ctx.tenant = request.state.tenant = rt.policy.tenant(request.headers)
    ctx.sender = request.headers.get("x-sender")  # a canary key option
    if request.headers.get("x-request-id") == ctx.request_id:  # the client's own id
        ctx.client_id = ctx.request_id
        ctx.payload_sha256 = request_body.payload_hash(task, media, body)
    return ctx


def _describe(rt: Runtime, name: str) -> dict[str, Any]:
    """One task as /v1/models lists it: model, re-score, policy, tenants with overrides."""
    route, rule = rt.router.routes[name], rt.policy.rule(name)
    return {
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
            t.name for t in rt.config.policy.tenants if any(p.task == name for p in t.tasks)
        ],
    }

"""Every error leaves the app here: one status (``http_errors.status_of``), one body shape
``{"error": {"type", "message", "request_id", "field"?, "hint"?}}``, ``Retry-After`` on
429 and 503, ``WWW-Authenticate`` on 401.

FastAPI's own refusals (a schema violation on an admin body, a 404/405 from the router) are
turned into the same shape; anything outside the tree is a bug: a generic 500 body, and the
traceback in the log under the request id.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from textgate.errors import GatewayError, InvalidInput, TextgateError
from textgate.gateway.http.http_errors import error_body, retry_after, status_of
from textgate.gateway.records import logs
from textgate.gateway.runtime import gateway_of


def error_response(exc: BaseException, request: Request) -> JSONResponse:
    rid = getattr(request.state, "request_id", "") or logs.request_id_var.get()
    code = status_of(exc)
    if code >= 500 and not isinstance(exc, TextgateError):
        # The detail goes to the log, under the request id; the client gets a generic body.
        logs.logger.error("unexpected error", exc_info=exc, extra={"request_id": rid, "fields": {}})
    headers = {}
    after = retry_after(exc, gateway_of(request).config.gateway.retry_after_s)
    if after is not None:
        headers["Retry-After"] = str(after)
    if code == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return JSONResponse(error_body(exc, rid), status_code=code, headers=headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(TextgateError)
    async def textgate_error(request: Request, exc: TextgateError) -> JSONResponse:
        return error_response(exc, request)

    @app.exception_handler(RequestValidationError)
    async def validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = (exc.errors() or [{}])[0]
        where = ".".join(str(x) for x in first.get("loc", ()) if x not in ("body", "path"))
        err = InvalidInput(str(first.get("msg", "invalid request")), field=where or None)
        return error_response(err, request)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = error_response(GatewayError(str(exc.detail)), request)
        response.status_code = exc.status_code
        return response

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        return error_response(exc, request)

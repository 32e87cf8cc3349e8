"""One table: exception class -> HTTP status, and the gateway's own exception classes.

The most specific class in an exception's MRO wins, so a subclass added later (e.g. a new
input error) is mapped by its parent until it gets its own row. Anything not in the tree is
a bug in textgate and the only thing that may become a 500.
"""

from __future__ import annotations

from typing import Any

from textgate import errors


class GatewayError(errors.TextgateError):
    """An HTTP-level problem the client caused; ``field`` names the offending input."""

    def __init__(self, message: str, *, field: str | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.field = field


class UnknownTask(GatewayError):
    """The path names a task that no Triton endpoint serves."""


class Unauthorized(GatewayError):
    """A missing or wrong API key or admin token."""


class ValidationFailed(GatewayError):
    """The request body or a header is not what the schema says (422)."""


class BodyTooLarge(GatewayError):
    """The body is over ``gateway.max_body_bytes`` (413)."""


class UnsupportedContentType(GatewayError):
    """The Content-Type is not JSON or message/rfc822 (415)."""


STATUS: dict[type[BaseException], int] = {
    UnknownTask: 404,
    Unauthorized: 401,
    ValidationFailed: 422,
    BodyTooLarge: 413,
    UnsupportedContentType: 415,
    GatewayError: 400,
    errors.Overloaded: 429,
    errors.TritonUnavailable: 503,
    errors.TritonTimeout: 504,
    errors.TritonError: 502,
    errors.ConfigError: 422,  # a rejected reload: the old config stays
    errors.DataError: 422,
    errors.TextgateError: 500,
}

# Rows added by name: classes the normalization and events modules define (in errors.py)
# as they land. Looking them up by name keeps this table importable before they exist.
_BY_NAME = {
    "InputError": 422,
    "PayloadTooLarge": 413,
    "BodyTooLarge": 413,
    "UnsupportedMediaType": 415,
    "UnsupportedMedia": 415,
    "ValidationError": 422,
    "OutboxFull": 503,
    "OutboxOverflow": 503,
    "EventsUnavailable": 503,
}


def status_of(exc: BaseException) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
        if cls.__name__ in _BY_NAME:
            return _BY_NAME[cls.__name__]
    return 500


def error_body(exc: BaseException, request_id: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": type(exc).__name__,
        "message": getattr(exc, "message", None) or str(exc) or type(exc).__name__,
        "request_id": request_id,
    }
    for attr in ("field", "hint"):
        value = getattr(exc, attr, None)
        if value:
            body[attr] = value
    return {"error": body}


def retry_after(exc: BaseException, default: int) -> int | None:
    """Seconds for the Retry-After header of 429 and 503 answers."""
    if status_of(exc) not in (429, 503):
        return None
    value = getattr(exc, "retry_after_s", None)
    return int(value) if isinstance(value, int | float) and value > 0 else default

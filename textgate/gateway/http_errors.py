"""One table: exception class -> HTTP status, and the gateway's HTTP-level exceptions.

The most specific class in an exception's MRO wins, so a subclass added later (e.g. a new
input error) is mapped by its parent until it gets its own row. Anything outside the tree
is a bug in textgate and the only thing that may become a 500.

What an input error is (too large, unsupported content type, invalid) is said once, in
``textgate.errors``; the classes here are the ones only HTTP has: an unknown task in the
path, a missing key or token, a conflict with the state, another tenant's message.
"""

from __future__ import annotations

from typing import Any

from textgate import errors


class GatewayError(errors.InputError):
    """An HTTP-level problem the client caused; ``field`` names the offending input."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        reason: str = "invalid",
        hint: str | None = None,
    ) -> None:
        super().__init__(message, reason=reason, hint=hint)
        self.field = field


class UnknownTask(GatewayError):
    """The path names a task that no Triton endpoint serves."""


class Unauthorized(GatewayError):
    """A missing or wrong API key or admin token."""


class Conflict(GatewayError):
    """A request the current state does not allow (releases off, a contradicting decision)."""


class Forbidden(GatewayError):
    """A known caller asks for something that is not its own (another tenant's mail) (403)."""


class NotFound(GatewayError):
    """A request names something the gateway does not have (an expired request id) (404)."""


STATUS: dict[type[BaseException], int] = {
    UnknownTask: 404,
    NotFound: 404,
    Unauthorized: 401,
    Forbidden: 403,
    Conflict: 409,
    errors.PayloadTooLarge: 413,
    errors.UnsupportedContentType: 415,
    errors.InputError: 422,  # InvalidInput, EmptyText, MalformedMessage, MessageTooComplex
    errors.Overloaded: 429,
    errors.OutboxFull: 503,  # events cannot be made durable: refuse rather than lose them
    errors.OutboxError: 503,
    errors.FeedbackError: 503,
    errors.ParseWorkerError: 503,  # the e-mail parse pool could not start a worker
    errors.TritonUnavailable: 503,
    errors.TritonTimeout: 504,
    errors.TritonError: 502,
    errors.ConfigError: 422,  # a rejected reload: the old config stays
    errors.DataError: 422,
    errors.ReleaseError: 409,  # an operation the release state does not allow now
    errors.BundleError: 422,  # the bundle an admin named is bad: a 4xx naming it
    errors.TextgateError: 500,
}


def status_of(exc: BaseException) -> int:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


# What a client sees of an exception outside the tree (a bug): no text of ours or theirs.
INTERNAL_MESSAGE = "internal error; the gateway log has the details under this request_id"
_MAX_MESSAGE = 500


def error_body(exc: BaseException, request_id: str) -> dict[str, Any]:
    if not isinstance(exc, errors.TextgateError):
        return {
            "error": {
                "type": "InternalError",
                "message": INTERNAL_MESSAGE,
                "request_id": request_id,
            }
        }
    body: dict[str, Any] = {
        "type": type(exc).__name__,
        "message": safe_text(exc.message or type(exc).__name__),
        "request_id": safe_text(request_id),
    }
    for attr in ("field", "hint"):
        value = getattr(exc, attr, None)
        if value:
            body[attr] = safe_text(str(value))
    return {"error": body}


def safe_text(value: str, limit: int = _MAX_MESSAGE) -> str:
    """Client-controlled text in an answer: JSON-encodable (a lone surrogate from a JSON
    escape becomes its ``\\ud800`` spelling), controls escaped, and bounded."""
    clipped = value if len(value) <= limit else value[:limit] + "…"
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode-escape").decode("ascii")
        for ch in clipped.encode("utf-8", "backslashreplace").decode("utf-8")
    )


def retry_after(exc: BaseException, default: int) -> int | None:
    """Seconds for the Retry-After header of 429 and 503 answers."""
    if status_of(exc) not in (429, 503):
        return None
    value = getattr(exc, "retry_after_s", None)
    return int(value) if isinstance(value, int | float) and value > 0 else default

"""HTTP's one table: an error's ``kind`` (``textgate.errors.Kind``) -> HTTP status; and the
JSON body every error answer carries.

What an error is, and every class of it, is said once, in ``textgate.errors``; spamd and
the milter map the same kinds in tables of their own. Anything outside the tree is a bug in
textgate and the only thing that may become a 500.
"""

from __future__ import annotations

from typing import Any

from textgate import errors
from textgate.errors import Kind

STATUS: dict[Kind, int] = {
    Kind.INVALID: 422,  # input, a rejected reload (the old config stays), a bad bundle
    Kind.TOO_LARGE: 413,
    Kind.UNSUPPORTED: 415,
    Kind.NOT_FOUND: 404,
    Kind.UNAUTHENTICATED: 401,
    Kind.FORBIDDEN: 403,
    Kind.CONFLICT: 409,  # also a release operation the release state does not allow now
    Kind.OVERLOADED: 429,
    Kind.UNAVAILABLE: 503,  # e.g. events cannot be made durable: refuse rather than lose them
    Kind.TIMEOUT: 504,
    Kind.UPSTREAM: 502,
    Kind.INTERNAL: 500,
    Kind.BUG: 500,
}


def status_of(exc: BaseException) -> int:
    return STATUS[errors.kind_of(exc)]


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

"""Structured JSON logs with the request id; X-Request-ID and W3C traceparent handling."""

from __future__ import annotations

import contextvars
import json
import logging
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import Any

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:/+=-]{1,128}$")
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")

logger = logging.getLogger("textgate.gateway")


@dataclass(frozen=True)
class Trace:
    """The W3C trace context of one request: ours is a child span of the caller's."""

    trace_id: str
    span_id: str
    flags: str = "01"

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{self.flags}"


def request_id(header: str | None) -> str:
    """The caller's X-Request-ID when it is a sane token, else a new one."""
    if header and _REQUEST_ID.match(header):
        return header
    return _hex(16)


def _hex(n: int) -> str:
    # secrets.token_hex without its two Python-level hops (SystemRandom.randbytes): the
    # same os.urandom bytes, three ids a request.
    return os.urandom(n).hex()


def trace(header: str | None) -> Trace:
    """Continue the caller's trace (new span id) or start a new one."""
    match = _TRACEPARENT.match(header.strip().lower()) if header else None
    if match and match.group(1) != "ff" and set(match.group(2)) != {"0"}:
        return Trace(match.group(2), _hex(8), match.group(4))
    return Trace(_hex(16), _hex(8))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = getattr(record, "request_id", None) or request_id_var.get()
        if rid:
            data["request_id"] = rid
        data.update(getattr(record, "fields", {}) or {})
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str, ensure_ascii=False)


def setup(fmt: str = "json", level: int = logging.INFO) -> None:
    """Send textgate's and uvicorn's logs to stderr, one JSON object per line."""
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    for name in ("textgate", "uvicorn", "uvicorn.error"):
        log = logging.getLogger(name)
        log.handlers[:] = [handler]
        log.setLevel(level)
        log.propagate = False
    logging.getLogger("uvicorn.access").disabled = True  # our request log replaces it


def event(msg: str, level: int = logging.INFO, **fields: Any) -> None:
    logger.log(level, msg, extra={"fields": fields})

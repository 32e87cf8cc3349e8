"""The front door: what an HTTP connection may cost before the app sees a request.

uvicorn on its own accepted a 16 MB header, held 1-byte/s headers and bodies open with no
read deadline, kept a connection that never sent a byte, and had no connection cap. Here:

- request head (request line + headers) over ``max_request_header_bytes``: 431, closed;
- head not complete within ``header_timeout_s`` of the connection (or of the previous
  answer on a kept-alive one): 408, closed — slow-loris headers and silent connections;
- body not complete within ``body_timeout_s`` of its head: 408, closed — slow bodies and
  a Content-Length larger than the body;
- idle kept-alive connections closed after ``idle_timeout_s`` (uvicorn's keep-alive);
- at most ``max_connections`` connections and requests at once (uvicorn answers 503).

The protocol is uvicorn's httptools one with timers and a byte count added; everything
else (parsing, pipelining, flow control) is uvicorn's.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from textgate.config import GatewayConfig
from textgate.gateway.http import upstream


class GuardedProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with a head size cap and head/body read deadlines."""

    header_timeout_s = 10.0
    body_timeout_s = 30.0
    max_request_header_bytes = 65_536

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._in_head = True
        self._head_bytes = 0  # bytes received while the head is incomplete
        self._parsed_head = 0  # request line + headers as parsed
        self._refused = False  # answered here: the parser's later callbacks are ignored
        self._deadline: asyncio.TimerHandle | None = None
        self._arm(self.header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > self.max_request_header_bytes:
            self._refuse(431, "request headers too large")

    def on_message_begin(self) -> None:
        self._parsed_head = 0
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._parsed_head += len(url)
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._parsed_head += len(name) + len(value) + 4
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_bytes = 0
        # A whole head can arrive in one read: count what the parser saw, too.
        if self._parsed_head > self.max_request_header_bytes:
            self._refuse(431, "request headers too large")
            return
        self._arm(self.body_timeout_s)
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        self._disarm()
        if not self._refused:
            super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            # The next request's head has its own deadline (uvicorn's keep-alive timer is
            # cancelled by the first byte, so a slow next head would otherwise never end).
            self._in_head = True
            self._head_bytes = 0
            self._arm(self.header_timeout_s)

    # --- timers ------------------------------------------------------------------------

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()  # type: ignore[union-attr]
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        what = "request headers" if self._in_head else "request body"
        self._refuse(408, f"{what} not received in time")

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` when no response has started, then close the connection."""
        if self.transport.is_closing():
            return
        self._refused = True
        cycle = self.cycle
        if cycle is None or cycle.response_complete or not cycle.response_started:
            error = {"type": "FrontDoor", "message": message, "status": status}
            body = json.dumps({"error": error}).encode()
            head = [STATUS_LINE[status]]
            head += [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                b"connection: close\r\n\r\n",
            ]
            self.transport.write(b"".join(head) + body)
            if cycle is not None and not cycle.response_complete:
                # The app sees a disconnect; its own answer, if it sends one, is dropped.
                cycle.response_complete = True
                cycle.disconnected = True
        self.transport.close()


def protocol_for(gw: GatewayConfig) -> type[asyncio.Protocol]:
    """GuardedProtocol with this config's limits (uvicorn instantiates the class)."""
    return type(
        "GatewayProtocol",
        (GuardedProtocol,),
        {
            "header_timeout_s": gw.header_timeout_s,
            "body_timeout_s": gw.body_timeout_s,
            "max_request_header_bytes": gw.max_request_header_bytes,
        },
    )


def uvicorn_config(app: Any, gw: GatewayConfig, *, host: str, port: int) -> uvicorn.Config:
    """The one place the gateway's uvicorn settings are made (serve and the tests)."""
    upstream.check()  # GuardedProtocol stands on uvicorn's private protocol class
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,
        lifespan="on",
        loop="uvloop",  # pinned in the serve extra: a faster loop for every request
        http=protocol_for(gw),
        timeout_keep_alive=max(1, round(gw.idle_timeout_s)),  # uvicorn takes whole seconds
        limit_concurrency=gw.max_connections,
    )

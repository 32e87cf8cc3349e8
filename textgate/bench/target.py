"""What one request goes to. Every target answers ``await target.classify(text)``.

    TritonTarget    Triton's gRPC API (tritonclient.grpc.aio), the ensemble ``<task>``
    V2HttpTarget    any server speaking the KServe v2 HTTP protocol (Triton's HTTP port)
    HttpJsonTarget  a JSON endpoint: the gateway's ``POST /v1/classify/{task}``, or a peer
    HttpMailTarget  the gateway's classify endpoint with the raw message (message/rfc822)
    FakeTarget      a coroutine that sleeps: tests of the load generator

A failure raises ``RequestFailed`` carrying a short code (an HTTP status, a gRPC status
name, ``timeout`` or ``connect``); the load generator counts errors by that code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from textgate.errors import TextgateError

if TYPE_CHECKING:
    from textgate.bench.workload import Raws


class RequestFailed(Exception):
    def __init__(self, code: str, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code = code


class Target(Protocol):
    name: str

    async def open(self) -> None: ...

    async def classify(self, text: str) -> None: ...

    async def close(self) -> None: ...


class TritonTarget:
    """One text per request to the ensemble over gRPC (one aio client, one channel)."""

    def __init__(self, url: str, model: str, timeout_s: float = 30.0) -> None:
        self.name = f"triton-grpc {model}"
        self.url = url.removeprefix("grpc://")
        self.model = model
        self.timeout_s = timeout_s
        self._client: Any = None

    async def open(self) -> None:
        import tritonclient.grpc.aio as grpcaio

        self._client = grpcaio.InferenceServerClient(self.url)

    async def classify(self, text: str) -> None:
        import numpy as np
        import tritonclient.grpc.aio as grpcaio
        from tritonclient.utils import InferenceServerException

        tensor = grpcaio.InferInput("text", [1, 1], "BYTES")
        tensor.set_data_from_numpy(np.array([[text.encode("utf-8")]], dtype=np.object_))
        try:
            await self._client.infer(self.model, [tensor], client_timeout=self.timeout_s)
        except InferenceServerException as exc:
            raise RequestFailed(_grpc_code(exc), str(exc.message())[:200]) from None

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()


def _grpc_code(exc: Any) -> str:
    status = str(exc.status() or "")
    if "DEADLINE" in status:
        return "timeout"
    if "UNAVAILABLE" in status:
        return "connect"
    return status.removeprefix("StatusCode.") or "error"


class _HttpBase:
    name: str

    def __init__(self, timeout_s: float, concurrency_hint: int) -> None:
        self.timeout_s = timeout_s
        self.limit = concurrency_hint
        self._client: Any = None

    async def open(self) -> None:
        import httpx

        limits = httpx.Limits(max_connections=self.limit, max_keepalive_connections=self.limit)
        self._client = httpx.AsyncClient(timeout=self.timeout_s, limits=limits)

    async def _post(self, url: str, body: dict[str, Any] | bytes) -> None:
        import httpx

        try:
            if isinstance(body, bytes):
                headers = {"content-type": "message/rfc822"}
                response = await self._client.post(url, content=body, headers=headers)
            else:
                response = await self._client.post(url, json=body)
        except httpx.TimeoutException:
            raise RequestFailed("timeout") from None
        except httpx.TransportError as exc:
            raise RequestFailed("connect", type(exc).__name__) from None
        if response.status_code >= 400:
            raise RequestFailed(str(response.status_code), response.text[:200])

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()


class V2HttpTarget(_HttpBase):
    """``POST {url}/v2/models/{model}/infer`` with one BYTES element (KServe v2 JSON)."""

    def __init__(self, url: str, model: str, timeout_s: float = 30.0, limit: int = 256) -> None:
        super().__init__(timeout_s, limit)
        self.name = f"v2-http {model}"
        self.endpoint = f"{_http(url)}/v2/models/{model}/infer"

    async def classify(self, text: str) -> None:
        body = {"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": [text]}]}
        await self._post(self.endpoint, body)


class HttpJsonTarget(_HttpBase):
    """``POST {url}`` with ``{"text": ...}``: the gateway's classify endpoint, or a peer."""

    def __init__(
        self, url: str, timeout_s: float = 30.0, limit: int = 256, name: str = "http"
    ) -> None:
        super().__init__(timeout_s, limit)
        self.name = name
        self.endpoint = _http(url)

    async def classify(self, text: str) -> None:
        await self._post(self.endpoint, {"text": text})


class HttpMailTarget(_HttpBase):
    """``POST {url}`` with the raw message of each text (the mail workload's messages)."""

    def __init__(
        self,
        url: str,
        messages: Raws,
        timeout_s: float = 30.0,
        limit: int = 256,
        name: str = "gateway-mail",
    ) -> None:
        super().__init__(timeout_s, limit)
        self.name = name
        self.endpoint = _http(url)
        self.messages = messages
        self._sent: dict[str, int] = {}  # a text's several messages are posted in turn

    async def classify(self, text: str) -> None:
        raw = self.messages[text]
        if isinstance(raw, tuple):
            k = self._sent.get(text, 0)
            self._sent[text] = k + 1
            raw = raw[k % len(raw)]
        await self._post(self.endpoint, raw)


class FakeTarget:
    """Calls ``delay(text)`` for each request's service time; requests are served one at a
    time when ``serial`` (a single-server queue, as a stalled backend behaves)."""

    def __init__(self, delay: Callable[[str], float], *, serial: bool = True) -> None:
        self.name = "fake"
        self.delay = delay
        self.serial = serial
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        return None

    async def classify(self, text: str) -> None:
        if self.serial:
            async with self._lock:
                await asyncio.sleep(self.delay(text))
        else:
            await asyncio.sleep(self.delay(text))

    async def close(self) -> None:
        return None


def _http(url: str) -> str:
    return url if url.startswith(("http://", "https://")) else f"http://{url}"


def gateway_url(base: str, task: str) -> str:
    return f"{_http(base).rstrip('/')}/v1/classify/{task}"


def make(
    kind: str,
    url: str,
    *,
    model: str = "spam",
    timeout_s: float = 30.0,
    messages: Raws | None = None,
) -> Target:
    """``kind``: triton (gRPC), v2 (HTTP), gateway (``/v1/classify/<model>``) or http.

    ``messages`` (the mail workload): the gateway gets each text's raw message instead."""
    if kind == "gateway" and messages:
        return HttpMailTarget(gateway_url(url, model), messages, timeout_s, name=f"gateway {model}")
    if kind == "triton":
        return TritonTarget(url, model, timeout_s)
    if kind == "v2":
        return V2HttpTarget(url, model, timeout_s)
    if kind == "gateway":
        return HttpJsonTarget(gateway_url(url, model), timeout_s, name=f"gateway {model}")
    if kind == "http":
        return HttpJsonTarget(url, timeout_s, name="http")
    raise TextgateError(f"unknown target kind {kind!r}", hint="triton, v2, gateway or http")

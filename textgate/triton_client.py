"""The gateway's Triton client: gRPC asyncio, several endpoints, deadlines, safe retries.

    client = TritonClient(["127.0.0.1:8001"], ClientConfig())
    await client.start()                       # health probes begin
    pred = await client.infer("spam", ["win cash now"], request_id="r1")
    await client.close()

One ``grpc.aio`` channel per endpoint, created inside the running event loop and reused for
every request (never shared across threads or loops). Each call has one deadline that
covers its retries. A retry happens only after ``UNAVAILABLE`` (the request never reached a
model, or the connection died), at most ``retries`` times, each time on another endpoint
when there is one. Endpoints failing that way are ejected; a background probe re-admits
them when Triton reports ready. With no endpoint left, ``TritonUnavailable`` is raised at
once (the gateway answers 503) instead of waiting for a deadline. An inference that an
endpoint refuses because it does not hold the model ("unknown model": a replica that missed a
release switch, or one shutting down) never reached a model either: it is retried on another
endpoint, and when that one answers, the first is ejected as out of step (the gateway then
reconciles it before re-admission). With one endpoint it stays a ``TritonError`` (502).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from textgate.config import ClientConfig
from textgate.errors import DependencyError, TritonError, TritonTimeout, TritonUnavailable
from textgate.triton import GRPC_API_KEY_HEADER

REQUEST_ID_PARAMETER = "textgate_request_id"
_PROBE_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class Prediction:
    """One ensemble answer: the probability row per input text (the ensemble's ``label``
    output is not asked for: the policy decides from the probabilities)."""

    probabilities: np.ndarray  # float32 [n, num_labels]
    endpoint: str


@dataclass
class Endpoint:
    url: str
    failures: int = 0
    ejected: bool = False
    last_error: str = ""
    client: Any = field(default=None, repr=False)


def _aio() -> Any:
    try:
        import tritonclient.grpc.aio as aio
    except ImportError as exc:  # pragma: no cover - tritonclient is part of the serve extra
        raise DependencyError(
            "the gateway needs tritonclient[grpc]", hint="pip install 'textgate[serve]'"
        ) from exc
    return aio


def _model_missing(exc: Exception) -> bool:
    """Triton does not hold the model (a replica out of step, or one shutting down)."""
    text = _brief(exc)
    return "unknown model" in text or "has no available versions" in text


def _status(exc: Exception) -> str:
    """'UNAVAILABLE', 'DEADLINE_EXCEEDED', ... from an InferenceServerException."""
    status = getattr(exc, "status", lambda: None)()
    return str(status or "").removeprefix("StatusCode.")


class TritonClient:
    """Async client over one or more Triton gRPC endpoints; use from one event loop."""

    def __init__(
        self,
        endpoints: Sequence[str],
        config: ClientConfig | None = None,
        *,
        api_key: str | None = None,
    ) -> None:
        if not endpoints:
            raise TritonError("no Triton endpoint given", hint="set client.endpoints or --triton")
        self.config = config or ClientConfig()
        # Triton's restricted model-repository protocol (TritonServer(api_key=...)) refuses
        # the repository index without this metadata; inference needs none.
        self.repository_headers = {GRPC_API_KEY_HEADER: api_key} if api_key else {}
        self.endpoints = [Endpoint(url) for url in dict.fromkeys(endpoints)]
        self._next = 0
        self._probe: asyncio.Task[None] | None = None
        self.retries = 0  # attempts beyond the first, for metrics
        # Asked before an ejected endpoint that reports ready again is re-admitted: None
        # admits it, a reason keeps it out (the gateway reconciles its release state here).
        self.admit: Callable[[str], Awaitable[str | None]] | None = None

    # --- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        """Probe every endpoint once, then keep probing in the background."""
        await self.probe()
        if self._probe is None:
            self._probe = asyncio.create_task(self._probe_loop(), name="triton-probe")

    async def close(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probe
            self._probe = None
        for ep in self.endpoints:
            if ep.client is not None:
                with contextlib.suppress(Exception):
                    await ep.client.close()
                ep.client = None

    async def probe(self) -> None:
        await asyncio.gather(*(self._probe_one(ep) for ep in self.endpoints))

    async def _probe_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.health_interval_s)
            await self.probe()

    async def _probe_one(self, ep: Endpoint) -> None:
        try:
            ready = await self._conn(ep).is_server_ready(client_timeout=_PROBE_TIMEOUT_S)
        except Exception as exc:
            ready, ep.last_error = False, _brief(exc)
        if ready and ep.ejected and self.admit is not None:
            reason = await self.admit(ep.url)
            if reason is not None:
                ep.last_error = reason
                return
        if ready:
            ep.ejected, ep.failures = False, 0
        else:
            ep.ejected = True
            ep.last_error = ep.last_error or "not ready"

    # --- state -----------------------------------------------------------------------

    def healthy(self) -> list[str]:
        return [ep.url for ep in self.endpoints if not ep.ejected]

    def eject(self, url: str, reason: str) -> None:
        """Take an endpoint out of rotation now; the probe re-admits it (through ``admit``)."""
        for ep in self.endpoints:
            if ep.url == url:
                ep.ejected, ep.last_error = True, reason

    def describe(self) -> list[dict[str, Any]]:
        return [
            {"endpoint": ep.url, "healthy": not ep.ejected, "last_error": ep.last_error}
            for ep in self.endpoints
        ]

    # --- calls -----------------------------------------------------------------------

    async def infer(
        self,
        model: str,
        texts: Sequence[str],
        *,
        request_id: str = "",
        headers: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> Prediction:
        """Classify ``texts`` with ensemble ``model``; raise a TritonError subclass."""
        aio = _aio()
        data = np.array([[t.encode("utf-8")] for t in texts], dtype=np.object_)
        inputs = [aio.InferInput("text", list(data.shape), "BYTES")]
        inputs[0].set_data_from_numpy(data)
        outputs = [aio.InferRequestedOutput("probabilities")]

        async def call(ep: Endpoint, remaining: float) -> Prediction:
            result = await self._conn(ep).infer(
                model,
                inputs,
                outputs=outputs,
                request_id=request_id,
                parameters={REQUEST_ID_PARAMETER: request_id} if request_id else None,
                headers=dict(headers or {}),
                client_timeout=remaining,
            )
            probs = np.asarray(result.as_numpy("probabilities"), dtype=np.float32)
            return Prediction(probs.reshape(len(texts), -1), ep.url)

        return await self._with_retries(model, call, timeout_s, retry_missing=True)

    async def _with_retries(
        self, model: str, call: Any, timeout_s: float | None, *, retry_missing: bool = False
    ) -> Any:
        deadline = time.monotonic() + (timeout_s or self.config.timeout_s)
        tried: list[Endpoint] = []
        last = ""
        missing: list[tuple[Endpoint, str]] = []  # endpoints that do not serve ``model``
        for attempt in range(1 + self.config.retries):
            ep = self._pick(tried)
            if ep is None:
                break
            tried.append(ep)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TritonTimeout(f"no answer from Triton for '{model}' within the deadline")
            if attempt:
                self.retries += 1
            try:
                result = await call(ep, remaining)
            except Exception as exc:
                status = _status(exc)
                if status == "DEADLINE_EXCEEDED":
                    raise TritonTimeout(
                        f"Triton ({ep.url}) did not answer '{model}' within the deadline"
                    ) from None
                rejected = f"Triton ({ep.url}) rejected '{model}': {_brief(exc)}"
                if retry_missing and _model_missing(exc):
                    missing.append((ep, rejected))  # never reached a model: safe to retry
                    continue
                if status != "UNAVAILABLE":
                    raise TritonError(rejected) from None
                last = f"{ep.url}: {_brief(exc)}"
                self._failed(ep, last)
                continue
            ep.failures = 0
            for other, why in missing:  # another replica serves it: those are out of step
                self.eject(other.url, f"serves another model set than its peers: {why}")
            return result
        if missing and not last:
            raise TritonError(missing[0][1])
        reason = last or "every endpoint is ejected: " + "; ".join(
            f"{e.url}: {e.last_error or 'unhealthy'}" for e in self.endpoints
        )
        raise TritonUnavailable(f"Triton unavailable ({reason})")

    def _pick(self, tried: Sequence[Endpoint]) -> Endpoint | None:
        """Round-robin over healthy endpoints not yet tried; then any untried one if the
        probe is not running (a client used without start() must still work)."""
        fresh = [ep for ep in self.endpoints if ep not in tried]
        pool = [ep for ep in fresh if not ep.ejected]
        if not pool and self._probe is None:
            pool = fresh
        if not pool:
            return None
        self._next = (self._next + 1) % len(pool)
        return pool[self._next]

    def _failed(self, ep: Endpoint, error: str) -> None:
        ep.failures += 1
        ep.last_error = error
        if ep.failures >= self.config.eject_after_failures:
            ep.ejected = True

    async def model_config(self, model: str) -> dict[str, Any]:
        """The model's config as JSON (protobuf field names)."""

        async def call(ep: Endpoint, remaining: float) -> dict[str, Any]:
            data = await self._conn(ep).get_model_config(
                model, as_json=True, client_timeout=remaining
            )
            return dict(data.get("config", {}))

        return dict(await self._with_retries(model, call, None))

    async def repository_index(self) -> list[dict[str, Any]]:
        async def call(ep: Endpoint, remaining: float) -> list[dict[str, Any]]:
            data = await self._conn(ep).get_model_repository_index(
                headers=dict(self.repository_headers), as_json=True, client_timeout=remaining
            )
            return list(data.get("models", []))

        return list(await self._with_retries("<index>", call, None))

    async def models_ready(self, models: Sequence[str]) -> dict[str, bool]:
        """Per model: ready on at least one healthy endpoint."""
        ready = dict.fromkeys(models, False)
        for ep in self.endpoints:
            if ep.ejected:
                continue
            for name in models:
                if ready[name]:
                    continue
                with contextlib.suppress(Exception):
                    ready[name] = bool(
                        await self._conn(ep).is_model_ready(name, client_timeout=_PROBE_TIMEOUT_S)
                    )
        return ready

    def _conn(self, ep: Endpoint) -> Any:
        if ep.client is None:
            backoff = self.config.reconnect_backoff_ms
            ep.client = _aio().InferenceServerClient(
                ep.url,
                channel_args=[
                    ("grpc.max_send_message_length", 64 << 20),
                    ("grpc.max_receive_message_length", 64 << 20),
                    # gRPC's default reconnect backoff grows to 120 s: a restarted Triton
                    # would sit unused for minutes.
                    ("grpc.initial_reconnect_backoff_ms", min(backoff, 200)),
                    ("grpc.min_reconnect_backoff_ms", min(backoff, 200)),
                    ("grpc.max_reconnect_backoff_ms", backoff),
                    ("grpc.keepalive_time_ms", 10_000),
                    ("grpc.keepalive_timeout_ms", 5_000),
                ],
            )
        return ep.client


def _brief(exc: Exception) -> str:
    msg = getattr(exc, "message", lambda: None)()
    text = str(msg or exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__

"""Model control and the few v2 HTTP calls textgate makes to a running Triton.

    control = HttpControl("127.0.0.1:8000", api_key)   # a ModelControl
    control.load_model("spam_v2_model"); control.model_states()["spam_v2_model"].state
    probs = control.infer("spam_v2", ["win a prize"])   # KServe v2 JSON, for a compare

The one implementation: ``TritonServer`` (the process) and the release store (a Triton it
did not start, one per replica) both use it. Standard library only, one request per call:
no client object is shared across threads (tritonclient's HTTP client hangs when it is).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from textgate.errors import ModelLoadError, TritonError

API_KEY_HEADER = "textgate-admin-key"  # header of Triton's restricted model-repository API
# Triton 2.51's gRPC server expects the key under this prefixed metadata name (its error
# message says so: "expecting header 'triton-grpc-protocol-<key>'").
GRPC_API_KEY_HEADER = f"triton-grpc-protocol-{API_KEY_HEADER}"


@dataclass(frozen=True)
class ModelState:
    name: str
    version: str
    state: str  # READY, UNAVAILABLE, LOADING, UNLOADING
    reason: str


class ModelControl(Protocol):
    """What the release store needs from Triton: ``HttpControl``, ``TritonServer`` and
    ``replicas.Replicas`` fit."""

    def load_model(self, name: str) -> None: ...
    def unload_model(self, name: str) -> None: ...
    def model_states(self) -> Mapping[str, Any]: ...  # name -> object with ``.state``


def _reason(model: str, reason: str) -> str:
    return f"  reason: {reason}"


class HttpControl:
    """One Triton's HTTP endpoint: repository index, load, unload, health, inference."""

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        *,
        index_timeout_s: float | None = None,
        explain: Callable[[str, str], str] = _reason,
    ) -> None:
        self.url = url if url.startswith("http") else f"http://{url}"
        self.api_key = api_key
        self.headers = {API_KEY_HEADER: api_key} if api_key else {}
        self.timeout_s = timeout_s  # a load may take as long as a start (stubs import ORT)
        self.index_timeout_s = timeout_s if index_timeout_s is None else index_timeout_s
        # (model, Triton's reason) -> the text of a ModelLoadError; the process adds its log.
        self.explain = explain

    def request(self, method: str, path: str, body: Any = None, *, timeout: float = 30.0) -> Any:
        """One call; urllib's errors pass through for the caller to name."""
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers, "Content-Type": "application/json"} if data else self.headers
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            text = resp.read().decode("utf-8")
        return json.loads(text) if text else {}

    def get(self, path: str) -> Any:
        """GET ``path``; None when Triton does not answer it (down, starting, an error)."""
        try:
            return self.request("GET", path)
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def live(self, timeout_s: float = 30.0) -> bool:
        try:
            self.request("GET", "/v2/health/live", timeout=timeout_s)
        except (urllib.error.URLError, OSError, ValueError):
            return False
        return True

    # --- model control -----------------------------------------------------------------

    def model_states(self) -> dict[str, ModelState]:
        """Repository index: one state per model (the worst of its versions)."""
        raw = self._post_named("repository index", "/v2/repository/index", self.index_timeout_s)
        states: dict[str, ModelState] = {}
        for entry in raw if isinstance(raw, list) else []:
            state = ModelState(
                entry.get("name", ""),
                str(entry.get("version", "")),
                entry.get("state", ""),
                entry.get("reason", ""),
            )
            prev = states.get(state.name)
            if prev is None or prev.state == "READY":
                states[state.name] = state
        return states

    def load_model(self, name: str) -> None:
        """Load (or reload) one model; ``ModelLoadError`` with Triton's reason."""
        try:
            self._control(name, "load")
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", "replace")
            raise ModelLoadError(name, self.explain(name, body)) from None

    def unload_model(self, name: str) -> None:
        try:
            self._control(name, "unload")
        except urllib.error.HTTPError as exc:
            body = exc.read().decode("utf-8", "replace")
            raise TritonError(f"unload of model '{name}' refused: HTTP {exc.code} {body}") from None

    def _control(self, name: str, action: str) -> None:
        """POST .../{name}/{action}; HTTPError passes through, other failures are named."""
        # quote: a name with '/', '?' or '#' must not reach another endpoint of the API.
        path = f"/v2/repository/models/{urllib.parse.quote(name, safe='')}/{action}"
        self._post_named(f"{action} of model '{name}'", path, self.timeout_s, http_errors=False)

    def _post_named(self, what: str, path: str, timeout: float, *, http_errors: bool = True) -> Any:
        try:
            return self.request("POST", path, {}, timeout=timeout)
        except urllib.error.HTTPError as exc:
            if not http_errors:
                raise
            body = exc.read().decode("utf-8", "replace")
            raise TritonError(f"{what}: HTTP {exc.code}: {body}") from None
        except TimeoutError:
            raise TritonError(
                f"{what} took longer than {timeout:g} s (Triton may still be working on it)",
                hint="raise triton.startup_timeout_s, or read Triton's log",
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError):
                raise TritonError(f"{what}: no answer within {timeout:g} s") from None
            raise TritonError(
                f"{what} failed: Triton at {self.url} is not reachable ({reason})",
                hint="is it running? (TritonServer.check() says whether the process died)",
            ) from None

    # --- inference ---------------------------------------------------------------------

    def infer(self, model: str, texts: Sequence[str]) -> np.ndarray:
        """Probabilities of ``texts`` from ``model`` over KServe v2 JSON (a compare's path:
        the gateway's own client is gRPC)."""
        body = {
            "inputs": [
                {"name": "text", "shape": [len(texts), 1], "datatype": "BYTES", "data": list(texts)}
            ],
            "outputs": [{"name": "probabilities"}],
        }
        path = f"/v2/models/{urllib.parse.quote(model, safe='')}/infer"
        try:
            out = self.request("POST", path, body, timeout=self.timeout_s)
        except (urllib.error.URLError, OSError) as exc:
            raise TritonError(f"Triton {model} infer failed: {exc}") from None
        probs = out["outputs"][0]
        return np.asarray(probs["data"], np.float32).reshape(probs["shape"])


def http_infer(url: str) -> Callable[[str, Sequence[str]], np.ndarray]:
    """``(model, texts) -> probabilities`` over Triton's HTTP inference API."""
    return HttpControl(url).infer

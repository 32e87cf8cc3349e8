"""Release operations across several Triton replicas, and reconciling one that missed some.

    control = Replicas(["10.0.0.5:8000", "10.0.0.6:8000"], api_key)   # a release.ModelControl
    Releases(repo, control=control).add(bundle, "spam")   # loads on every reachable replica
    control.missed                                        # {"10.0.0.6:8000"}: it was down
    why = reconcile_replica(manager, control.replica("10.0.0.6:8000"))  # None: it matches

A replica that does not answer when an operation runs is skipped and remembered in
``missed`` (the operation still succeeds on the others; with none reachable it fails as it
would with one Triton). A reachable replica that refuses a load fails the operation, which
then unloads the version everywhere (``Releases._load``). The gateway reconciles a replica
before its client re-admits it (``TritonClient.admit``): load every version the release
state keeps, unload retired ones, then check; a replica that still serves another set of
versions than the state says stays out of rotation with that reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from textgate.errors import TritonError
from textgate.release import Releases
from textgate.triton.control import HttpControl

_PING_TIMEOUT_S = 1.0


class Replicas:
    """One ``ModelControl`` over several Triton HTTP endpoints (host:port each)."""

    def __init__(self, urls: Sequence[str], api_key: str | None = None) -> None:
        if not urls:
            raise TritonError("no Triton HTTP endpoint for model control")
        self.controls = {u: HttpControl(u, api_key) for u in dict.fromkeys(urls)}
        self.missed: set[str] = set()  # replicas that were down during an operation

    def replica(self, url: str) -> HttpControl:
        return self.controls[url]

    def load_model(self, name: str) -> None:
        for control in self._reachable():
            control.load_model(name)  # ModelLoadError: the operation fails and undoes itself

    def unload_model(self, name: str) -> None:
        for control in self._reachable():
            control.unload_model(name)

    def model_states(self) -> Mapping[str, Any]:
        """A model counts as READY only where it is READY on every reachable replica."""
        each = [control.model_states() for control in self._reachable()]
        merged: dict[str, Any] = {}
        for states in each:
            for name, state in states.items():
                if name not in merged or getattr(state, "state", "") != "READY":
                    merged[name] = state
        for name in merged:
            if any(name not in states for states in each):  # missing on a replica
                merged[name] = _Missing()
        return merged

    def _reachable(self) -> list[HttpControl]:
        up = []
        for url, control in self.controls.items():
            if alive(control):
                up.append(control)
                continue
            self.missed.add(url)
        if not up:
            raise TritonError(
                f"no Triton replica reachable for model control: {list(self.controls)}"
            )
        return up


class _Missing:
    state = "UNAVAILABLE"
    reason = "not loaded on every replica"


def alive(control: HttpControl) -> bool:
    return control.live(timeout_s=_PING_TIMEOUT_S)


def reconcile_replica(manager: Releases, control: HttpControl) -> str | None:
    """Make one replica match the release state; None when it does, else why it does not."""
    single = Releases(
        manager.repo, manager.settings, repository=manager.repository, control=control,
        recover=False,
    )  # fmt: skip
    try:
        single.reconcile()
        states = control.model_states()
    except TritonError as exc:
        return f"replica not reconciled with the release state: {exc.message}"
    missing = [m for m in single.loadable() if getattr(states.get(m), "state", "") != "READY"]
    if missing:
        return f"replica serves other versions than the release state: not ready {missing}"
    return None

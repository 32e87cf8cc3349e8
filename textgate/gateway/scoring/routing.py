"""Which Triton model answers a task, discovered from what Triton serves.

A task is an ensemble ``E`` whose last step is ``E_postprocess``; its labels come from that
step's config, its variant and version from ``E_model``. ``E_fp32`` (built with
``repository.rescore_variant``) is the task's precise ensemble for the re-score. A route is
chosen per request (``Router.route``): for a released task the release state (a
``VersionPicker``) names the version, so a canary's share of requests goes to another one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from textgate import names
from textgate.bundle import cascade_problem
from textgate.errors import TritonUnavailable, UnknownTask
from textgate.triton_client import TritonClient


@dataclass(frozen=True)
class Route:
    task: str
    model: str  # the ensemble to call
    labels: tuple[str, ...]
    version: str
    variant: str
    max_batch_size: int
    precise: str | None = None  # the fp32 ensemble for the re-score; None: one variant
    precise_variant: str | None = None
    tokenizer_sha256: str = ""
    normalization: str = ""  # the bundle's normalizer fingerprint (JSON); '' when unrecorded
    # the model combines structure symbols (a combiner in postprocess): the gateway sends
    # them framed with each piece; without one, the pieces alone
    signals: bool = False
    symbol_weights: Mapping[str, float] = dataclasses.field(default_factory=dict)
    # the cascade's first stage (``T_cheap``, the n-gram half alone) and the bundle's bounds
    # on its P(not negative); None: no cascade (cascade.py)
    cheap: str | None = None
    cheap_allow: float | None = None
    cheap_quarantine: float | None = None
    cheap_negative: str = ""  # the label the n-gram half's P(not negative) is against

    def describe(self) -> dict[str, Any]:
        return {"name": self.model, "version": self.version, "variant": self.variant}


class VersionPicker(Protocol):
    """What routing asks of the release state (``release_hook.ReleaseHook``); None: every
    task is routed as discovered."""

    def tasks(self) -> list[str]:
        """The released tasks (their ``T_vN`` ensembles are versions, not tasks)."""
        ...

    def pick(self, task: str, key: str) -> int | None:
        """The version that answers this request (canary share by ``key``), or None."""
        ...

    def canary_key(self, task: str) -> str:
        """``tenant``, ``sender`` or ``request_id``: what keeps a caller on one version."""
        ...

    def observe(
        self,
        route: Route,
        *,
        ok: bool,
        latency_s: float,
        texts: Sequence[str] = (),
        probs: Sequence[Sequence[float]] = (),
    ) -> None:
        """How a request went (the canary watch, shadow copies)."""
        ...


class Router:
    def __init__(self, routes: Mapping[str, Route], releases: VersionPicker | None = None) -> None:
        self.routes = dict(routes)
        self.releases = releases

    def route(self, task: str, key: str = "") -> Route:
        version = self.releases.pick(task, key) if self.releases is not None else None
        hit = (
            self.routes.get(names.version_ensemble(task, version)) if version is not None else None
        )
        if hit is not None:
            return dataclasses.replace(hit, task=task, version=str(version))
        route = None if self.pinned(task) else self.routes.get(task)
        if route is None:
            known = ", ".join(self.public()) or "none"
            raise UnknownTask(f"no task {task[:64]!r} (served: {known})", field="task")
        return route

    def pinned(self, name: str) -> bool:
        """``spam_v1`` of a released task ``spam``: a version's ensemble, not a task. Routing
        to it would bypass the release state (canary, rollback) and the policy's task name."""
        base = names.release_task(name)
        return base != name and self.releases is not None and base in self.releases.tasks()

    def public(self) -> list[str]:
        """The task names a client may use (version-pinned ensembles left out)."""
        return sorted(n for n in self.routes if not self.pinned(n))

    def is_public(self, name: str) -> bool:
        """``name in public()``, without listing and sorting them all."""
        return name in self.routes and not self.pinned(name)

    def key(self, task: str, tenant: str | None, request_id: str, sender: str | None) -> str:
        """The canary's sticky key for this request (the release's configured kind)."""
        if self.releases is None:
            return request_id
        kind = self.releases.canary_key(task)
        value = {"tenant": tenant, "sender": sender}.get(kind)
        return value or request_id

    def observe(
        self,
        route: Route,
        *,
        ok: bool,
        latency_s: float,
        texts: Sequence[str] = (),
        probs: Sequence[Sequence[float]] = (),
    ) -> None:
        """Tell the release hook how a request went (canary watch, shadow copy)."""
        if self.releases is not None:
            self.releases.observe(route, ok=ok, latency_s=latency_s, texts=texts, probs=probs)

    def models(self) -> list[str]:
        """Every ensemble a request may call: what /readyz waits for."""
        out = []
        for r in self.routes.values():
            out += [r.model] + ([r.precise] if r.precise else []) + ([r.cheap] if r.cheap else [])
        return out


def _param(config: Mapping[str, Any], key: str) -> str:
    return str(config.get("parameters", {}).get(key, {}).get("string_value", ""))


def _steps(config: Mapping[str, Any]) -> list[str]:
    steps = config.get("ensemble_scheduling", {}).get("step", [])
    return [str(s.get("model_name", "")) for s in steps]


async def discover(
    client: TritonClient, tasks: Sequence[str] = (), releases: VersionPicker | None = None
) -> Router:
    """Ask Triton which tasks it serves; ``tasks`` (if given) must all be among them.

    With ``releases``, a released task ``T`` is served by its versions' ensembles ``T_vN``
    (docs/lifecycle.md): ``T`` routes to the serving version unless a canary picks another.
    """
    index = await client.repository_index()
    ready = {m["name"]: str(m.get("version", "")) for m in index if m.get("state") == "READY"}
    routes: dict[str, Route] = {}
    for name in sorted(ready):
        if tasks and name not in tasks and names.release_task(name) not in tasks:
            continue
        route = await _route(client, name, ready)
        if route is not None:
            routes[name] = route
    if releases is not None:
        _route_released(routes, releases)
    missing = [t for t in tasks if t not in routes]
    if missing:
        raise TritonUnavailable(
            f"Triton serves no ready task {', '.join(missing)} (ready: {', '.join(ready)})"
        )
    return Router(routes, releases)


def _route_released(routes: dict[str, Route], releases: VersionPicker) -> None:
    """A released task ``T`` is its serving version's ensemble ``T_vN`` under the name ``T``."""
    for task in releases.tasks():
        version = releases.pick(task, "")
        if version is None or task in routes:
            continue
        serving = routes.get(names.version_ensemble(task, version))
        if serving is not None:
            routes[task] = dataclasses.replace(serving, task=task, version=str(version))


async def _route(client: TritonClient, name: str, ready: Mapping[str, str]) -> Route | None:
    if names.postprocess(name) not in ready:
        return None
    config = await client.model_config(name)
    if config.get("platform") != "ensemble" or _steps(config)[-1:] != [names.postprocess(name)]:
        return None
    post = await client.model_config(names.postprocess(name))
    labels = tuple(json.loads(_param(post, "labels") or "[]"))
    model = await _config_or_empty(client, names.model(name), ready)
    tokenizer = await _config_or_empty(client, names.tokenize(name), ready) or model
    precise = names.precise_ensemble(name) if names.precise_ensemble(name) in ready else None
    precise_model = await _config_or_empty(client, names.precise_model(name), ready)
    cheap = await _config_or_empty(client, names.cheap(name), ready)
    return Route(
        task=name,
        model=name,
        labels=labels,
        version=ready.get(names.model(name), ready[name]),
        variant=_param(model, "variant") or "unknown",
        max_batch_size=int(config.get("max_batch_size", 0) or 1),
        precise=precise,
        precise_variant=(_param(precise_model, "variant") or "fp32") if precise else None,
        tokenizer_sha256=_param(tokenizer, "tokenizer_sha256"),
        normalization=_param(post, "normalization"),
        signals=bool(_param(post, "combiner_file")),
        symbol_weights=_weights(post),
        **_cheap(names.cheap(name), cheap),
    )


def _cheap(name: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The route's cascade fields from ``T_cheap``'s config ({}: none, or bounds unreadable —
    then every message takes the full path, which is never wrong, only slower)."""
    try:
        lo = float(_param(config, "allow_at_or_below"))
        hi_text = _param(config, "quarantine_at_or_above")
        hi = float(hi_text) if hi_text else None
    except ValueError:
        return {}
    if cascade_problem(lo, hi):
        return {}
    negative = _param(config, "negative_label")
    return {"cheap": name, "cheap_allow": lo, "cheap_quarantine": hi, "cheap_negative": negative}


def _weights(post: Mapping[str, Any]) -> dict[str, float]:
    """The combiner's symbol weights from postprocess's config ({} without a combiner)."""
    try:
        raw = json.loads(_param(post, "combiner_symbols") or "{}")
        return {str(k): float(v) for k, v in raw.items()}
    except (ValueError, TypeError, AttributeError):
        return {}  # explanations lose the weights; scoring (in Triton) is unchanged


async def _config_or_empty(
    client: TritonClient, name: str, ready: Mapping[str, str]
) -> dict[str, Any]:
    return await client.model_config(name) if name in ready else {}

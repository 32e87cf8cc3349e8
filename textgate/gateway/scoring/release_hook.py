"""The gateway's release hook (docs/lifecycle.md): which version of a released task answers,
and what each answer tells the release.

``routing.Router`` calls it as its ``VersionPicker``: ``pick`` (the version for a request),
``tasks``, ``canary_key`` and ``observe`` (how a request went: the canary watch that rolls
back automatically, and shadow copies to the candidate). It is given narrow inputs, not the
gateway: an ``infer`` callable (the current Triton client), the event sink (release events),
the metrics registry, the Triton gRPC endpoints and an ``eject`` callable (replicas that
missed a switch).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, Counter

from textgate import release, replicas
from textgate.config import Config
from textgate.errors import ConfigError, TextgateError
from textgate.gateway.records import logs
from textgate.gateway.records.event_sink import EventSink
from textgate.gateway.records.events import text_hash
from textgate.gateway.scoring.routing import Route
from textgate.triton_client import Prediction

Infer = Callable[[str, Sequence[str]], Coroutine[Any, Any, Prediction]]
Eject = Callable[[str, str], None]  # (gRPC endpoint, reason)

_SHADOW_IN_FLIGHT = 8  # shadow copies beyond this are dropped: they must never slow serving


class ReleaseHook(release.StateView):
    """The routing view of the release state plus the canary watch and shadow copies."""

    def __init__(
        self,
        config: Config,
        *,
        endpoints: Sequence[str],
        infer: Infer,
        eject: Eject,
        events: EventSink,
        registry: CollectorRegistry,
    ) -> None:
        assert config.release.repository is not None
        super().__init__(config.release.repository)
        self.settings = config.release
        self.endpoints = list(endpoints)  # Triton gRPC, in client.endpoints order
        self.infer = infer
        self._eject = eject
        self.events = events
        # Like the outbox, fixed at start: the shadow log keeps texts only where events do.
        self.store_text = config.events.store_text
        control = _control_of(config, self.endpoints)
        self.manager = release.Releases(
            config.release.repository, self.settings, repository=config.repository, control=control
        )
        self.manager.on_commit = self.set  # the in-memory swap, same thread as the rename
        self.watches: dict[str, release.CanaryWatch] = {}
        self._shadows = 0
        self._monitor: asyncio.Task[None] | None = None
        self.auto_rollbacks = Counter(
            "textgate_release_auto_rollbacks", "Canaries stopped by the watch", ["task"],
            registry=registry,
        )  # fmt: skip
        self.shadowed = Counter(
            "textgate_release_shadow", "Shadow copies by agreement", ["task", "agree"],
            registry=registry,
        )  # fmt: skip
        self.post_alerts = Counter(
            "textgate_release_post_watch_alerts",
            "Promoted versions found worse than the one they replaced (post_watch_s)",
            ["task"], registry=registry,
        )  # fmt: skip
        self._post_judged: set[tuple[str, Any]] = set()  # (task, history seq) acted on
        self.operations = Counter(
            "textgate_release_operations", "Admin release operations", ["op", "result"],
            registry=registry,
        )  # fmt: skip

    async def start(self) -> None:
        await self.reconcile()
        self._monitor = asyncio.create_task(self._watch_loop(), name="release-watch")

    async def reconcile(self) -> None:
        """Make Triton match the state before routes are discovered (docs/lifecycle.md):
        a restarted Triton may lack a live version, a crash may have left a retired one."""
        if self.manager.control is None:
            return
        try:
            done = await asyncio.to_thread(self.manager.reconcile)
        except TextgateError as exc:  # serving what Triton has beats not starting at all
            logs.event("release reconcile failed", logging.WARNING, error=exc.message)
            return
        if done["loaded"] or done["unloaded"]:
            logs.event("release state reconciled", loaded=done["loaded"], unloaded=done["unloaded"])

    async def admit(self, grpc_url: str) -> str | None:
        """Before the client re-admits a Triton replica: make it match the release state
        (it may have missed a switch while down). None admits it; else the reason it stays
        out (logged, and shown in /v1/models)."""
        control = self.manager.control
        if not isinstance(control, replicas.Replicas):
            return None
        http = _http_of(self.endpoints, control).get(grpc_url)
        if http is None:
            return None
        why = await asyncio.to_thread(
            replicas.reconcile_replica, self.manager, control.replica(http)
        )
        if why is None:
            control.missed.discard(http)
            logs.event("triton replica reconciled", endpoint=grpc_url)
        else:
            logs.event("triton replica kept out", logging.WARNING, endpoint=grpc_url, reason=why)
        return why

    def eject_missed(self) -> None:
        """Replicas that were down during an operation leave rotation until reconciled."""
        control = self.manager.control
        if isinstance(control, replicas.Replicas) and control.missed:
            by_http = {h: g for g, h in _http_of(self.endpoints, control).items()}
            for http in control.missed:
                if http in by_http:
                    self._eject(by_http[http], "missed a release switch")

    async def stop(self) -> None:
        if self._monitor is not None:
            self._monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._monitor

    # --- per request -------------------------------------------------------------------

    def observe(
        self,
        route: Route,
        *,
        ok: bool,
        latency_s: float,
        texts: Sequence[str] = (),
        probs: Sequence[Sequence[float]] = (),
    ) -> None:
        t = self.state.tasks.get(route.task)
        if t is None or not route.version.isdigit():
            return
        # Every version's outcomes: the canary is judged against the serving version, and a
        # promoted version against the one it replaced (their samples from before the switch).
        watch = self.watches.setdefault(route.task, release.CanaryWatch(self.settings))
        scores: list[float | None] = [float(p[-1]) for p in probs] or [None]
        for score in scores:
            watch.record(int(route.version), ok=ok, latency_s=latency_s, score=score)
        if (
            t.mode == "shadow"
            and t.candidate is not None
            and ok
            and texts
            and self._shadows < _SHADOW_IN_FLIGHT
        ):
            self._shadows += 1
            task = asyncio.ensure_future(self._shadow(route, t.candidate, texts, probs))
            task.add_done_callback(lambda _t: self._release_shadow())

    def _release_shadow(self) -> None:
        self._shadows -= 1

    async def _shadow(
        self,
        route: Route,
        candidate: int,
        texts: Sequence[str],
        probs: Sequence[Sequence[float]],
    ) -> None:
        try:
            pred = await self.infer(release.ensemble(route.task, candidate), list(texts))
        except TextgateError as exc:
            logs.event("shadow copy failed", logging.WARNING, error=exc.message)
            return
        rows = []
        for text, s, c in zip(texts, probs, pred.probabilities.tolist(), strict=True):
            agree = int(np.argmax(s)) == int(np.argmax(c))
            self.shadowed.labels(route.task, str(agree).lower()).inc()
            # events.store_text: false keeps texts off disk here too (compare then needs
            # labelled data: it has no shadowed texts to run).
            kept: dict[str, Any] = (
                {"text": text} if self.store_text else {"text_sha256": text_hash(text)}
            )
            row = {**kept, "serving": route.version, "candidate": candidate}
            rows.append({**row, "agree": agree, "serving_probs": list(s), "candidate_probs": c})
        await asyncio.to_thread(self._record, route.task, rows)

    def _record(self, task: str, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            self.manager.record_shadow(task, row)

    # --- automatic rollback ------------------------------------------------------------

    async def _watch_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.watch_interval_s)
            with contextlib.suppress(TextgateError):
                await self.check_canaries()
                await self.check_promotions()

    async def check_promotions(self) -> list[str]:
        """Within ``post_watch_s`` of a promotion: the new serving version against the one it
        replaced. Past a bound: alerted once per promotion, and rolled back when
        ``post_watch_rollback``. Returns the tasks acted on."""
        acted = []
        now = time.time()
        for task, t in self.refresh(force=True).tasks.items():
            last = next((h for h in reversed(t.history) if h.get("op") == "promote"), None)
            watch = self.watches.get(task)
            if (
                last is None
                or watch is None
                or t.mode == "canary"
                or last.get("previous") is None
                or int(last.get("version", -1)) != t.serving
                or now - float(last.get("time", 0.0)) > self.settings.post_watch_s
                or (task, last.get("seq")) in self._post_judged
            ):
                continue
            why = watch.verdict(int(last["previous"]), t.serving)
            if why is None:
                continue
            self._post_judged.add((task, last.get("seq")))
            await self._after_promotion(task, t.serving, why)
            acted.append(task)
        return acted

    async def _after_promotion(self, task: str, version: int, why: str) -> None:
        reason = f"v{version} after its promotion: {why}"
        self.post_alerts.labels(task).inc()
        if not self.settings.post_watch_rollback:
            logs.event("release promotion worse than before", logging.WARNING, task=task,
                       reason=reason, hint="textgate release rollback, or set "
                       "release.post_watch_rollback to do it automatically")  # fmt: skip
            return
        after = await asyncio.to_thread(
            self.manager.rollback, task, reason=f"automatic rollback of {reason}"
        )
        self.auto_rollbacks.labels(task).inc()
        logs.event("release promotion rolled back", logging.WARNING, task=task, reason=reason)
        await self.emit(task, "auto-rollback", after)

    async def check_canaries(self) -> list[str]:
        """Stop every canary past its bounds; return the tasks rolled back."""
        stopped = []
        for task, t in self.refresh(force=True).tasks.items():
            watch = self.watches.get(task)
            if t.mode != "canary" or t.candidate is None or watch is None:
                continue
            why = watch.verdict(t.serving, t.candidate)
            if why is None:
                continue
            reason = f"automatic rollback of canary v{t.candidate}: {why}"
            after = await asyncio.to_thread(self.manager.standby, task, reason)
            watch.reset()
            self.auto_rollbacks.labels(task).inc()
            logs.event("release canary rolled back", logging.WARNING, task=task, reason=reason)
            await self.emit(task, "auto-rollback", after)
            stopped.append(task)
        return stopped

    async def emit(self, task: str, op: str, t: dict[str, Any]) -> None:
        """The switch's event into the outbox, from the history entry it committed.

        The switch has happened whatever the outbox says: a full or broken outbox is
        logged, never turned into a failed operation.
        """
        last = (t.get("history") or [{}])[-1]
        try:
            await self.events.put_release(
                request_id=f"release/{task}/{last.get('seq')}",
                task=task,
                op=op,
                version=int(last.get("version", t["serving"])),
                serving=int(t["serving"]),
                previous_serving=last.get("previous"),
                reason=str(last.get("reason", "")),
                forced=bool(last.get("forced", False)),
            )
        except TextgateError as exc:
            logs.event("release event not stored", logging.WARNING, task=task, error=exc.message)


def _control_of(config: Config, endpoints: Sequence[str]) -> release.ModelControl | None:
    """release.triton_http: one host:port, or one per Triton gRPC endpoint (same order)."""
    urls = [u.strip() for u in config.release.triton_http.split(",") if u.strip()]
    key = config.release.triton_api_key
    if len(urls) <= 1:
        return release.HttpControl(urls[0], key) if urls else None
    if len(endpoints) != len(urls):
        raise ConfigError(
            "release.triton_http",
            f"{len(urls)} HTTP endpoints for {len(endpoints)} Triton gRPC endpoints",
            hint="list one host:port per client.endpoints entry, in the same order",
        )
    return replicas.Replicas(urls, key)


def _http_of(endpoints: Sequence[str], control: replicas.Replicas) -> dict[str, str]:
    return dict(zip(endpoints, control.controls, strict=False))

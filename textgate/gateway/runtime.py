"""The gateway runtime (``Gateway``): what a config reload swaps, its start and stop, task
discovery and the checks a discovered model must pass, and readiness.

    gw = Gateway(Config.load("textgate.yaml"), endpoints=["127.0.0.1:8001"])
    await gw.start()          # parse pool, outbox + publisher, Triton client, releases
    await gw.reload()         # SIGHUP or POST /admin/reload: all or nothing
    await gw.stop()

A request takes ``gw.runtime`` once and keeps it to its end, so a reload never changes a
request half-way (``service.Runtime``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.requests import HTTPConnection

from textgate import normalize
from textgate.config import Config
from textgate.errors import ConfigError, TextgateError, TritonError
from textgate.gateway.records import logs, review_store
from textgate.gateway.records.event_sink import EventSink
from textgate.gateway.records.prometheus import Metrics
from textgate.gateway.records.replay import ReplayStore
from textgate.gateway.scoring.campaign import Campaigns
from textgate.gateway.scoring.coalesce import Coalescer
from textgate.gateway.scoring.context import Runtime
from textgate.gateway.scoring.desk import Desk
from textgate.gateway.scoring.limiter import Limiter
from textgate.gateway.scoring.policy import Policy, check_labels
from textgate.gateway.scoring.pool import ParsePool
from textgate.gateway.scoring.prepare import Preparer
from textgate.gateway.scoring.release_hook import ReleaseHook
from textgate.gateway.scoring.routing import Router, discover
from textgate.gateway.scoring.service import Service
from textgate.gateway.scoring.unk import UnkCounter
from textgate.normalize import NormalizeSettings
from textgate.triton_client import Prediction, TritonClient

_DISCOVERY_RETRY_S = 1.0
_READY_MISSES = 3


class Gateway:
    """Owns the runtime (swapped on reload), the metrics and the event sink of one app."""

    def __init__(
        self,
        config: Config,
        *,
        endpoints: Sequence[str] = (),
        config_path: Path | None = None,
    ) -> None:
        self.config = config
        self.endpoints_override = list(endpoints)
        self.config_path = config_path
        # Kept from the start: a reloaded file (which may lack it) must not lock the client
        # out of Triton's restricted repository index.
        self.triton_api_key = config.release.triton_api_key
        self.metrics = Metrics()
        self.events = EventSink(config.events)
        # Corrections and explanations: the same desk for every front end, as long as the
        # gateway lives (the config is read when the feedback store first opens).
        self.desk = Desk(lambda: self.config.feedback)
        self.service = Service(
            self.metrics, self.events, desk=self.desk, review_store=lambda: self.review
        )
        # A reload may move or bound the review store (``_swap_review``); its metrics are
        # registered once and carried from store to store.
        self._review_metrics: review_store.ReviewMetrics | None = None
        self.review: review_store.ReviewStore | None = None
        if config.review.path is not None:
            self.review = self._open_review(config)
        self.parse_pool: ParsePool | None = None
        self.releases: ReleaseHook | None = None
        self.runtime = self._runtime(config, self._client(config), Router({}))
        self.releases = self._release_hook(config)  # versions of released tasks
        self._discovery: asyncio.Task[None] | None = None
        self._reload_lock = asyncio.Lock()
        self._misses: dict[str, int] = {}  # consecutive failed readiness probes per model
        self._was_ready: set[str] = set()

    def _open_review(self, config: Config) -> review_store.ReviewStore:
        if self._review_metrics is None:
            self._review_metrics = review_store.ReviewMetrics(self.metrics.registry)
        return review_store.ReviewStore.from_config(config.review, metrics=self._review_metrics)

    def _swap_review(self, new: Config) -> review_store.ReviewStore | None:
        """``review`` of a reloaded config applied; returns the store to close later.

        The same path keeps its store with the new bounds; another path opens (or, null,
        turns off) the store, and the old one is closed once the requests holding it are
        done. A file that cannot be opened rejects the reload before anything changed."""
        old, cfg = self.review, new.review
        if old is not None and cfg.path is not None and Path(cfg.path) == old.path:
            old.bound(cfg.max_age_days, cfg.max_messages, cfg.max_bytes)
            return None
        if old is None and cfg.path is None:
            return None
        self.review = self._open_review(new) if cfg.path is not None else None
        return old

    def _endpoints(self, config: Config) -> list[str]:
        return self.endpoints_override or list(config.client.endpoints)

    def _client(self, config: Config) -> TritonClient:
        client = TritonClient(self._endpoints(config), config.client, api_key=self.triton_api_key)
        client.admit = self._admit
        return client

    async def _admit(self, endpoint: str) -> str | None:
        """A returning Triton replica first matches the release state (ReleaseHook)."""
        return await self.releases.admit(endpoint) if self.releases is not None else None

    def _release_hook(self, config: Config) -> ReleaseHook | None:
        """The hook when ``release.repository`` is set; None leaves routing as discovered."""
        if config.release.repository is None:
            return None
        return ReleaseHook(
            config,
            endpoints=self._endpoints(config),
            infer=self._infer,
            eject=self._eject,
            events=self.events,
            registry=self.metrics.registry,
        )

    async def _infer(self, model: str, texts: Sequence[str]) -> Prediction:
        # The current runtime's client: a reload may have replaced the one of the start.
        return await self.runtime.client.infer(model, list(texts))

    def _eject(self, endpoint: str, reason: str) -> None:
        self.runtime.client.eject(endpoint, reason)

    def _runtime(self, config: Config, client: TritonClient, router: Router) -> Runtime:
        gw = config.gateway
        return Runtime(
            config=config,
            policy=Policy(config.policy),
            limiter=Limiter(gw),
            router=router,
            client=client,
            preparer=Preparer(config.normalize, max_body_bytes=gw.max_body_bytes),
            replay=ReplayStore(gw.replay_dir) if gw.replay_dir else None,
            parse_pool=self.parse_pool,
            coalescer=Coalescer.from_config(client, gw),
            unk=UnkCounter.from_config(config),
            campaigns=Campaigns.from_config(gw),
        )

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        gw = self.config.gateway
        if gw.parse_workers:
            self.parse_pool = ParsePool(
                workers=gw.parse_workers,
                budget_s=gw.parse_budget_s,
                queue_s=gw.queue_timeout_s,
                retry_after_s=gw.retry_after_s,
            )
            await self.parse_pool.start()
            self.runtime.parse_pool = self.parse_pool
        await self.events.start(self.metrics.registry)
        await self.desk.start_learning()  # every tenant's layer from the feedback store
        await self.runtime.client.start()
        if self.releases is not None:
            await self.releases.start()
        try:
            await self._discover()
        except TritonError as exc:
            logs.event("triton not ready yet; discovering in the background", error=exc.message)
            self._discovery = asyncio.create_task(self._discover_until_found())

    async def stop(self) -> None:
        if self._discovery is not None:
            self._discovery.cancel()
        if self.runtime.coalescer is not None:
            await self.runtime.coalescer.close()
        await self.runtime.client.close()
        if self.parse_pool is not None:
            await self.parse_pool.close()
            self.parse_pool = None
        await self.events.stop()
        if self.releases is not None:
            await self.releases.stop()
        if self.review is not None:
            self.review.close()
            self.review = None
        self.desk.close()

    async def _discover(self) -> None:
        rt = self.runtime
        router = await discover(rt.client, rt.config.gateway.tasks, self.releases)
        _check_policy(rt.config, router)
        _check_normalization(rt.preparer.settings, router)
        rt.router = router
        logs.event("tasks discovered", tasks=sorted(router.routes))

    async def rediscover(self) -> None:
        """After a release operation: the routes include models loaded since the last look."""
        async with self._reload_lock:
            await self._discover()

    async def _discover_until_found(self) -> None:
        while True:
            await asyncio.sleep(_DISCOVERY_RETRY_S)
            with contextlib.suppress(TritonError, ConfigError):
                await self._discover()
                return

    async def reload(self) -> dict[str, Any]:
        """Load the config again; on any problem keep the old one and raise the reason."""
        async with self._reload_lock:
            try:
                new = Config.load(self.config_path)
                result = await self._swap(new)
            except TextgateError as exc:
                self.metrics.reloads.labels("rejected").inc()
                logs.event("config reload rejected", logging.WARNING, error=exc.message)
                raise
            self.metrics.reloads.labels("applied").inc()
            logs.event("config reloaded", **result)
            return result

    async def _swap(self, new: Config) -> dict[str, Any]:
        old = self.runtime
        same_client = (
            self._endpoints(new) == self._endpoints(old.config) and new.client == old.config.client
        )
        client = old.client if same_client else self._client(new)
        if not same_client:
            await client.start()
        try:
            router = await discover(client, new.gateway.tasks, self.releases)
            _check_policy(new, router)
            _check_normalization(self._runtime(new, client, router).preparer.settings, router)
        except TextgateError:
            if not same_client:
                await client.close()
            raise
        try:
            old_review = self._swap_review(new)
        except TextgateError:
            if not same_client:
                await client.close()
            raise
        # Requests already running keep the runtime they started with.
        self.runtime = self._runtime(new, client, router)
        self.config = new
        later = asyncio.get_running_loop().call_later
        if not same_client:
            later(new.client.timeout_s + 1, lambda: asyncio.ensure_future(old.client.close()))
        if old_review is not None:
            later(new.client.timeout_s + 1, old_review.close)
        return {
            "tasks": sorted(router.routes),
            "new_client": not same_client,
            "review": str(self.review.path) if self.review is not None else None,
        }

    async def ready(self) -> tuple[bool, str]:
        """Ready when every model is. Hysteresis: a model that was ready counts as down
        only after ``_READY_MISSES`` failed probes in a row (one slow probe under load
        flipped /readyz and took the gateway out of its load balancer)."""
        rt = self.runtime
        if not rt.router.routes:
            return False, "no task discovered yet"
        states = await rt.client.models_ready(rt.router.models())
        down = []
        for model, ok in states.items():
            misses = 0 if ok else self._misses.get(model, 0) + 1
            self._misses[model] = misses
            if ok:
                self._was_ready.add(model)
            elif model not in self._was_ready or misses >= _READY_MISSES:
                down.append(model)
        return (not down, f"not ready: {', '.join(down)}" if down else "ready")


def _check_policy(config: Config, router: Router) -> None:
    """A policy must fit the models it applies to (validated at load, not per request)."""
    for route in router.routes.values():
        rules = [config.policy.for_task(route.task)]
        rules += [p for t in config.policy.tenants for p in t.tasks if p.task == route.task]
        for rule in rules:
            problem = check_labels(rule, route.labels)
            if problem:
                raise ConfigError(f"policy.tasks[{route.task}].positive_label", problem)


def _check_normalization(settings: NormalizeSettings, router: Router) -> None:
    """Train/serve skew is an error: a model trained on other normalization is refused."""
    for route in router.routes.values():
        if not route.normalization:
            continue  # bundles from before textgate recorded it
        problems = normalize.skew(json.loads(route.normalization), settings)
        if problems:
            raise ConfigError(
                "normalize",
                f"task '{route.task}' ({route.model}) was trained with other normalization "
                f"than this gateway's: {'; '.join(problems)}",
                hint="set the normalize section to the bundle's settings, or rebuild the bundle",
            )


def gateway_of(conn: HTTPConnection) -> Gateway:
    """The app's gateway (set by the lifespan before the first request)."""
    return conn.app.state.gateway  # type: ignore[no-any-return]


def install_sighup(gw: Gateway) -> None:
    """SIGHUP reloads the config file, as ``POST /admin/reload`` does."""
    # Signal handlers belong to the main thread; an app run in a test thread reloads via
    # the admin endpoint instead.
    if threading.current_thread() is not threading.main_thread():
        return

    async def reload() -> None:
        with contextlib.suppress(TextgateError):  # logged; the old config stays
            await gw.reload()

    with contextlib.suppress(NotImplementedError, RuntimeError):
        asyncio.get_running_loop().add_signal_handler(
            signal.SIGHUP, lambda: asyncio.ensure_future(reload())
        )

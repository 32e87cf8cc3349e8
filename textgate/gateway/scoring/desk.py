"""The feedback and explanation desk: recent verdicts, corrections, trigger words.

    every front end's verdicts ──> remember ──> Recent (request id -> what was answered)
    POST /v1/feedback, spamc -L ──> correct ──> FeedbackStore (the next training set)
    ?explain=N, REPORT, console ──> spans   ──> explain (one more Triton request)

Owned by the runtime (``Gateway``), not by any listener: the HTTP routes, the mail
protocols and the console all reach the same desk, and it lives as long as the gateway.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from textgate import feedback, tenant_bayes
from textgate.config import FeedbackConfig
from textgate.errors import InvalidInput, NotFound
from textgate.gateway.scoring import explain
from textgate.gateway.scoring.context import Context, Runtime
from textgate.gateway.scoring.explain import Span
from textgate.gateway.scoring.learning import Learned
from textgate.gateway.scoring.policy import NEGATIVE_LABELS
from textgate.signals import wire


class Desk:
    def __init__(self, config: Callable[[], FeedbackConfig]) -> None:
        self._config = config  # read at the first correction: a reload may move the store
        cfg = config()
        self.recent = feedback.Recent(cfg.recent_requests, cfg.recent_bytes)
        self._store: feedback.FeedbackStore | None = None  # opened at the first correction
        # Per-tenant learning (feedback.tenant_learning): kept from the store's writes
        # (its watchers) and rebuilt when another process (textgate learn) changed the file.
        self.learning = tenant_bayes.Learning(NEGATIVE_LABELS)
        self._learning_on = False
        self._seen_version: int | None = None
        self._checked = 0.0
        self._writes = 0
        self._rebuilding = asyncio.Lock()

    @property
    def store(self) -> feedback.FeedbackStore:
        if self._store is None:
            self._store = feedback.FeedbackStore.from_config(self._config())
            self._store.watchers.append(self._watch)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    # --- per-tenant learning ----------------------------------------------------------

    def _watch(self, what: str, row: feedback.Correction) -> None:
        self._writes += 1
        if self._learning_on:
            (self.learning.add if what == "add" else self.learning.remove)(row)

    async def start_learning(self) -> None:
        """Every tenant's layer from the store, at start (off the event loop)."""
        if self._config().tenant_learning:
            await asyncio.to_thread(self._rebuild)

    def _rebuild(self) -> None:
        self._learning_on = True
        for _ in range(3):  # a write during the rebuild may be missed: read again
            writes = self._writes
            self._seen_version = self.store.data_version()
            self.learning.rebuild(self.store.find(limit=-1))
            if writes == self._writes:
                return

    async def learned(self) -> Learned | None:
        """The layers for one request; polls the store for another process's rows at most
        every ``learning_poll_s`` (one PRAGMA in a worker thread)."""
        cfg = self._config()
        if not cfg.tenant_learning:
            self._learning_on = False
            return None
        now = time.monotonic()
        if not self._learning_on or now - self._checked >= cfg.learning_poll_s:
            self._checked = now
            async with self._rebuilding:  # one rebuild at a time; the others wait for it
                changed = await asyncio.to_thread(self.store.data_version) != self._seen_version
                if changed or not self._learning_on:
                    await asyncio.to_thread(self._rebuild)
        return Learned(self.learning, cfg.min_corrections, cfg.learning_weight)

    async def forget(self, task: str, raw: str | bytes, tenant: str | None, rt: Runtime) -> int:
        """spamc forget: a tenant's corrections of this message go (and leave its layer)."""
        text = rt.preparer.email(raw).text if isinstance(raw, bytes) else rt.preparer.text(raw).text
        return await self.store.remove_async(text_sha256=feedback.sha256(text), tenant=tenant)

    def remember(
        self,
        task: str,
        raw: Sequence[str | bytes],
        tenant: str | None,
        results: Sequence[dict[str, Any]],
    ) -> None:
        """Each answered item, for a correction that names its request id."""
        for x, r in zip(raw, results, strict=True):
            self.recent.remember(
                r["request_id"],
                feedback.Seen(
                    task=task,
                    raw=x,
                    tenant=tenant,
                    labels=tuple(r["probabilities"]),
                    model=str(r["model"]["name"]),
                    model_version=str(r["model"]["version"]),
                    label=r["label"],
                    score=r["score"],
                    action=r["action"],
                ),
            )

    async def spans(
        self, rt: Runtime, task: str, raw: str | bytes, ctx: Context, n: int, cheap: bool = False
    ) -> list[Span]:
        """The top ``n`` spans of the input's first piece, in one Triton request; ``cheap``:
        of the cascade's n-gram stage, which answered it (cascade.py)."""
        item = rt.preparer.email(raw) if isinstance(raw, bytes) else rt.preparer.text(raw)
        route = rt.router.route(task)
        model = (route.cheap if cheap else None) or route.model
        limit = min(explain.MAX_CANDIDATES, max(0, route.max_batch_size - 1))

        async def score(texts: Sequence[str]) -> list[float]:
            # each variant carries the message's symbols, as the verdict's pieces did
            sent = [wire.frame(item.symbols, t) if route.signals else t for t in texts]
            pred = await rt.client.infer(
                model, sent, request_id=ctx.request_id, headers=ctx.headers
            )
            return [
                rt.policy.decide(task, route.labels, [float(p) for p in row], ctx.tenant).score
                for row in pred.probabilities
            ]

        domains = tuple(item.notes.get("link_domains") or ())
        _, spans = await explain.explain(item.pieces[0], score, n, domains=domains, limit=limit)
        return spans

    async def correct(
        self,
        rt: Runtime,
        task: str,
        label: str,
        tenant: str | None,
        *,
        raw: str | bytes | None = None,
        request_id: str | None = None,
        source: str,
    ) -> feedback.Correction:
        """One correction: by the message itself, or by the request id of a recent verdict."""
        seen = self.recent.get(request_id) if request_id else None
        if raw is None:
            if seen is None:
                raise NotFound(
                    f"no recent verdict with request id {str(request_id)[:80]!r}",
                    field="request_id",
                    hint="the gateway keeps the last feedback.recent_requests verdicts in "
                    "memory; send the message itself instead",
                )
            raw, task = seen.raw, seen.task
        labels = seen.labels if seen is not None else rt.router.route(task).labels
        if label not in labels:
            raise InvalidInput(
                f"label {label[:40]!r} is not one of task '{task}': {', '.join(labels)}",
                field="label",
            )
        item = rt.preparer.email(raw) if isinstance(raw, bytes) else rt.preparer.text(raw)
        return await self.store.add_async(
            task=task,
            label=label,
            text=item.text,
            source=source,
            tenant=tenant if seen is None else (seen.tenant or tenant),
            raw=raw if isinstance(raw, bytes) else raw.encode("utf-8"),
            request_id=request_id,
            previous=seen,
        )

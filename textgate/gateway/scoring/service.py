"""One classification request, the same for every front end (HTTP, spamd, milter):

    Service.run:  classify ─> [explain] ─> record
    classify:     normalize -> queue -> Triton -> re-score -> policy -> steps.py -> event
    record:       metrics, the desk's recent verdicts (corrections), the review store

A front end calls ``run`` once and renders what it returns in its own protocol; nothing
after scoring is written in a front end (the steps were once written twice, and the copies
drifted: a metrics call fixed in one still failed every spamd scan in the other).
``Runtime`` and ``Context`` (context.py) are what every step is handed.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from textgate.errors import InvalidInput, TritonTimeout
from textgate.gateway.records import logs
from textgate.gateway.records.event_sink import EventSink
from textgate.gateway.records.outbox import RequestRecord
from textgate.gateway.records.prometheus import Metrics
from textgate.gateway.records.replay import anomaly
from textgate.gateway.records.review_records import keep_results
from textgate.gateway.records.review_store import ReviewStore
from textgate.gateway.scoring import answer, cascade, rescore, steps
from textgate.gateway.scoring.answer import Scored
from textgate.gateway.scoring.context import Context, Runtime
from textgate.gateway.scoring.desk import Desk
from textgate.gateway.scoring.explain import Span
from textgate.gateway.scoring.policy import on_malformed, score_of
from textgate.gateway.scoring.prepare import Prepared
from textgate.gateway.scoring.routing import Route


@dataclass
class Answer:
    """What ``Service.run`` hands a front end to render."""

    results: list[dict[str, Any]]
    spans: list[list[Span]] = field(default_factory=list)  # per item, when asked to explain


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)


class Service:
    def __init__(
        self,
        metrics: Metrics,
        events: EventSink,
        *,
        desk: Desk | None = None,
        review_store: Callable[[], ReviewStore | None] = lambda: None,
    ) -> None:
        self.metrics = metrics
        self.events = events
        self.desk = desk
        self.review_store = review_store  # the current one: a reload may move or close it

    async def run(
        self,
        rt: Runtime,
        task: str,
        raw: Sequence[str | bytes],
        ctx: Context,
        *,
        explain: int = 0,
        attach: bool = True,
    ) -> Answer:
        """The one path of every front end: classify, explain (``explain`` spans an item,
        each one more Triton request; ``attach``: into the results, as HTTP's
        ``explanation``), then record."""
        out = Answer(await self.classify(rt, task, raw, ctx))
        if explain and self.desk is not None:
            for x, r in zip(raw, out.results, strict=True):
                cheap = r.get("path") == cascade.CHEAP  # explain what answered
                found = await self.desk.spans(rt, task, x, ctx, explain, cheap)
                out.spans.append(found)
                if attach:
                    r["explanation"] = [s.as_dict() for s in found]
        await self.record(rt, task, raw, ctx, out.results)
        return out

    async def record(
        self,
        rt: Runtime,
        task: str,
        raw: Sequence[str | bytes],
        ctx: Context,
        results: Sequence[dict[str, Any]],
    ) -> None:
        """What every answered request leaves behind (its events were written in classify,
        durable before the answer)."""
        self.metrics.classified(task, ctx.tenant, results)
        self.metrics.observe_stages(ctx.timings_ms, task)
        if self.desk is not None:
            self.desk.remember(task, raw, ctx.tenant, results)
        store = self.review_store()
        if store is not None:
            actions = rt.config.review.actions
            await keep_results(
                store, actions, task, raw, ctx.tenant, results, ctx.texts, queue_id=ctx.queue_id
            )

    async def classify(
        self, rt: Runtime, task: str, raw: Sequence[str | bytes], ctx: Context
    ) -> list[dict[str, Any]]:
        rt.router.route(task)  # an unknown task is a 404 before any input is parsed
        if ctx.client_id and ctx.payload_sha256 and self.events.enabled:
            earlier = await self.events.lookup(ctx.tenant, ctx.client_id)
            if earlier is not None:
                same = earlier[0] == ctx.payload_sha256
                self.metrics.repeated_ids.labels("replayed" if same else "new_payload").inc()
                if same:
                    ctx.repeated = True
                    return list(json.loads(earlier[1]))
        return await self._classify(rt, task, raw, ctx)

    async def _classify(
        self, rt: Runtime, task: str, raw: Sequence[str | bytes], ctx: Context
    ) -> list[dict[str, Any]]:
        t = time.perf_counter()
        items = [await self._prepare(rt, x, i, len(raw)) for i, x in enumerate(raw)]
        ctx.timings_ms["normalize"] = _ms(t)
        ctx.texts = [item.text for item in items]
        ctx.sender = _sender(raw, items) or ctx.sender
        route = rt.router.route(task, rt.router.key(task, ctx.tenant, ctx.request_id, ctx.sender))
        weight = sum(len(item.pieces) for item in items)  # the limiter counts texts
        async with rt.limiter.slot(weight) as waited:
            ctx.timings_ms["queue"] = round(waited * 1000.0, 3)
            t = time.perf_counter()
            try:
                scored = await self._score(rt, route, items, ctx)
            except Exception:
                # The canary watch counts errors per version (automatic rollback).
                rt.router.observe(route, ok=False, latency_s=time.perf_counter() - t)
                raise
            ctx.timings_ms["triton"] = _ms(t)
            rt.router.observe(
                route,
                ok=True,
                latency_s=time.perf_counter() - t,
                texts=[item.text for item in items],
                probs=[s.probs for s in scored],
            )
        t = time.perf_counter()
        verdicts = [rt.policy.decide(task, route.labels, s.probs, ctx.tenant) for s in scored]
        rule = rt.policy.rule(task, ctx.tenant)
        unk = [await self._unk(rt, rule, route, item) for item in items]
        band = answer.band(rt, route, rule)
        verdicts = [
            on_malformed(rule, v) if item.notes.get("best_effort") else v
            for item, v in zip(items, verdicts, strict=True)
        ]
        found = [
            steps.Item(x, item.text, item.notes.get("sender"), v, language=item.language)
            for x, item, v in zip(raw, items, verdicts, strict=True)
        ]
        tenant = rt.policy.tenant_config(ctx.tenant)
        learned = await self.desk.learned() if self.desk is not None else None
        await steps.run_async(
            steps.Scope(task, rule, tenant, self.metrics, ctx.tenant, learned), found
        )
        verdicts = [f.verdict for f in found]
        ctx.timings_ms["policy"] = _ms(t)
        ctx.timings_ms["total"] = _ms(ctx.started)
        results, events = [], []
        for i, (item, s, v, u) in enumerate(zip(items, scored, verdicts, unk, strict=True)):
            rid = ctx.request_id if len(items) == 1 else f"{ctx.request_id}/{i}"
            self._maybe_replay(rt, route, item, s, rid)
            events.append(
                {
                    "text": item.text,
                    "request_id": rid,
                    "task": task,
                    "model": route.model,
                    "model_version": route.version,
                    "variant": s.variant,
                    "label": s.label,
                    "score": answer.finite(v.score),
                    "action": v.action,
                    "timings_ms": dict(ctx.timings_ms),
                    "tenant": ctx.tenant,
                    "rescore_band": band,
                    "unk_ratio": u,
                }
            )
            result = answer.result(route, item, s, v, rid, ctx) | found[i].result
            results.append(answer.with_checks(result, band, u, rule.unk_note_above))
        record = None
        if ctx.client_id and ctx.payload_sha256:
            record = RequestRecord(
                ctx.tenant, ctx.client_id, ctx.payload_sha256, json.dumps(results)
            )
        stored = await self.events.put_batch(events, record)  # durable before the answer
        if stored is not None:  # a concurrent repeat committed first: answer as it did
            self.metrics.repeated_ids.labels("replayed").inc()
            ctx.repeated = True
            return list(json.loads(stored))
        return results

    async def _prepare(self, rt: Runtime, x: str | bytes, i: int, n: int) -> Prepared:
        try:
            return await self._prepare_one(rt, x, i, n)
        except (UnicodeError, LookupError, ValueError, RecursionError) as exc:
            # A decoder or parser failure on input: the client's data, not our bug (422).
            logs.event("input could not be read", error=type(exc).__name__)
            name = "message" if isinstance(x, bytes) else ("text" if n == 1 else f"texts[{i}]")
            raise InvalidInput("could not be read", field=name, reason="unreadable") from None

    async def _prepare_one(self, rt: Runtime, x: str | bytes, i: int, n: int) -> Prepared:
        if isinstance(x, bytes):
            item = await rt.preparer.email_off_loop(x, rt.parse_pool)
            if item.notes.get("best_effort"):
                self.metrics.best_effort.labels(_first(item.notes.get("defects"))).inc()
            return item
        return rt.preparer.text(x, "text" if n == 1 else f"texts[{i}]")

    async def _score(
        self, rt: Runtime, route: Route, items: Sequence[Prepared], ctx: Context
    ) -> list[Scored]:
        """Each item's answer: from the campaign memory where it holds one, else Triton's."""
        memory = rt.campaigns
        if memory is None:
            return await self._score_fresh(rt, route, items, ctx)
        rule = rt.policy.rule(route.task, ctx.tenant)
        rescore = bool(route.precise and rt.config.gateway.rescore)
        keys = [
            memory.key(ctx.tenant, route, rule, rescore, item.wire(route.signals)) for item in items
        ]
        found: list[Scored | None] = [memory.get(k) for k in keys]
        todo = [i for i, s in enumerate(found) if s is None]
        for result, n in (("hit", len(items) - len(todo)), ("miss", len(todo))):
            if n:
                self.metrics.campaigns.labels(route.task, result).inc(n)
        if todo:
            fresh = await self._score_fresh(rt, route, [items[i] for i in todo], ctx)
            for i, s in zip(todo, fresh, strict=True):
                found[i] = s
                memory.put(keys[i], replace(s, cached=True), s.probs)
        return [s for s in found if s is not None]

    async def _score_fresh(
        self, rt: Runtime, route: Route, items: Sequence[Prepared], ctx: Context
    ) -> list[Scored]:
        """The cascade's cheap stage where the route and the policy allow it, then the full
        model for every item it was not sure of (cascade.py)."""
        b = cascade.bounds(route, rt.policy.rule(route.task, ctx.tenant))
        if b is None or route.cheap is None:
            return await self._score_full(rt, route, items, ctx)
        pieces = [p for item in items for p in item.wire(route.signals)]
        rows = await self._infer(rt, route.cheap, route, pieces, ctx)
        ends = np.cumsum([len(item.pieces) for item in items])
        found = cascade.decide(route, b, np.split(rows, ends[:-1]) if len(items) else [])
        todo = [i for i, s in enumerate(found) if s is None]
        self.metrics.cascade.labels(route.task, cascade.CHEAP).inc(len(items) - len(todo))
        if todo:
            self.metrics.cascade.labels(route.task, cascade.FULL).inc(len(todo))
            full = await self._score_full(rt, route, [items[i] for i in todo], ctx)
            for i, s in zip(todo, full, strict=True):
                found[i] = s
        return [s for s in found if s is not None]

    async def _score_full(
        self, rt: Runtime, route: Route, items: Sequence[Prepared], ctx: Context
    ) -> list[Scored]:
        pieces = [p for item in items for p in item.wire(route.signals)]
        probs = await self._infer(rt, route.model, route, pieces, ctx)
        rule = rt.policy.rule(route.task, ctx.tenant)
        out: list[Scored] = []
        start = 0
        for item in items:
            rows = probs[start : start + len(item.pieces)]
            start += len(item.pieces)
            out.append(answer.pool(route, rows, rule))
        if route.precise and rt.config.gateway.rescore:
            await self._rescore(rt, route, items, out, ctx)
        return out

    async def _rescore(
        self,
        rt: Runtime,
        route: Route,
        items: Sequence[Prepared],
        scored: list[Scored],
        ctx: Context,
    ) -> None:
        rule = rt.policy.rule(route.task, ctx.tenant)
        picked = [
            i
            for i, s in enumerate(scored)
            if rescore.needs_rescore(rule, score_of(rule, route.labels, s.probs))
        ]
        if not picked or route.precise is None:
            return
        pieces = [p for i in picked for p in items[i].wire(route.signals)]
        probs = await self._infer(rt, route.precise, route, pieces, ctx)
        start = 0
        for i in picked:
            rows = probs[start : start + len(items[i].pieces)]
            start += len(items[i].pieces)
            precise = answer.pool(route, rows, rule)
            old = scored[i]
            changed = answer.label_of(route.labels, old.probs) != precise.label
            self.metrics.rescores.labels(route.task, str(changed).lower()).inc()
            scored[i] = Scored(
                precise.label,
                precise.probs,
                route.precise_variant or "fp32",
                rescored=True,
                fast_probs=old.probs,
            )

    async def _infer(
        self, rt: Runtime, model: str, route: Route, texts: Sequence[str], ctx: Context
    ) -> np.ndarray:
        """All pieces through ``model`` in batches the model accepts."""
        size = max(1, route.max_batch_size)
        if ctx.deadline is None:
            ctx.deadline = time.monotonic() + rt.config.client.timeout_s
        parts = []
        for start in range(0, len(texts), size):
            remaining = ctx.deadline - time.monotonic()
            if remaining <= 0:
                raise TritonTimeout(f"no answer from Triton for '{model}' within the deadline")
            part = texts[start : start + size]
            coalescer = getattr(rt, "coalescer", None)
            if coalescer is not None:  # shares a Triton call with concurrent requests
                parts.append(
                    await coalescer.infer(
                        model,
                        part,
                        max_batch_size=size,
                        deadline=ctx.deadline,
                        request_id=ctx.request_id,
                        headers=ctx.headers,
                    )
                )
                continue
            pred = await rt.client.infer(
                model, part, request_id=ctx.request_id, headers=ctx.headers, timeout_s=remaining
            )
            parts.append(pred.probabilities)
        return np.concatenate(parts) if parts else np.zeros((0, len(route.labels)), np.float32)

    async def _unk(self, rt: Runtime, rule: Any, route: Route, item: Prepared) -> float | None:
        """The item's [UNK] share, for tasks whose policy asks for it (costs a tokenization:
        docs/gateway.md, "Unseen script")."""
        if rule.unk_note_above is None or rt.unk is None or not route.tokenizer_sha256:
            return None
        if not rt.unk.ready(route.tokenizer_sha256):
            await asyncio.to_thread(rt.unk.prepare, route.tokenizer_sha256)
        ratio = rt.unk.ratio(route.tokenizer_sha256, item.pieces)
        return None if ratio is None else round(ratio, 4)

    def _maybe_replay(self, rt: Runtime, route: Route, item: Prepared, s: Scored, rid: str) -> None:
        if rt.replay is None:
            return
        fast = s.fast_probs if s.rescored else s.probs
        why = anomaly(
            fast or s.probs, s.probs if s.rescored else None, rt.config.gateway.replay_disagreement
        )
        if why is None:
            return
        rt.replay.save(
            {
                "request_id": rid,
                "reason": why,
                "task": route.task,
                "model": route.model,
                "precise_model": route.precise,
                "model_version": route.version,
                "variant": route.variant,
                "precise_variant": route.precise_variant,
                "tokenizer_sha256": route.tokenizer_sha256,
                "normalization": rt.preparer.settings_dict(),
                "notes": item.notes,
                "pieces": list(item.wire(route.signals)),  # as Triton received them
                "outputs": {"fast": fast, "precise": s.probs if s.rescored else None},
                "time": time.time(),
            }
        )
        self.metrics.replays.inc()


def _sender(raw: Sequence[str | bytes], items: Sequence[Prepared]) -> str | None:
    """A raw e-mail's From address (normalize's ``sender`` note): it wins over X-Sender."""
    if raw and isinstance(raw[0], bytes):
        return items[0].notes.get("sender") or None
    return None


def _first(defects: Any) -> str:
    """The defect that sent a message to the best-effort path, as a bounded metric label."""
    code = str(defects[0]) if defects else "unknown"
    return code.split(":", 1)[0][:40]

"""One classification request: normalize -> queue -> Triton -> re-score -> policy -> event.

``Runtime`` is everything a config reload replaces; a request takes the runtime current at
its start and keeps it to the end, so a reload never changes a request half-way.

Just over 400 lines: the steps of one request stay in one reading order here; the issue "One
path from score to record" moves the steps after scoring into their own room.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from textgate.config import Config
from textgate.errors import InvalidInput, TritonTimeout
from textgate.gateway import languages, logs, rescore, senders
from textgate.gateway.campaign import Campaigns
from textgate.gateway.coalesce import Coalescer
from textgate.gateway.event_sink import EventSink
from textgate.gateway.limiter import Limiter
from textgate.gateway.outbox import RequestRecord
from textgate.gateway.policy import Policy, Verdict, on_malformed, score_of
from textgate.gateway.prepare import Prepared, Preparer
from textgate.gateway.prometheus import Metrics
from textgate.gateway.replay import ReplayStore, anomaly
from textgate.gateway.routing import Route, Router
from textgate.gateway.unk import UnkCounter
from textgate.gateway.unk import note as unk_note
from textgate.triton_client import TritonClient


@dataclass
class Runtime:
    config: Config
    policy: Policy
    limiter: Limiter
    router: Router
    client: TritonClient
    preparer: Preparer
    replay: ReplayStore | None = None
    parse_pool: Any = None  # ParsePool; None: e-mail is parsed in-process
    coalescer: Coalescer | None = None  # None: one Triton call per request (coalesce: false)
    unk: UnkCounter | None = None  # None: no unk_ratio (no tokenizer files to read)
    campaigns: Campaigns | None = None  # None: every item goes to Triton (campaign.py)


@dataclass
class Context:
    request_id: str
    tenant: str | None = None
    # A canary key: a raw e-mail's From address, else the X-Sender header (tenant and
    # request id are the other keys).
    sender: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # passed on to Triton
    # Idempotency: the client's own X-Request-ID (None when it sent none) and a hash of
    # task + media type + body; a repeat of both (same tenant) gets the earlier answer.
    client_id: str | None = None
    payload_sha256: str | None = None
    repeated: bool = False  # set when the answer is the stored one
    timings_ms: dict[str, float] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)  # the normalized texts (the review store)
    started: float = field(default_factory=time.perf_counter)
    # One Triton deadline per request (monotonic), shared by the fast pass and the re-score:
    # a fresh deadline per call let a re-score run past the client's timeout.
    deadline: float | None = None


@dataclass
class Scored:
    """One piece's answer, as used after max-pooling and the re-score."""

    label: str
    probs: list[float]
    variant: str
    rescored: bool = False
    fast_probs: list[float] | None = None
    cached: bool = False  # answered from the campaign memory


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)


class Service:
    def __init__(self, metrics: Metrics, events: EventSink) -> None:
        self.metrics = metrics
        self.events = events

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
        band = _band(rt, route, rule)
        verdicts = [
            on_malformed(rule, v) if item.notes.get("best_effort") else v
            for item, v in zip(items, verdicts, strict=True)
        ]
        listed = senders.for_items(
            rt.policy.tenant_config(ctx.tenant), rule, raw, [i.notes.get("sender") for i in items]
        )
        verdicts = [senders.verdict(v, x) for v, x in zip(verdicts, listed, strict=True)]
        for x in listed:
            if x is not None:
                self.metrics.listed.labels(task, x.list).inc()
        found = languages.for_items(rule, raw, [item.text for item in items])
        verdicts = [
            languages.verdict(rule, v, f, x)
            for v, f, x in zip(verdicts, found, listed, strict=True)
        ]
        for f in found:
            if f is not None and languages.unwanted(rule, f):
                self.metrics.languages.labels(task, f.code).inc()
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
                    "score": _finite(v.score),
                    "action": v.action,
                    "timings_ms": dict(ctx.timings_ms),
                    "tenant": ctx.tenant,
                    "rescore_band": band,
                    "unk_ratio": u,
                }
            )
            result = (
                self._result(route, item, s, v, rid, ctx)
                | senders.as_result(listed[i])
                | languages.as_result(rule, found[i])
            )
            results.append(_with_checks(result, band, u, rule.unk_note_above))
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
        pieces = [p for item in items for p in item.wire(route.signals)]
        probs = await self._infer(rt, route.model, route, pieces, ctx)
        rule = rt.policy.rule(route.task, ctx.tenant)
        out: list[Scored] = []
        start = 0
        for item in items:
            rows = probs[start : start + len(item.pieces)]
            start += len(item.pieces)
            out.append(self._pool(route, rows, rule))
        if route.precise and rt.config.gateway.rescore:
            await self._rescore(rt, route, items, out, ctx)
        return out

    def _pool(self, route: Route, rows: np.ndarray, rule: Any) -> Scored:
        """Max-pool the pieces of one item: the piece with the highest score answers."""
        scores = [score_of(rule, route.labels, r) for r in rows]
        best = max(
            range(len(rows)), key=lambda i: -math.inf if math.isnan(scores[i]) else scores[i]
        )
        if any(math.isnan(s) for s in scores):
            best = next(i for i, s in enumerate(scores) if math.isnan(s))  # keep the anomaly
        row = [float(p) for p in rows[best]]
        return Scored(_label(route.labels, row), row, route.variant)

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
            precise = self._pool(route, rows, rule)
            old = scored[i]
            changed = _label(route.labels, old.probs) != precise.label
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
        ~40-50 µs a sentence, benchmarks/unk_ratio.py)."""
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

    def _result(
        self,
        route: Route,
        item: Prepared,
        s: Scored,
        v: Verdict,
        rid: str,
        ctx: Context,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label": s.label,
            "probabilities": {n: _finite(p) for n, p in zip(route.labels, s.probs, strict=True)},
            "score": _finite(v.score),
            "action": v.action,
            "model": route.describe(),
            "precision_path": s.variant,
            "rescored": s.rescored,
            "request_id": rid,
            "timings_ms": dict(ctx.timings_ms),
            "normalization": item.notes,
        }
        if v.defects:  # only then: every ordinary answer keeps its shape
            out["defects"] = list(v.defects)
        if s.cached:
            out["cached"] = True
        if route.signals and item.symbols:  # what the combiner weighed, and by how much
            weights = route.symbol_weights
            out["symbols"] = [{"symbol": n, "weight": weights.get(n, 0.0)} for n in item.symbols]
        return out


def _band(rt: Runtime, route: Route, rule: Any) -> list[list[float]]:
    """The score intervals the fp32 variant re-scores: empty where re-scoring is off."""
    if not (route.precise and rt.config.gateway.rescore):
        return []
    return [[low, high] for low, high in rule.rescore_intervals()]


def _with_checks(
    result: dict[str, Any], band: list[list[float]], unk: float | None, above: float | None
) -> dict[str, Any]:
    """``rescore_band`` beside ``precision_path``; ``unk_ratio`` and the notes it raises."""
    notes = [unk_note(unk)] if unk is not None and above is not None and unk > above else []
    return {**result, "rescore_band": band, "unk_ratio": unk, "notes": notes}


def _sender(raw: Sequence[str | bytes], items: Sequence[Prepared]) -> str | None:
    """A raw e-mail's From address (normalize's ``sender`` note): it wins over X-Sender."""
    if raw and isinstance(raw[0], bytes):
        return items[0].notes.get("sender") or None
    return None


def _first(defects: Any) -> str:
    """The defect that sent a message to the best-effort path, as a bounded metric label."""
    code = str(defects[0]) if defects else "unknown"
    return code.split(":", 1)[0][:40]


def _label(labels: Sequence[str], probs: Sequence[float]) -> str:
    finite = [p if math.isfinite(p) else -math.inf for p in probs]
    return labels[max(range(len(labels)), key=lambda i: finite[i])]


def _finite(value: float) -> float | None:
    """JSON has no NaN: a non-finite number is sent as null (answer and event alike; the
    verdict lists the defect, and the output is replayed when a replay store is set)."""
    return float(value) if math.isfinite(value) else None

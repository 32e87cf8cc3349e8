"""The steps after the policy: each may change an item's verdict and add to its result.

    policy.decide ─> on_malformed ─> STEPS: sender lists ─> tenant learning ─> language
                                            policy ─> the answer

One list, run in order over every item of a request: a new per-item adjustment (a
reputation list, a size rule) is one more function here, not one more pass in the service.
The order matters: the language step leaves an allow-listed sender alone, so it runs after
the sender lists; tenant learning re-decides the thresholds' action, so it runs after the
lists (whose decision it leaves alone) and before the language policy (whose floor must
apply to the action learning chose, not be undone by it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from textgate.config import TaskPolicyConfig, TenantConfig
from textgate.gateway.records.prometheus import Metrics
from textgate.gateway.scoring import languages, learning, senders
from textgate.gateway.scoring.learning import Learned
from textgate.gateway.scoring.policy import Verdict
from textgate.gateway.scoring.senders import Listed
from textgate.signals.language import Language


@dataclass(frozen=True)
class Scope:
    """What every step of one request reads."""

    task: str
    rule: TaskPolicyConfig
    tenant: TenantConfig | None
    metrics: Metrics
    tenant_name: str | None = None  # the request's tenant (None: the default one)
    learned: Learned | None = None  # per-tenant learning, when the feedback config turns it on


@dataclass
class Item:
    """One item on its way through the steps: what it is, its verdict, what was found."""

    raw: str | bytes
    text: str  # normalized
    sender: str | None  # a raw e-mail's From address (normalize's ``sender`` note)
    verdict: Verdict
    listed: Listed | None = None
    language: Language | None = None
    result: dict[str, Any] = field(default_factory=dict)  # what the item's answer gains


def sender_lists(scope: Scope, items: Sequence[Item]) -> None:
    """A tenant's allow and block lists (``senders.py``)."""
    raw, sent = [i.raw for i in items], [i.sender for i in items]
    for item, x in zip(items, senders.for_items(scope.tenant, scope.rule, raw, sent), strict=True):
        item.listed, item.verdict = x, senders.verdict(item.verdict, x)
        item.result |= senders.as_result(x)
        if x is not None:
            scope.metrics.listed.labels(scope.task, x.list).inc()


def language_policy(scope: Scope, items: Sequence[Item]) -> None:
    """``ok_languages`` and ``language_action`` (``languages.py``)."""
    rule = scope.rule
    raw, texts, known = [i.raw for i in items], [i.text for i in items], [i.language for i in items]
    found = languages.for_items(rule, raw, texts, known)
    for item, f in zip(items, found, strict=True):
        item.language = f
        item.verdict = languages.verdict(rule, item.verdict, f, item.listed)
        item.result |= languages.as_result(rule, f)
        if f is not None and languages.unwanted(rule, f):
            scope.metrics.languages.labels(scope.task, f.code).inc()


def tenant_learning(scope: Scope, items: Sequence[Item]) -> None:
    """The tenant's own corrections as a signal (``learning.py``)."""
    for item in items:
        found = learning.signal(scope.learned, scope.tenant_name, scope.task, item.text)
        before = item.verdict.action
        item.verdict = learning.verdict(scope.rule, item.verdict, found, item.listed)
        item.result |= learning.as_result(found)
        if item.verdict.action != before:
            scope.metrics.learned.labels(scope.task, item.verdict.action).inc()


Step = Callable[[Scope, Sequence[Item]], None]
STEPS: tuple[Step, ...] = (sender_lists, tenant_learning, language_policy)


def run(scope: Scope, items: Sequence[Item]) -> None:
    for step in STEPS:
        step(scope, items)


async def run_async(scope: Scope, items: Sequence[Item]) -> None:
    """``run``, in a worker thread when the request's tenant has a learning layer: hashing
    each text and, after a new correction, re-centring the layer (up to 400 leave-one-out
    scores) would otherwise hold the event loop, and every other request with it. Without
    a layer the steps are cheap and stay on the loop (a thread hop costs more than they do)."""
    learned = scope.learned
    if learned is not None and learned.layers.layer(scope.tenant_name, scope.task) is not None:
        await asyncio.to_thread(run, scope, items)
    else:
        run(scope, items)

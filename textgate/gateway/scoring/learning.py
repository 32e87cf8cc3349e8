"""A tenant's own corrections as one more signal (``feedback.tenant_learning``; docs/learning.md).

    verdict (after the sender lists) ─> logit(score) + weight(n)·log_odds ─> the rule's
    thresholds again ─> language policy ─> the answer

The layer is ``textgate.tenant_bayes`` (naive Bayes over the served n-gram buckets), kept by
the desk from the feedback store. Its weight is 0 until the tenant has ``min_corrections``
of both classes. Only threshold tasks are moved, never a sender-list decision or a verdict
whose model output was not finite. A floor the policy put under the action (a label rule,
``malformed_action``) stays a floor: the layer re-decides the thresholds' part only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from textgate import tenant_bayes
from textgate.config import TaskPolicyConfig
from textgate.gateway.scoring.policy import NON_FINITE_OUTPUT, Verdict, at_least
from textgate.gateway.scoring.senders import Listed

EPS = 1e-7  # a score of exactly 0 or 1 has no logit


@dataclass(frozen=True)
class Learned:
    """The desk's layers as one request reads them, with the config's knobs."""

    layers: tenant_bayes.Learning
    minimum: int
    ceiling: float


def logit(p: float) -> float:
    p = min(max(p, EPS), 1.0 - EPS)
    return math.log(p / (1.0 - p))


def thresholds(rule: TaskPolicyConfig, score: float) -> str:
    if score >= rule.quarantine_at:
        return "quarantine"
    return "review" if score >= rule.review_at else "allow"


def signal(
    learned: Learned | None, tenant: str | None, task: str, text: str
) -> tuple[tenant_bayes.Signal, float] | None:
    """The tenant's signal for a text and the weight it gets; None without corrections."""
    if learned is None:
        return None
    s = learned.layers.signal(tenant, task, text)
    if s is None:
        return None
    return s, tenant_bayes.weight(s.negatives, s.positives, learned.minimum, learned.ceiling)


def verdict(
    rule: TaskPolicyConfig, v: Verdict, found: tuple[tenant_bayes.Signal, float] | None,
    listed: Listed | None,
) -> Verdict:  # fmt: skip
    """The verdict with the tenant's signal added on the logit scale and the thresholds
    applied again; unchanged when it may not move (see the module's docstring)."""
    if (
        found is None
        or found[1] == 0.0
        or rule.kind != "threshold"
        or listed is not None
        or NON_FINITE_OUTPUT in v.defects
    ):
        return v
    s, w = found
    score = 1.0 / (1.0 + math.exp(-(logit(v.score) + w * s.log_odds)))
    action = thresholds(rule, score)
    if v.action != thresholds(rule, v.score):  # raised by a floor: it stays one
        action = at_least(action, v.action)
    return dataclasses.replace(v, action=action, score=score)


def as_result(found: tuple[tenant_bayes.Signal, float] | None) -> dict[str, Any]:
    if found is None:
        return {}
    s, w = found
    return {
        "tenant_learning": {
            "corrections": s.corrections,
            "weight": round(w, 6),
            "log_odds": round(s.log_odds, 6),
            "version": s.version,
        }
    }

"""The confidence cascade (issue 42 §1): mail the n-gram half alone is sure of is answered
without the transformer.

    pieces ─> T_cheap (n-grams only) ─┬─ sure ─────> answer        (path: cheap)
                                      └─ the rest ─> T ─> answer   (path: full)

"Sure" is the bundle's bounds on the n-gram half's P(not negative), read from ``T_cheap``'s
config by the router: at or below ``allow_at_or_below`` → allow; at or above
``quarantine_at_or_above`` (two-label tasks only) → quarantine. The bounds were chosen on
out-of-source scores so that at most 0.3 % of any source group's actions differ from the
full scorer's (docs/gateway.md). On top of them the tenant's own policy must give the same
action whatever the transformer would have said about the split among the other labels:
an allow needs P(not negative) below every review threshold (the phish rule's too), a
quarantine needs it at or above the policy's quarantine threshold. An item of several
pieces is as sure as its least sure piece (the full path max-pools the same way).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from textgate.config import TaskPolicyConfig
from textgate.gateway.scoring.answer import Scored, label_of
from textgate.gateway.scoring.routing import Route

CHEAP = "cheap"
FULL = "full"
VARIANT = "ngrams"  # what answered on the cheap path, as precision_path says


@dataclass(frozen=True)
class Bounds:
    allow: float  # P(not negative) at or below this: allow
    quarantine: float | None  # at or above this: quarantine (None: that side is off)
    negative: int  # the negative label's index


def bounds(route: Route, rule: TaskPolicyConfig) -> Bounds | None:
    """This request's bounds; None: every item takes the full path (no cascade in the
    bundle, the tenant turned it off, or a policy the n-gram score does not decide)."""
    if route.cheap is None or route.cheap_allow is None or not rule.cascade:
        return None
    negative = rule.negative_label
    if rule.kind != "threshold" or negative is None or negative != route.cheap_negative:
        return None
    if negative not in route.labels:
        return None
    allow = route.cheap_allow
    if rule.cascade_allow_at_or_below is not None:
        allow = min(allow, rule.cascade_allow_at_or_below)
    floors = [rule.review_at, *(r.review_at for r in rule.label_rules if r.label in route.labels)]
    allow = min(allow, math.nextafter(min(floors), -math.inf))  # strictly below every floor
    high = route.cheap_quarantine
    if high is not None:
        high = max(high, rule.quarantine_at)
    return Bounds(allow, high, route.labels.index(negative))


def decide(route: Route, b: Bounds, rows: Sequence[np.ndarray]) -> list[Scored | None]:
    """Each item's cheap answer (its pieces' rows from ``T_cheap``), or None: to the full path."""
    out: list[Scored | None] = []
    for piece_rows in rows:
        p = [1.0 - float(r[b.negative]) for r in piece_rows]
        if not p or not all(math.isfinite(x) for x in p):
            out.append(None)  # the full path reports what is wrong
            continue
        worst = max(p)
        sure = worst <= b.allow or (b.quarantine is not None and min(p) >= b.quarantine)
        if not sure:
            out.append(None)
            continue
        row = [float(x) for x in piece_rows[p.index(worst)]]
        out.append(Scored(label_of(route.labels, row), row, VARIANT, path=CHEAP))
    return out

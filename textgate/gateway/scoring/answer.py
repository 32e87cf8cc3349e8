"""The shape of one item's answer: what the service hands back, the event and the store.

``Scored`` is one item's model output after max-pooling and the re-score; ``result`` is
the JSON a client sees of it (``schema.py`` publishes that shape).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from textgate.gateway.scoring.context import Context, Runtime
from textgate.gateway.scoring.policy import Verdict, score_of
from textgate.gateway.scoring.prepare import Prepared
from textgate.gateway.scoring.routing import Route
from textgate.gateway.scoring.unk import note as unk_note


@dataclass
class Scored:
    """One piece's answer, as used after max-pooling and the re-score."""

    label: str
    probs: list[float]
    variant: str
    rescored: bool = False
    fast_probs: list[float] | None = None
    cached: bool = False  # answered from the campaign memory
    path: str = "full"  # "cheap": the cascade's n-gram stage answered (cascade.py)


def result(
    route: Route,
    item: Prepared,
    s: Scored,
    v: Verdict,
    rid: str,
    ctx: Context,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "label": s.label,
        "probabilities": {n: finite(p) for n, p in zip(route.labels, s.probs, strict=True)},
        "score": finite(v.score),
        "action": v.action,
        "model": route.describe(),
        "precision_path": s.variant,
        "rescored": s.rescored,
        "path": s.path,
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


def band(rt: Runtime, route: Route, rule: Any) -> list[list[float]]:
    """The score intervals the fp32 variant re-scores: empty where re-scoring is off."""
    if not (route.precise and rt.config.gateway.rescore):
        return []
    return [[low, high] for low, high in rule.rescore_intervals()]


def with_checks(
    result: dict[str, Any], band: list[list[float]], unk: float | None, above: float | None
) -> dict[str, Any]:
    """``rescore_band`` beside ``precision_path``; ``unk_ratio`` and the notes it raises."""
    notes = [unk_note(unk)] if unk is not None and above is not None and unk > above else []
    return {**result, "rescore_band": band, "unk_ratio": unk, "notes": notes}


def finite(value: float) -> float | None:
    """JSON has no NaN: a non-finite number is sent as null (answer and event alike; the
    verdict lists the defect, and the output is replayed when a replay store is set)."""
    return float(value) if math.isfinite(value) else None


def pool(route: Route, rows: np.ndarray, rule: Any) -> Scored:
    """Max-pool the pieces of one item: the piece with the highest score answers."""
    scores = [score_of(rule, route.labels, r) for r in rows]
    best = max(range(len(rows)), key=lambda i: -math.inf if math.isnan(scores[i]) else scores[i])
    if any(math.isnan(s) for s in scores):
        best = next(i for i, s in enumerate(scores) if math.isnan(s))  # keep the anomaly
    row = [float(p) for p in rows[best]]
    return Scored(label_of(route.labels, row), row, route.variant)


def label_of(labels: Sequence[str], probs: Sequence[float]) -> str:
    finite = [p if math.isfinite(p) else -math.inf for p in probs]
    return labels[max(range(len(labels)), key=lambda i: finite[i])]

"""fast variant -> fp32 re-score: only where precision can change the action.

When the fast variant's (int8 on CPU, fp16 on GPU) score lies within ``rescore_band`` of a
decision threshold, or inside the task's ``rescore_range`` where one is set (sentiment:
0.45-0.55, seed 001), the same text is scored again by ``<task>_fp32`` and that answer is
used. With no fp32 ensemble deployed (one variant) or ``gateway.rescore: false`` it is off.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from textgate.config import TaskPolicyConfig


def near_threshold(score: float, thresholds: Sequence[float], band: float) -> bool:
    if band <= 0:
        return False
    if math.isnan(score):
        return True  # a NaN from the fast variant is exactly what fp32 should check
    return any(abs(score - t) <= band for t in thresholds)


def in_intervals(score: float, intervals: Sequence[tuple[float, float]]) -> bool:
    if math.isnan(score):
        return bool(intervals)  # as above: NaN is re-scored whenever re-scoring is on
    return any(low <= score <= high for low, high in intervals)


def needs_rescore(rule: TaskPolicyConfig, score: float) -> bool:
    if rule.rescore_range is not None:
        return in_intervals(score, (rule.rescore_range,))
    return near_threshold(score, rule.thresholds(), rule.rescore_band)

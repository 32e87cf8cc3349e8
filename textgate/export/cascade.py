"""The confidence cascade's bounds in a bundle (issue 42 §1), checked and measured.

The bounds are P(not negative) from the bundle's n-gram half alone: the gateway answers
``allow`` without the transformer at or below ``allow_at_or_below`` (and, for two-label
tasks, ``quarantine`` at or above ``quarantine_at_or_above``). They are not fitted here:
choosing them needs the full scorer's *out-of-source* scores, which only the nested
leave-one-source-out run has (100 minutes a seed on 2 cores), so a task's recipe carries
the bounds that study chose (``build.EXPORT_DEFAULTS``, docs/gateway.md) and the export
records them with their source and what they do on this bundle's own test split.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from textgate.bundle import cascade_problem
from textgate.errors import ConfigError, ExportError


def record(
    settings: Mapping[str, Any],
    lexical: Any,
    labels: Sequence[str],
    test_texts: Sequence[str],
    test_probs: Any,
) -> dict[str, Any]:
    """The manifest's ``cascade`` section: the bounds, where they came from, and on the test
    split the share the cheap stage would answer and how many of those answers name another
    label than the full model's (``test_probs``, the joined fp32 probabilities)."""
    lo, hi = bounds(settings, len(labels))
    if lexical is None:
        raise ExportError(
            "a cascade needs the n-gram half it runs, and this checkpoint has none",
            hint="train with the n-gram half (the task's default), or export without a cascade",
        )
    out: dict[str, Any] = {
        "allow_at_or_below": lo,
        "quarantine_at_or_above": hi,
        "source": str(settings.get("source") or "given"),
    }
    if not test_texts:
        return out
    z = np.clip(lexical.scores(list(test_texts)), -50.0, 50.0)
    p = 1.0 / (1.0 + np.exp(-z))
    low = p <= lo
    high = p >= hi if hi is not None else np.zeros(len(p), dtype=bool)
    full = np.argmax(np.asarray(test_probs), axis=1)
    negative = int(lexical.negative)
    changed = (low & (full != negative)) | (high & (full == negative))
    out["test"] = {
        "n": len(p),
        "answered_cheaply": round(float((low | high).mean()), 4),
        "labels_changed": round(float(changed.mean()), 4),
    }
    return out


def bounds(settings: Mapping[str, Any], n_labels: int) -> tuple[float, float | None]:
    lo, hi = settings.get("allow_at_or_below"), settings.get("quarantine_at_or_above")
    if problem := cascade_problem(lo, hi, n_labels):
        field, why = problem
        hint = "set quarantine_at_or_above: null (the allow side only)" if "labels" in why else ""
        raise ConfigError(f"cascade.{field}", why, hint=hint or None)
    return float(lo or 0.0), None if hi is None else float(hi)

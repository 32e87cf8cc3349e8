"""Padding efficiency: padded tokens ÷ real tokens over the executed batches.

bucket and fixed pad each request on its own (in ``<task>_tokenize``) before the dynamic
batcher sees it, so their ratio is exact whatever the batching: every text costs its bucket
length (bucket) or ``max_length`` (fixed). fused pads inside each executed batch, per bucket
group, to the group's longest row, so its ratio depends on which texts share a batch; it is
computed by replaying the workload in arrival order cut into batches whose sizes follow the
batch-size distribution Triton reported for the run.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence


def bucket_for(length: int, buckets: Sequence[int]) -> int:
    return next((b for b in buckets if length <= b), buckets[-1])


def batches(n: int, sizes: Mapping[int, int] | None, seed: int = 0) -> list[range]:
    """Cut n arrivals into consecutive batches with sizes drawn from ``sizes`` (size ->
    executions); all size 1 when no distribution is known."""
    if not sizes:
        return [range(i, i + 1) for i in range(n)]
    rng = random.Random(seed)
    population, weights = list(sizes), list(sizes.values())
    out, start = [], 0
    while start < n:
        size = rng.choices(population, weights)[0]
        out.append(range(start, min(start + size, n)))
        start += size
    return out


def ratio(
    lengths: Sequence[int],
    strategy: str,
    buckets: Sequence[int],
    max_length: int,
    batch_sizes: Mapping[int, int] | None = None,
) -> float:
    """padded ÷ real tokens for ``strategy`` (bucket, fixed, fused, sorted)."""
    real = sum(lengths)
    if not real:
        return float("nan")
    if strategy == "fixed":
        return max_length * len(lengths) / real
    if strategy == "bucket":
        return sum(bucket_for(n, buckets) for n in lengths) / real
    if strategy == "fused":
        return _fused(lengths, buckets, batch_sizes) / real
    if strategy == "sorted":  # the ceiling: length-sorted batches padded to their longest
        return _sorted(lengths, max(batch_sizes or {8: 1})) / real
    raise ValueError(f"unknown strategy {strategy!r}")


def _fused(lengths: Sequence[int], buckets: Sequence[int], sizes: Mapping[int, int] | None) -> int:
    padded = 0
    for batch in batches(len(lengths), sizes):
        groups: dict[int, list[int]] = {}
        for i in batch:
            groups.setdefault(bucket_for(lengths[i], buckets), []).append(lengths[i])
        padded += sum(max(g) * len(g) for g in groups.values())
    return padded


def _sorted(lengths: Sequence[int], batch: int) -> int:
    ordered = sorted(lengths)
    return sum(
        max(ordered[i : i + batch]) * len(ordered[i : i + batch])
        for i in range(0, len(ordered), batch)
    )

"""The three splits as the trainer sees them: texts and class ids, balanced by source
group, limited for quick runs, checked before any weights load."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from textgate.errors import TrainError
from textgate.train.options import TrainOptions


class Part(NamedTuple):
    """One split as the trainer uses it: texts and class ids, and for mail each row's
    structure symbols and source group (the combiner's inputs and its cross-fit folds)."""

    texts: list[str]
    ids: list[int]
    symbols: tuple[tuple[str, ...], ...] = ()
    groups: tuple[str, ...] = ()


class Parts(NamedTuple):
    train: Part
    validation: Part
    test: Part


def splits_of(data: Any) -> tuple[Any, str, str]:
    """(splits, data hash, source) from a Table or a Splits."""
    if hasattr(data, "train"):
        hashes = [getattr(data, k).data_hash() for k in Parts._fields]
        digest = hashes[0] if len(set(hashes)) == 1 else _combine(hashes)
        return data, digest, str(data.train.source)
    from textgate import data as data_mod

    return data_mod.split(data), data.data_hash(), str(data.source)


def _combine(hashes: Sequence[str]) -> str:
    import hashlib

    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()


def parts_of(splits: Any, opts: TrainOptions) -> Parts:
    tables = [getattr(splits, k) for k in Parts._fields]
    if opts.per_group and tables[0].groups:
        tables[0] = balance_groups(tables[0], opts.per_group)
    full = [
        Part(
            list(t.texts), list(t.label_ids()), getattr(t, "symbols", ()), getattr(t, "groups", ())
        )
        for t in tables
    ]
    total = sum(len(p.texts) for p in full)
    if opts.limit is None or opts.limit >= total:
        return Parts(*full)
    # Keep each split's share of the rows; a seeded sample, not the head of the file
    # (files are often sorted by label).
    rng = np.random.default_rng(opts.seed)
    limited = []
    for part in full:
        n = max(1, round(len(part.texts) * opts.limit / total))
        keep = np.sort(rng.permutation(len(part.texts))[:n])
        limited.append(
            Part(
                [part.texts[i] for i in keep],
                [part.ids[i] for i in keep],
                tuple(part.symbols[i] for i in keep) if part.symbols else (),
                tuple(part.groups[i] for i in keep) if part.groups else (),
            )
        )
    return Parts(*limited)


def balance_groups(table: Any, per_group: int) -> Any:
    """At most ``per_group`` rows of each source group, chosen by content hash (stable);
    folded feedback groups stay whole (``feedback.fold`` capped and weighted them: capping
    again by hash would drop some corrections' every copy and keep others')."""
    from textgate import data as data_mod
    from textgate.data.table import FEEDBACK_PREFIX

    by_group: dict[str, list[int]] = {}
    for i, group in enumerate(table.groups):
        by_group.setdefault(group, []).append(i)
    keep: list[int] = []
    for group, rows in by_group.items():
        if group.startswith(FEEDBACK_PREFIX):
            keep += rows
            continue
        keep += sorted(rows, key=lambda i: data_mod.text_hash(table.texts[i]))[:per_group]
    return table.subset(sorted(keep))


def check_parts(parts: Parts, labels: Sequence[str]) -> None:
    if len(labels) < 2:
        raise TrainError(f"need at least two labels to train a classifier, got {list(labels)}")
    for name in Parts._fields:
        if not getattr(parts, name).texts:
            raise TrainError(
                f"the {name} split is empty", hint="use more data (or a larger --limit)"
            )
    present = set(parts.train.ids)
    if len(present) < 2:
        raise TrainError(
            f"the train split holds one class only ({labels[next(iter(present))]})",
            hint="every label needs examples in the data",
        )

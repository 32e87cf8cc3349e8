"""How the combiner's cross-fit folds are made (textgate.train.stacking)."""

from __future__ import annotations

import numpy as np

from textgate.train.dataset import Part
from textgate.train.stacking import _fold_keys


def _part(groups: list[str], labels: list[int]) -> Part:
    texts = [f"message {i} of {g}" for i, g in enumerate(groups)]
    return Part(texts, labels, tuple(() for _ in groups), tuple(groups))


def test_source_groups_make_the_folds_when_each_complement_holds_both_classes() -> None:
    groups = ["ham/a"] * 4 + ["ham/b"] * 4 + ["spam/c"] * 4 + ["spam/d"] * 4
    ids = [0] * 8 + [1] * 8
    part = _part(groups, ids)
    keys, by = _fold_keys(part, ["ham" if i == 0 else "spam" for i in ids], np.array(ids), 2, 42)
    assert by == "groups" and keys == groups


def test_two_one_class_folders_fold_by_rows_instead() -> None:
    # a user's ham/ and spam/ folders: leaving either out leaves one class to train on
    groups = ["ham"] * 20 + ["spam"] * 20
    ids = [0] * 20 + [1] * 20
    part = _part(groups, ids)
    keys, by = _fold_keys(part, ["ham" if i == 0 else "spam" for i in ids], np.array(ids), 2, 42)
    assert by == "rows" and len(set(keys)) > 2
    assert all(k.startswith("rows-") for k in keys)

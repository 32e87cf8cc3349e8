"""The cascade's bounds as a bundle records them: checked, and measured on the test split."""

from __future__ import annotations

import numpy as np
import pytest

from textgate.errors import ConfigError, ExportError
from textgate.export import cascade


class Lexical:
    """An n-gram half whose log-odds are given per text."""

    negative = 0

    def __init__(self, z: dict[str, float]) -> None:
        self.z = z

    def scores(self, texts: list[str]) -> np.ndarray:
        return np.array([self.z[t] for t in texts])


def test_the_record_counts_what_the_cheap_stage_would_answer_and_where_it_disagrees() -> None:
    lexical = Lexical({"sure ham": -5.0, "sure but wrong": -4.0, "unsure": 0.0, "spam": 3.0})
    full = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5], [0.1, 0.9]])  # the joined model
    texts = ["sure ham", "sure but wrong", "unsure", "spam"]
    out = cascade.record({"allow_at_or_below": 0.05, "source": "s"}, lexical, ("ham", "spam"),
                         texts, full)  # fmt: skip
    assert out["allow_at_or_below"] == 0.05 and out["quarantine_at_or_above"] is None
    assert out["source"] == "s"
    assert out["test"] == {"n": 4, "answered_cheaply": 0.5, "labels_changed": 0.25}


def test_bounds_that_cannot_work_are_refused_before_the_export() -> None:
    with pytest.raises(ConfigError, match="allow_at_or_below"):
        cascade.bounds({"allow_at_or_below": 1.0}, 2)
    with pytest.raises(ConfigError, match="quarantine_at_or_above"):
        cascade.bounds({"allow_at_or_below": 0.2, "quarantine_at_or_above": 0.1}, 2)
    with pytest.raises(ConfigError, match="3 labels"):
        cascade.bounds({"allow_at_or_below": 0.1, "quarantine_at_or_above": 0.99}, 3)
    assert cascade.bounds({"allow_at_or_below": 0.1, "quarantine_at_or_above": 0.99}, 2) == (
        0.1,
        0.99,
    )
    with pytest.raises(ExportError, match="n-gram half"):
        cascade.record({"allow_at_or_below": 0.1}, None, ("ham", "spam"), [], np.zeros((0, 2)))

"""The parity verdict on synthetic probabilities: tolerance, arg-max, ties, completeness."""

from __future__ import annotations

import numpy as np
import pytest

from textgate.export.parity import ATOL, judge


def _probs(n: int, seed: int = 0, k: int = 2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 3
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_identical_outputs_pass() -> None:
    ref = _probs(500)
    report = judge(ref, ref.copy())
    assert report["passed"] and report["mismatches"] == []
    assert report["max_abs_diff"] == 0.0 and report["argmax_agreement"] == 1.0
    assert report["n"] == 500


def test_noise_below_tolerance_passes_and_is_measured() -> None:
    ref = _probs(500)
    got = ref + np.full_like(ref, ATOL / 2) * np.array([1, -1])
    report = judge(ref, got)
    assert report["passed"]
    assert report["max_abs_diff"] == pytest.approx(ATOL / 2)


def test_every_row_over_tolerance_is_collected() -> None:
    ref = _probs(500)
    got = ref.copy()
    bad = [3, 77, 499]
    got[bad] += np.array([2e-4, -2e-4])
    report = judge(ref, got)
    assert not report["passed"]
    assert len(report["mismatches"]) == len(bad)
    for i, line in zip(bad, report["mismatches"], strict=True):
        assert line.startswith(f"text #{i}:")


def test_argmax_flip_fails_even_when_counted_once() -> None:
    ref = np.array([[0.6, 0.4], [0.2, 0.8]])
    got = np.array([[0.4, 0.6], [0.2, 0.8]])
    report = judge(ref, got)
    assert report["argmax_agreement"] == 0.5
    assert report["mismatches"] == ["text #0: |Δp| = 0.2, argmax 0 -> 1"]


def test_tie_within_tolerance_is_not_a_flip() -> None:
    # Reference margin 2e-5 < ATOL: the class is undetermined at the promised precision.
    ref = np.array([[0.50001, 0.49999], [0.9, 0.1]])
    got = np.array([[0.49999, 0.50001], [0.9, 0.1]])
    report = judge(ref, got)
    assert report["passed"]
    assert report["argmax_ties"] == 1 and report["argmax_agreement"] == 1.0


def test_multiclass_and_shape_mismatch() -> None:
    ref = _probs(10, k=4)
    got = ref[:, [1, 0, 2, 3]]
    report = judge(ref, got)
    assert not report["passed"] and report["argmax_agreement"] < 1.0
    with pytest.raises(ValueError, match="shape"):
        judge(ref, ref[:5])


def test_non_finite_output_fails_even_when_its_argmax_agrees() -> None:
    # NaN compares false with every tolerance, and numpy's argmax of a NaN row is 0; an
    # overflowing graph must still fail the gate, not slip through as "within tolerance".
    ref = _probs(500)
    got = ref.copy()
    row = int(np.flatnonzero(ref.argmax(axis=1) == 0)[0])
    got[row] = np.nan
    got[row + 1] = [np.inf, 0.0]
    report = judge(ref, got)
    assert not report["passed"]
    assert [m.split(":")[0] for m in report["mismatches"]] == [f"text #{row}", f"text #{row + 1}"]
    assert all("not finite" in m for m in report["mismatches"])

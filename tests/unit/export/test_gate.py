"""The variant gate and default-variant choice, on synthetic numbers and probabilities."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from textgate.export import _default_variant
from textgate.export.variants import EvalSet, Gate, evaluate

GATE = Gate(max_f1_drop=0.005, min_agreement=0.995)


@pytest.mark.parametrize(
    ("agreement", "f1_delta", "status", "reasons"),
    [
        (1.0, 0.0, "accepted", []),
        (0.995, -0.005, "accepted", []),  # both limits are inclusive
        (0.999, 0.01, "accepted", []),  # a variant may be better than fp32
        (0.99, 0.0, "rejected", ["agreement"]),
        (1.0, -0.006, "rejected", ["F1 drops"]),
        (0.9, -0.2, "rejected", ["agreement", "F1 drops"]),
        (0.999, None, "accepted", []),  # no labels: agreement alone decides
        (0.5, None, "rejected", ["agreement"]),
    ],
)
def test_gate(agreement: float, f1_delta: float | None, status: str, reasons: list[str]) -> None:
    got, reason = GATE.judge(agreement, f1_delta)
    assert got == status
    if not reasons:
        assert reason is None
    else:
        assert reason is not None
        for word in reasons:
            assert word in reason


def test_gate_limits_are_parameters() -> None:
    assert Gate(max_f1_drop=0.05).judge(1.0, -0.04)[0] == "accepted"
    assert Gate(min_agreement=0.9).judge(0.95, None)[0] == "accepted"


def test_default_variant_never_names_a_rejected_one() -> None:
    table = {
        "fp32": {"status": "accepted"},
        "fp32-opt": {"status": "accepted"},
        "fp16": {"status": "unverified"},
        "int8": {"status": "rejected"},
    }
    assert _default_variant(table) == {"cpu": "fp32-opt", "gpu": "fp32-opt"}
    table["int8"]["status"] = table["fp16"]["status"] = "accepted"
    assert _default_variant(table) == {"cpu": "int8", "gpu": "fp16"}
    assert _default_variant({"fp32": {"status": "accepted"}}) == {"cpu": "fp32", "gpu": "fp32"}


class _FakeSession:
    """Stands in for ORT: returns fixed logits so evaluate()'s arithmetic is checkable."""

    def __init__(self, logits: np.ndarray) -> None:
        self.logits = logits
        self.row = 0

    def run(self, _names: list[str], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        n = len(feed["input_ids"])
        if self.row >= len(self.logits):  # the latency runs come after the predictions
            return [np.zeros((n, 2), dtype=np.float32)]
        out = self.logits[self.row : self.row + n]
        self.row += n
        return [out]


def _reference(seed: int, n: int = 40) -> tuple[np.ndarray, tuple[int, ...]]:
    """fp32 logits for ``n`` texts and labels they predict perfectly."""
    logits = np.random.default_rng(seed).normal(size=(n, 2)).astype(np.float32)
    return logits, tuple(int(x) for x in logits.argmax(axis=1))


def _eval_set(labels: tuple[int, ...]) -> EvalSet:
    """Token ids for ``len(labels)`` texts in two batches (the fake session ignores them)."""
    n = len(labels)
    ids = np.arange(n * 4, dtype=np.int64).reshape(n, 4) % 50 + 5
    return EvalSet(
        batches=[(ids[:32], np.ones_like(ids[:32])), (ids[32:], np.ones_like(ids[32:]))],
        labels=labels,
        label_names=("ham", "spam"),
        max_length=16,
        source="test split",
    )


def test_evaluate_rejects_a_variant_that_flips_predictions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from textgate.export import inference

    ref_logits, labels = _reference(seed=1)
    flipped = ref_logits.copy()
    flipped[:4] = flipped[:4, ::-1]  # 4 of 40 disagree: agreement 0.9
    monkeypatch.setattr(inference, "session", lambda _path: _FakeSession(flipped))
    data = _eval_set(labels)
    reference = inference.softmax(ref_logits)
    row, probs = evaluate(Path("model.int8.onnx"), data, reference, GATE)
    assert row["agreement"] == pytest.approx(0.9)
    assert row["accuracy_delta"] == pytest.approx(-0.1)
    assert row["f1_delta"] < -0.005
    assert row["status"] == "rejected"
    assert "agreement" in row["reason"] and "F1" in row["reason"]
    assert row["max_abs_diff"] == pytest.approx(float(np.abs(probs - reference).max()))
    assert set(row["latency_ms"]) == {"batch1", "batch32", "seq_len", "threads"}


def test_evaluate_reports_a_variant_ort_cannot_run_as_unverified(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from textgate.export import inference

    def boom(_path: Path) -> None:
        raise RuntimeError("NOT_IMPLEMENTED : Could not find an implementation for Foo(1)")

    monkeypatch.setattr(inference, "session", boom)
    data = EvalSet(batches=[], labels=(), label_names=("a", "b"), max_length=8, source="x")
    row, _ = evaluate(Path("model.fp16.onnx"), data, np.zeros((0, 2)), GATE)
    assert row["status"] == "unverified"
    assert "needs a GPU" in row["reason"] and "NOT_IMPLEMENTED" in row["reason"]


def test_evaluate_rejects_a_variant_with_non_finite_outputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from textgate.export import inference

    ref_logits, labels = _reference(seed=2)
    overflowed = ref_logits.copy()
    row = labels.index(0)  # argmax of a NaN row is 0: it "agrees" with a class-0 reference
    overflowed[row] = np.nan
    monkeypatch.setattr(inference, "session", lambda _path: _FakeSession(overflowed))
    data = _eval_set(labels)
    row_report, _ = evaluate(Path("model.fp16.onnx"), data, inference.softmax(ref_logits), GATE)
    assert row_report["status"] == "rejected"
    assert "1 of 40 outputs are not finite" in row_report["reason"]

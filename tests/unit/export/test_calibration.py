"""Temperature scaling: recovers a known temperature, lowers ECE, keeps every arg-max."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from textgate.export import calibration


def _overconfident(n: int, t_true: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Labels drawn from softmax(z); the model reports softmax(z * t_true): overconfident."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, size=(n, 3))
    p_true = calibration.scaled(z, 1.0)
    y = np.array([rng.choice(3, p=row) for row in p_true])
    return calibration.scaled(z * t_true, 1.0), y


def test_fit_recovers_the_temperature() -> None:
    probs, y = _overconfident(6000, 3.0)
    t = calibration.fit_temperature(probs, y)
    assert 2.6 < t < 3.4


def test_calibration_lowers_ece_and_keeps_argmax() -> None:
    probs, y = _overconfident(4000, 4.0, seed=1)
    t = calibration.fit_temperature(probs, y)
    after = calibration.apply(probs, t)
    before_ece = calibration.ece(probs.max(1), probs.argmax(1) == y)
    after_ece = calibration.ece(after.max(1), after.argmax(1) == y)
    assert after_ece < before_ece / 2
    assert (after.argmax(1) == probs.argmax(1)).all()


def test_a_calibrated_model_keeps_temperature_near_one() -> None:
    probs, y = _overconfident(6000, 1.0, seed=2)
    assert 0.85 < calibration.fit_temperature(probs, y) < 1.15


def test_an_underconfident_fit_is_served_at_one_never_sharpened() -> None:
    # the model reports softmax(z / 2): under-confident on its own split, so the fit sharpens
    probs, y = _overconfident(6000, 0.5, seed=3)
    fitted = calibration.fit_temperature(probs, y)
    assert fitted < 0.7
    assert calibration.served(fitted) == calibration.MIN_TEMPERATURE == 1.0
    over, y_over = _overconfident(6000, 3.0, seed=4)
    softer = calibration.fit_temperature(over, y_over)
    assert calibration.served(softer) == softer > 2.5  # softening is served as fitted


def test_reliability_bins_and_plot(tmp_path: Path) -> None:
    score = np.linspace(0, 1, 200)
    truth = score > 0.5
    rows = calibration.reliability(score, truth)
    assert sum(r["n"] for r in rows) == 200
    assert rows[0]["positive_rate"] == 0.0 and rows[-1]["positive_rate"] == 1.0
    calibration.plot_reliability(rows, rows, tmp_path / "r.png", "t")
    assert (tmp_path / "r.png").stat().st_size > 1000

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from scipy.special import expit

from textgate.train import combiner as fitting

SYMBOLS = ("LIST_ID", "NO_DKIM", "DKIM_PASS", "RARE")
DIRECTIONS = {"LIST_ID": -1, "NO_DKIM": 1, "DKIM_PASS": -1, "RARE": 1}
TRUE = {"intercept": -0.5, "content": 1.0, "lexical": 0.6, "LIST_ID": -1.5, "NO_DKIM": 1.2}


Data = tuple[np.ndarray, np.ndarray, list[list[str]], np.ndarray]


def _synthetic(n: int = 6000, seed: int = 0) -> Data:
    """Rows drawn from a known logistic model; DKIM_PASS fires mostly on spam (the confound
    a sign bound must refuse) and RARE on three rows."""
    rng = np.random.default_rng(seed)
    content = rng.normal(0.0, 2.0, n)
    lexical = rng.normal(0.0, 2.0, n)
    list_id = rng.random(n) < 0.3
    no_dkim = rng.random(n) < 0.3
    t = (
        TRUE["intercept"]
        + TRUE["content"] * content
        + TRUE["lexical"] * lexical
        + TRUE["LIST_ID"] * list_id
        + TRUE["NO_DKIM"] * no_dkim
    )
    y = (rng.random(n) < expit(t)).astype(np.float64)
    dkim_pass = rng.random(n) < np.where(y == 1, 0.6, 0.05)  # "passing DKIM means spam"
    rare = np.zeros(n, dtype=bool)
    rare[np.flatnonzero(y == 1)[:3]] = True
    fired = [
        [s for s, on in zip(SYMBOLS, row, strict=True) if on]
        for row in zip(list_id, no_dkim, dkim_pass, rare, strict=True)
    ]
    return content, lexical, fired, y


def _fit(**kw: object) -> fitting.comb.Combiner:
    content, lexical, fired, y = _synthetic()
    options = {"symbols": SYMBOLS, "directions": DIRECTIONS, "negative": 0, **kw}
    return fitting.fit(content, lexical, fired, y, **options)  # type: ignore[arg-type]


def _weights(c: fitting.comb.Combiner) -> dict[str, float]:
    return dict(zip(c.features, c.weights.tolist(), strict=True))


def test_fit_recovers_the_sign_and_size_of_the_weights() -> None:
    w = _weights(_fit(balance=False, l2=0.0))
    assert w["content"] == pytest.approx(TRUE["content"], abs=0.15)
    assert w["lexical"] == pytest.approx(TRUE["lexical"], abs=0.15)
    assert w["LIST_ID"] == pytest.approx(TRUE["LIST_ID"], abs=0.3)
    assert w["NO_DKIM"] == pytest.approx(TRUE["NO_DKIM"], abs=0.3)


def test_a_symbol_against_its_direction_gets_exactly_zero() -> None:
    for balance in (True, False):
        w = _weights(_fit(balance=balance))
        assert w["DKIM_PASS"] == 0.0
    # the control: allowed spam-ward, the confound takes a large weight
    assert _weights(_fit(directions={**DIRECTIONS, "DKIM_PASS": 1}))["DKIM_PASS"] > 1.0


def test_min_support_zeroes_rare_symbols_but_keeps_them_listed() -> None:
    c = _fit(min_support=5)
    assert "RARE" in c.features and _weights(c)["RARE"] == 0.0
    assert _weights(_fit(min_support=3))["RARE"] > 0.0  # three rows, all spam: now it counts


def test_fitted_probabilities_are_calibrated() -> None:
    content, lexical, fired, y = _synthetic(seed=1)
    c = fitting.fit(
        content,
        lexical,
        fired,
        y,
        symbols=SYMBOLS,
        directions=DIRECTIONS,
        negative=0,
        balance=False,
    )
    p = expit(c.z(content, lexical, fired))
    assert abs(p.mean() - y.mean()) < 0.02
    for low, high in ((0.0, 0.3), (0.3, 0.7), (0.7, 1.0)):  # and within bands of p
        band = (p >= low) & (p < high)
        assert abs(p[band].mean() - y[band].mean()) < 0.05


def test_balance_moves_the_intercept_not_the_signs() -> None:
    balanced, plain = _weights(_fit(balance=True)), _weights(_fit(balance=False))
    for name in ("content", "lexical", "NO_DKIM"):
        assert balanced[name] > 0 and plain[name] > 0
    assert balanced["LIST_ID"] < 0 and plain["LIST_ID"] < 0


def test_fit_is_deterministic() -> None:
    a, b = _fit(), _fit()
    assert a.to_dict() == b.to_dict()


def test_fit_refuses_a_symbol_without_direction_and_one_class() -> None:
    content, lexical, fired, y = _synthetic(n=50)
    with pytest.raises(ValueError, match="direction"):
        fitting.fit(content, lexical, fired, y, symbols=SYMBOLS, directions={}, negative=0)
    with pytest.raises(ValueError, match="both classes"):
        fitting.fit(
            content,
            lexical,
            fired,
            np.ones(50),
            symbols=SYMBOLS,
            directions=DIRECTIONS,
            negative=0,
        )


def _corpus() -> tuple[list[str], list[str]]:
    sizes = {"enron": 40, "spamassassin": 25, "lures": 12, "nazario": 9, "lists": 7, "a": 3, "b": 2}
    groups, labels = [], []
    for i, (g, size) in enumerate(sizes.items()):
        for r in range(size):
            groups.append(g)
            labels.append("ham" if (i + r) % 3 else "spam")
    return groups, labels


def test_crossfit_folds_are_deterministic_complete_and_non_empty() -> None:
    groups, labels = _corpus()
    folds = fitting.crossfit_folds(groups, labels, k=3, seed=7)
    assert folds == fitting.crossfit_folds(groups, labels, k=3, seed=7)
    assert set(folds) == set(groups)  # a dict: each group in exactly one fold
    assert set(folds.values()) == {0, 1, 2}
    for j in range(3):
        assert sum(folds[g] == j for g in groups) > 0


def test_crossfit_folds_balance_the_label_mix() -> None:
    groups = [f"g{i}" for i in range(12) for _ in range(5)]
    labels = ["ham" if i % 2 else "spam" for i in range(12) for _ in range(5)]
    folds = fitting.crossfit_folds(groups, labels, k=3, seed=0)
    for j in range(3):
        mine = [lab for g, lab in zip(groups, labels, strict=True) if folds[g] == j]
        assert mine.count("ham") == mine.count("spam") == 10


def test_crossfit_folds_need_as_many_groups_as_folds() -> None:
    with pytest.raises(ValueError):
        fitting.crossfit_folds(["a", "a", "b"], ["ham", "spam", "ham"], k=3, seed=0)


def test_crossfit_predict_never_trains_on_a_rows_own_group() -> None:
    groups, labels = _corpus()
    folds = fitting.crossfit_folds(groups, labels, k=3, seed=1)
    calls: list[tuple[set[str], set[str]]] = []

    def fit_predict(train_idx: np.ndarray, predict_idx: np.ndarray) -> np.ndarray:
        trained = {groups[i] for i in train_idx}
        predicted = {groups[i] for i in predict_idx}
        assert not trained & predicted
        assert len(train_idx) + len(predict_idx) == len(groups)
        calls.append((trained, predicted))
        return predict_idx.astype(np.float64) * 10.0  # each row's prediction names the row

    out = fitting.crossfit_predict(groups, folds, fit_predict)
    assert out.dtype == np.float64
    assert out == pytest.approx(np.arange(len(groups)) * 10.0)  # in row order, every row once
    assert len(calls) == 3
    for i, g in enumerate(groups):  # the one call that predicted row i never trained on g
        (trained,) = [t for t, p in calls if g in p]
        assert g not in trained, i


def test_crossfit_predict_checks_its_inputs() -> None:
    def constant(train_idx: np.ndarray, predict_idx: np.ndarray) -> np.ndarray:
        return np.zeros(len(predict_idx))

    with pytest.raises(ValueError, match="without a fold"):
        fitting.crossfit_predict(["a", "b"], {"a": 0}, constant)
    with pytest.raises(ValueError, match="two folds"):
        fitting.crossfit_predict(["a", "b"], {"a": 0, "b": 0}, constant)

    def short(train_idx: np.ndarray, predict_idx: np.ndarray) -> np.ndarray:
        return np.zeros(1)

    groups: Sequence[str] = ["a", "a", "b"]
    with pytest.raises(ValueError, match="predictions"):
        fitting.crossfit_predict(groups, {"a": 0, "b": 1}, short)


def test_fit_by_groups_shrinks_a_symbol_only_one_source_makes_decisive() -> None:
    """LOCAL fires on every spam of group 'a' and nowhere else: a source's quirk, where
    LIST_ID behaves alike in every group. Held-out groups prefer a stronger L2 than the
    weakest, which shrinks LOCAL's weight."""
    content, lexical, fired, y = _synthetic(n=4000, seed=1)
    groups = [("a", "b", "c", "d")[i % 4] for i in range(len(y))]
    fired = [
        [*row, "LOCAL"] if g == "a" and y[i] == 1 else list(row)
        for i, (row, g) in enumerate(zip(fired, groups, strict=True))
    ]
    symbols = (*SYMBOLS, "LOCAL")
    directions = {**DIRECTIONS, "LOCAL": 1}
    model, losses = fitting.fit_by_groups(
        content, lexical, fired, y, groups, symbols=symbols, directions=directions, negative=0
    )
    assert set(losses) == {repr(v) for v in fitting.L2_GRID}
    chosen = min(fitting.L2_GRID, key=lambda v: losses[repr(v)])
    again = fitting.fit(
        content, lexical, fired, y, symbols=symbols, directions=directions, negative=0, l2=chosen
    )
    np.testing.assert_allclose(model.weights, again.weights)  # refit on every row at the winner
    weakest = fitting.fit(
        content,
        lexical,
        fired,
        y,
        symbols=symbols,
        directions=directions,
        negative=0,
        l2=min(fitting.L2_GRID),
    )
    local = symbols.index("LOCAL") + 2
    assert chosen > min(fitting.L2_GRID)
    assert model.weights[local] < weakest.weights[local]

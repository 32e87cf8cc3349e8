from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from textgate.signals import combiner
from textgate.signals.combiner import Combiner

HAM = 0  # labels: ham, spam, phish


def _combiner() -> Combiner:
    return Combiner(
        features=("content", "lexical", "LIST_ID", "NO_DKIM", "BULK"),
        weights=(0.8, 0.5, -1.5, 0.7, 0.0),
        intercept=-0.25,
        negative=HAM,
        directions={"LIST_ID": -1, "NO_DKIM": 1, "BULK": 1},
    )


def test_z_is_the_hand_computed_sum() -> None:
    c = _combiner()
    z = c.z(
        np.array([2.0, -1.0, 0.0]),
        np.array([1.0, 3.0, 0.0]),
        [["LIST_ID"], ["NO_DKIM", "BULK"], []],
    )
    expected = [
        -0.25 + 0.8 * 2.0 + 0.5 * 1.0 - 1.5,
        -0.25 + 0.8 * -1.0 + 0.5 * 3.0 + 0.7 + 0.0,
        -0.25,
    ]
    assert z == pytest.approx(expected)


def test_a_symbol_counts_once_and_unknown_symbols_are_ignored() -> None:
    c = _combiner()
    plain = c.z(np.array([1.0]), np.array([1.0]), [["NO_DKIM"]])
    noisy = c.z(np.array([1.0]), np.array([1.0]), [["NO_DKIM", "NO_DKIM", "FROM_THE_FUTURE"]])
    assert noisy == pytest.approx(plain)


def test_contributions_sum_to_z_and_skip_zero_terms() -> None:
    c = _combiner()
    parts = c.contributions(2.0, 0.0, ["LIST_ID", "BULK", "FROM_THE_FUTURE"])
    assert set(parts) == {"intercept", "content", "LIST_ID"}  # lexical is 0, BULK weighs 0
    assert parts["LIST_ID"] == pytest.approx(-1.5)
    z = c.z(np.array([2.0]), np.array([0.0]), [["LIST_ID", "BULK"]])[0]
    assert sum(parts.values()) == pytest.approx(z)


def test_a_string_is_not_a_row_of_symbols() -> None:
    with pytest.raises(TypeError):
        _combiner().z(np.array([0.0]), np.array([0.0]), ["LIST_ID"])


def test_not_negative_log_odds_of_logits() -> None:
    logits = np.array([[1.0, 2.0, 0.5], [800.0, 900.0, 0.0]])  # the second overflows naively
    got = combiner.not_negative_log_odds(logits, HAM)
    assert got[0] == pytest.approx(np.log(np.exp(2.0) + np.exp(0.5)) - 1.0)
    assert got[1] == pytest.approx(100.0)


def test_adjust_sets_the_log_odds_to_z_and_keeps_the_spam_phish_split() -> None:
    logits = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, -2.5], [0.0, 0.0, 0.0]])
    z = np.array([-2.0, 4.0, 0.3])
    out = _combiner().adjust(logits, z)
    assert combiner.not_negative_log_odds(out, HAM) == pytest.approx(z)
    assert out[:, 1] - out[:, 2] == pytest.approx(logits[:, 1] - logits[:, 2])
    assert logits[0, 0] == 1.0  # the input is not modified


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    c = _combiner()
    path = tmp_path / "combiner.json"
    c.save(path)
    back = Combiner.load(path)
    assert back.to_dict() == c.to_dict()
    assert json.loads(path.read_text())["format"] == combiner.FORMAT
    args = (np.array([0.3]), np.array([-0.7]), [["LIST_ID", "NO_DKIM"]])
    assert back.z(*args) == c.z(*args)  # exact: JSON keeps every bit of a float
    assert back.describe()["features"]["LIST_ID"] == -1.5


def test_load_refuses_another_format_and_mismatched_lengths(tmp_path: Path) -> None:
    d = _combiner().to_dict()
    path = tmp_path / "combiner.json"
    path.write_text(json.dumps({**d, "format": "textgate-combiner/0"}))
    with pytest.raises(ValueError, match=r"combiner\.json.*format"):
        Combiner.load(path)
    path.write_text(json.dumps({**d, "weights": d["weights"][:-1]}))
    with pytest.raises(ValueError, match=r"combiner\.json.*weights"):
        Combiner.load(path)


def test_the_first_features_are_the_two_scores() -> None:
    with pytest.raises(ValueError, match="first features"):
        Combiner(features=("lexical", "content"), weights=(1.0, 1.0), intercept=0.0, negative=0)


def test_the_join_combiner_serves_exactly_the_ngram_join_and_weighs_no_symbol() -> None:
    from textgate import ngrams, signals

    rng = np.random.default_rng(7)
    logits = rng.normal(0, 3, size=(40, 3))  # ham, spam, phish
    lexical = rng.normal(0, 2, size=40)
    names = list(signals.ORDER)
    fired = [
        list(rng.choice(names, size=int(rng.integers(0, 4)), replace=False)) for _ in range(40)
    ]
    directions = signals.DIRECTIONS
    model = combiner.join(0.5, negative=0, symbols=signals.ORDER, directions=directions)
    content = combiner.not_negative_log_odds(logits, 0)
    ours = model.adjust(logits, model.z(content, lexical, fired))
    np.testing.assert_allclose(ours, ngrams.adjust(logits, lexical, 0, 0.5), atol=1e-12)
    # every symbol is listed (explanations show it fired) and none moves the score
    assert model.symbols == tuple(signals.ORDER)
    assert not model.weights[2:].any() and model.intercept == 0.0
    row = model.contributions(1.5, -0.5, names[:3])
    assert set(row) == {"intercept", "content", "lexical"}
    with pytest.raises(ValueError, match="weight"):
        combiner.join(1.5, negative=0, symbols=(), directions={})

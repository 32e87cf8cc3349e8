"""The per-tenant naive Bayes layer: exact add/remove, isolation, weight, version."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from textgate import tenant_bayes as tb

HAM = ["the quarterly report for the board meeting", "minutes of the board meeting attached"]
SPAM = ["cheap pills buy now limited offer", "win a free prize click now offer"]


@dataclass(frozen=True)
class R:
    id: int
    task: str
    tenant: str | None
    label: str
    text: str


def rows(tenant: str | None, start: int = 1) -> list[R]:
    out = [R(start + i, "spam", tenant, "ham", t) for i, t in enumerate(HAM)]
    return out + [R(start + 10 + i, "spam", tenant, "spam", t) for i, t in enumerate(SPAM)]


def learned(rs: list[R]) -> tb.Learning:
    learning = tb.Learning(["ham"])
    learning.rebuild(rs)
    return learning


def test_remove_undoes_add_exactly() -> None:
    learning = learned(rows("a"))
    layer = learning.layer("a", "spam")
    assert layer is not None
    before, version = layer.counts.copy(), layer.version
    extra = R(99, "spam", "a", "spam", "a new offer of free pills")
    assert learning.add(extra)
    assert not learning.add(extra)  # a row is counted once
    assert layer.version != version
    assert learning.remove(extra)
    assert np.array_equal(layer.counts, before) and layer.docs == [2, 2]
    assert layer.version == version


def test_log_odds_points_the_right_way() -> None:
    learning = learned(rows("a"))
    spam = learning.signal("a", "spam", "buy cheap pills now")
    ham = learning.signal("a", "spam", "the board meeting report")
    assert spam is not None and ham is not None
    assert spam.log_odds > 0 > ham.log_odds
    assert (spam.positives, spam.negatives, spam.corrections) == (2, 2, 4)


def test_tenants_never_see_each_other() -> None:
    learning = learned(rows("a"))
    assert learning.signal("b", "spam", "buy cheap pills now") is None
    assert learning.signal(None, "spam", "buy cheap pills now") is None
    assert learning.signal("a", "sentiment", "buy cheap pills now") is None
    both = learned(rows("a") + rows(None, start=100))
    a, alone = both.layer("a", "spam"), learning.layer("a", "spam")
    assert a is not None and alone is not None
    assert np.array_equal(a.counts, alone.counts) and a.version == alone.version


def test_forgetting_the_last_row_drops_the_layer() -> None:
    learning = learned(rows("a")[:1])
    assert learning.remove(rows("a")[0])
    assert learning.layer("a", "spam") is None
    assert not learning.remove(rows("a")[0])


def test_weight_is_zero_below_the_minimum_and_grows() -> None:
    assert tb.weight(5, 4, minimum=10, ceiling=1.0) == 0.0
    assert tb.weight(20, 0, minimum=10, ceiling=1.0) == 0.0  # one class says nothing
    w10, w50, w200 = (tb.weight(n // 2, n // 2, 10, 1.0) for n in (10, 50, 200))
    assert 0 < w10 < w50 < w200 < 1.0
    assert w10 == 0.5


def test_the_signal_is_scaled_on_the_corrections_and_silent_when_unsure() -> None:
    spam = [R(i, "spam", "a", "spam", f"cheap pills offer number {i} buy now") for i in range(3)]
    ham = [
        R(10 + i, "spam", "a", "ham", f"minutes of board meeting {i} attached") for i in range(9)
    ]
    learning = learned(spam + ham)  # three times as much ham: the mix must not tilt it
    like_spam = learning.signal("a", "spam", "cheap pills offer number 7 buy now")
    like_ham = learning.signal("a", "spam", "minutes of board meeting 7 attached")
    assert like_spam is not None and like_ham is not None
    assert like_spam.log_odds > 0 > like_ham.log_odds
    assert (
        abs(like_spam.log_odds + tb.LEAN - 1) < 1.5 and abs(like_ham.log_odds + tb.LEAN + 1) < 1.5
    )
    unseen = learning.signal("a", "spam", "\u4e2d\u6587")  # no bucket in common
    assert unseen is not None and unseen.log_odds == 0.0
    same = learned(
        [R(1, "spam", "a", "spam", "same words"), R(2, "spam", "a", "ham", "same words")]
    )
    assert (s := same.signal("a", "spam", "same words")) is not None and s.log_odds == 0.0

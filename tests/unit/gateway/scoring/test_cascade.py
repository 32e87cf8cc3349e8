"""The cascade takes the cheap path exactly when the stored bounds and the tenant's policy
say so (fake scores; the real-Triton check is tests/integration/test_cascade.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from textgate.config import PolicyConfig, TaskPolicyConfig
from textgate.gateway.scoring import cascade
from textgate.gateway.scoring.routing import Route, _cheap

LABELS = ("ham", "spam", "phish")


def _route(
    allow: float | None = 0.1, high: float | None = None, labels: tuple[str, ...] = LABELS
) -> Route:
    route = Route(task="spam", model="spam", labels=labels, version="1", variant="int8",
                  max_batch_size=8)  # fmt: skip
    if allow is None:
        return route
    return dataclasses.replace(route, cheap="spam_cheap", cheap_allow=allow,
                               cheap_quarantine=high, cheap_negative="ham")  # fmt: skip


def _rows(*p_not_ham: float, k: int = 3) -> np.ndarray:
    """The cheap model's rows: ham 1 - p, the rest p shared evenly."""
    p = np.array(p_not_ham)
    rows = np.repeat((p / (k - 1))[:, None], k, axis=1)
    rows[:, 0] = 1 - p
    return rows


def _spam_rule(**kw: object) -> TaskPolicyConfig:
    return dataclasses.replace(PolicyConfig().for_task("spam"), **kw)  # type: ignore[arg-type]


def test_items_at_or_below_the_allow_bound_take_the_cheap_path_and_the_rest_the_full() -> None:
    b = cascade.bounds(_route(allow=0.1), _spam_rule())
    assert b is not None
    found = cascade.decide(_route(), b, [_rows(0.02), _rows(0.1), _rows(0.1000001), _rows(0.7)])
    assert [s is not None for s in found] == [True, True, False, False]
    cheap = found[0]
    assert cheap is not None and cheap.path == "cheap" and cheap.label == "ham"
    assert cheap.variant == "ngrams" and cheap.probs[0] == pytest.approx(0.98)


def test_an_item_is_as_sure_as_its_least_sure_piece() -> None:
    b = cascade.bounds(_route(), _spam_rule())
    assert b is not None
    one_unsure = cascade.decide(_route(), b, [_rows(0.01, 0.2)])
    all_sure = cascade.decide(_route(), b, [_rows(0.01, 0.05)])
    assert one_unsure == [None]
    assert all_sure[0] is not None and all_sure[0].probs[0] == pytest.approx(0.95)  # the worst


def test_the_tenants_policy_can_only_make_the_bound_stricter() -> None:
    route = _route(allow=0.3)
    assert cascade.bounds(route, _spam_rule(cascade=False)) is None  # "read every message"
    strict = cascade.bounds(route, _spam_rule(cascade_allow_at_or_below=0.01))
    assert strict is not None and strict.allow == 0.01
    loose = cascade.bounds(route, _spam_rule(cascade_allow_at_or_below=0.9))
    assert loose is not None and loose.allow == 0.3  # never above the bundle's
    # a review threshold below the bound (here the phish rule's 0.5 is above it; a tenant's
    # review_at 0.2 is not): no split of p among spam and phish may reach it
    low = cascade.bounds(route, _spam_rule(review_at=0.2))
    assert low is not None and low.allow < 0.2
    assert cascade.decide(route, low, [_rows(0.25)]) == [None]  # within the bundle's 0.3


def test_no_cascade_without_the_cheap_model_or_for_a_policy_it_does_not_decide() -> None:
    assert cascade.bounds(_route(allow=None), _spam_rule()) is None
    assert cascade.bounds(_route(), _spam_rule(negative_label=None)) is None
    label_kind = _spam_rule(kind="label", negative_label=None)
    assert cascade.bounds(_route(), label_kind) is None
    other = dataclasses.replace(_route(), cheap_negative="spam")  # n-grams against another label
    assert cascade.bounds(other, _spam_rule()) is None


def test_the_quarantine_side_answers_only_at_or_above_both_bounds() -> None:
    route = _route(allow=0.05, high=0.97, labels=("ham", "spam"))
    b = cascade.bounds(route, _spam_rule(label_rules=()))
    assert b is not None and b.quarantine == 0.97
    found = cascade.decide(route, b, [_rows(0.99, k=2), _rows(0.96, k=2), _rows(0.99, 0.5, k=2)])
    assert found[0] is not None and found[0].label == "spam" and found[0].path == "cheap"
    assert found[1:] == [None, None]
    above_policy = cascade.bounds(route, _spam_rule(label_rules=(), quarantine_at=0.99))
    assert above_policy is not None and above_policy.quarantine == 0.99


def test_non_finite_cheap_scores_go_to_the_full_path() -> None:
    b = cascade.bounds(_route(), _spam_rule())
    assert b is not None
    assert cascade.decide(_route(), b, [_rows(float("nan")), _rows()]) == [None, None]


def test_the_router_reads_the_bounds_from_the_cheap_models_config() -> None:
    def config(**params: str) -> dict[str, object]:
        return {"parameters": {k: {"string_value": v} for k, v in params.items()}}

    ok = _cheap("spam_cheap", config(allow_at_or_below="0.12", quarantine_at_or_above="",
                                      negative_label="ham"))  # fmt: skip
    assert ok == {"cheap": "spam_cheap", "cheap_allow": 0.12, "cheap_quarantine": None,
                  "cheap_negative": "ham"}  # fmt: skip
    assert _cheap("spam_cheap", {}) == {}  # not loaded: no cascade
    assert _cheap("spam_cheap", config(allow_at_or_below="1.5")) == {}  # unusable: none
    assert _cheap("spam_cheap", config(allow_at_or_below="0.5", quarantine_at_or_above="0.4")) == {}

from __future__ import annotations

import math

import pytest

from textgate.config import Config, PolicyConfig, TaskPolicyConfig
from textgate.errors import ConfigError, InvalidInput
from textgate.gateway import rescore
from textgate.gateway.http_errors import Unauthorized
from textgate.gateway.policy import Policy, check_labels, decide

SPAM = TaskPolicyConfig(task="spam", positive_label="spam")
SENT = TaskPolicyConfig(task="sentiment", kind="label")


@pytest.mark.parametrize(
    ("p_spam", "action"),
    [(0.99, "quarantine"), (0.95, "quarantine"), (0.9, "review"), (0.85, "review"), (0.2, "allow")],
)
def test_spam_thresholds(p_spam: float, action: str) -> None:
    assert decide(SPAM, ("ham", "spam"), (1 - p_spam, p_spam)).action == action


def test_sentiment_label_or_uncertain() -> None:
    labels = ("negative", "positive")
    assert decide(SENT, labels, (0.1, 0.9)).action == "positive"
    assert decide(SENT, labels, (0.55, 0.45)).action == "uncertain"


def test_nan_goes_to_review() -> None:
    assert decide(SPAM, ("ham", "spam"), (math.nan, math.nan)).action == "review"


def test_rescore_band_around_thresholds() -> None:
    assert rescore.needs_rescore(SPAM, 0.83) and rescore.needs_rescore(SPAM, 0.97)
    assert not rescore.needs_rescore(SPAM, 0.5)
    off = TaskPolicyConfig(task="spam", rescore_band=0.0)
    assert not rescore.needs_rescore(off, 0.85)


def test_tenants_validated_at_load() -> None:
    with pytest.raises(ConfigError, match="policy.tenants"):
        Config.from_dict({"policy": {"tenants": [{"name": "a"}, {"name": "a"}]}})
    with pytest.raises(ConfigError, match=r"policy.tenants\[0\].tasks\[0\].review_at"):
        Config.from_dict(
            {"policy": {"tenants": [{"name": "a", "tasks": [{"task": "spam", "review_at": 3}]}]}}
        )
    assert check_labels(TaskPolicyConfig(task="x", positive_label="nope"), ("a", "b"))


def test_tenant_selection() -> None:
    strict = TaskPolicyConfig(task="spam", review_at=0.1, quarantine_at=0.2)
    cfg = Config.from_dict(
        {
            "policy": {
                "tenants": [
                    {"name": "keyed", "api_key": "k" * 10, "tasks": [strict.__dict__]},
                    {"name": "open"},
                ]
            }
        }
    )
    policy = Policy(cfg.policy)
    assert policy.tenant({}) is None
    assert policy.tenant({"x-api-key": "k" * 10}) == "keyed"
    assert policy.tenant({"x-tenant": "open"}) == "open"
    assert policy.rule("spam", "keyed").review_at == 0.1
    assert policy.rule("spam", "open").review_at == 0.85  # no override: the default
    assert policy.rule("other").kind == "label"
    with pytest.raises(Unauthorized):
        policy.tenant({"x-tenant": "keyed"})
    with pytest.raises(Unauthorized):
        policy.tenant({"x-api-key": "wrong-key!"})
    with pytest.raises(InvalidInput):
        policy.tenant({"x-tenant": "ghost"})
    assert PolicyConfig().for_task("spam").negative_label == "ham"  # spam + phish vs ham


# --- the e-mail model: ham / spam / phish --------------------------------------------------

EMAIL = ("ham", "spam", "phish")


def test_three_label_score_is_one_minus_ham() -> None:
    rule = PolicyConfig().for_task("spam")
    v = decide(rule, EMAIL, [0.1, 0.5, 0.4])
    assert v.score == pytest.approx(0.9)
    assert v.action == "review"  # 0.9 >= 0.85; P(phish) 0.4 < 0.5
    assert decide(rule, EMAIL, [0.02, 0.5, 0.48]).action == "quarantine"
    assert decide(rule, EMAIL, [0.9, 0.05, 0.05]).action == "allow"


def test_phish_has_its_own_stricter_thresholds() -> None:
    rule = PolicyConfig().for_task("spam")
    # spam + phish = 0.6 alone would be allowed; P(phish) 0.55 sends it to review
    assert decide(rule, EMAIL, [0.4, 0.05, 0.55]).action == "review"
    # P(phish) 0.86 quarantines although the spam score (0.9) is only at review
    assert decide(rule, EMAIL, [0.1, 0.04, 0.86]).action == "quarantine"


def test_two_label_spam_models_keep_their_meaning() -> None:
    rule = PolicyConfig().for_task("spam")
    assert decide(rule, ("ham", "spam"), [0.04, 0.96]).action == "quarantine"
    assert decide(rule, ("ham", "spam"), [0.5, 0.5]).score == pytest.approx(0.5)


def test_negative_label_must_exist_and_excludes_positive_label() -> None:
    rule = TaskPolicyConfig(task="spam", negative_label="ham")
    assert check_labels(rule, ("negative", "positive")) is not None
    with pytest.raises(ConfigError, match="negative_label"):
        TaskPolicyConfig(task="spam", negative_label="ham", positive_label="spam")

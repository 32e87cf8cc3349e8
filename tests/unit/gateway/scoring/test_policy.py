from __future__ import annotations

import math

import pytest

from textgate.config import Config, PolicyConfig, TaskPolicyConfig
from textgate.errors import ConfigError, InvalidInput, Unauthorized
from textgate.gateway.scoring import rescore
from textgate.gateway.scoring.policy import Policy, check_labels, decide

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


def test_sentiment_rescores_in_seed_001_band_by_default() -> None:
    rule = PolicyConfig().for_task("sentiment")
    assert rule.rescore_range == (0.45, 0.55) and rule.rescore_intervals() == ((0.45, 0.55),)
    assert rescore.needs_rescore(rule, 0.47) and rescore.needs_rescore(rule, 0.55)
    assert not rescore.needs_rescore(rule, 0.44) and not rescore.needs_rescore(rule, 0.6)
    assert rescore.needs_rescore(rule, math.nan)
    assert PolicyConfig().for_task("sentiment-zh").rescore_range == (0.45, 0.55)
    # spam keeps +-rescore_band around its thresholds, reported as intervals
    spam = PolicyConfig().for_task("spam").rescore_intervals()
    assert spam == ((0.8, 0.9), (0.9, 1.0))


def test_rescore_range_per_tenant_and_from_env() -> None:
    wide = {"task": "sentiment", "kind": "label", "rescore_range": [0.4, 0.6]}
    cfg = Config.from_dict({"policy": {"tenants": [{"name": "wide", "tasks": [wide]}]}})
    assert cfg.policy.for_task("sentiment", "wide").rescore_range == (0.4, 0.6)
    assert cfg.policy.for_task("sentiment").rescore_range == (0.45, 0.55)
    env = {
        "TEXTGATE_POLICY__TASKS": "[{task: sentiment, kind: label, rescore_range: [0.48, 0.52]}]"
    }
    narrow = Config.from_dict(None, env=env).policy.for_task("sentiment")
    assert narrow.rescore_range == (0.48, 0.52)


@pytest.mark.parametrize("bad", [[0.6, 0.4], [0.4], [-0.1, 0.5], [0.4, 0.5, 0.6]])
def test_rescore_range_validated_at_load(bad: list[float]) -> None:
    with pytest.raises(ConfigError, match=r"policy.tasks\[0\].rescore_range"):
        Config.from_dict(
            {"policy": {"tasks": [{"task": "s", "kind": "label", "rescore_range": bad}]}}
        )


def test_unk_note_above_validated() -> None:
    with pytest.raises(ConfigError, match="unk_note_above"):
        TaskPolicyConfig(task="s", unk_note_above=1.5)
    assert PolicyConfig().for_task("spam").unk_note_above is None  # spam pays nothing

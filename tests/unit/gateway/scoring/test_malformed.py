"""malformed_action: a message read best-effort gets at least that action (issue 9 §4)."""

from __future__ import annotations

import pytest

from textgate.config import Config, TaskPolicyConfig
from textgate.errors import ConfigError
from textgate.gateway.scoring.policy import Policy, Verdict, on_malformed

SPAM = TaskPolicyConfig(task="spam", positive_label="spam")


@pytest.mark.parametrize(
    ("action", "floor", "want"),
    [
        ("allow", "review", "review"),
        ("review", "review", "review"),
        ("quarantine", "review", "quarantine"),  # breaking the MIME never lowers a verdict
        ("allow", "quarantine", "quarantine"),
        ("allow", "allow", "allow"),
    ],
)
def test_malformed_action_is_a_floor(action: str, floor: str, want: str) -> None:
    rule = TaskPolicyConfig(task="spam", malformed_action=floor)  # type: ignore[arg-type]
    assert on_malformed(rule, Verdict(action, 0.5)) == Verdict(want, 0.5)


def test_label_tasks_keep_the_model_action() -> None:
    rule = TaskPolicyConfig(task="sentiment", kind="label")
    assert on_malformed(rule, Verdict("positive", 0.9)).action == "positive"


def test_default_is_review_and_a_tenant_can_change_it() -> None:
    config = Config.from_dict(
        {
            "policy": {
                "tasks": [{"task": "spam", "positive_label": "spam"}],
                "tenants": [
                    {
                        "name": "strict",
                        "tasks": [{"task": "spam", "malformed_action": "quarantine"}],
                    }
                ],
            }
        }
    )
    policy = Policy(config.policy)
    assert policy.rule("spam").malformed_action == "review"
    assert policy.rule("spam", "strict").malformed_action == "quarantine"
    assert on_malformed(policy.rule("spam", "strict"), Verdict("allow", 0.1)).action == "quarantine"


def test_unknown_malformed_action_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="malformed_action"):
        TaskPolicyConfig(task="spam", malformed_action="drop")  # type: ignore[arg-type]

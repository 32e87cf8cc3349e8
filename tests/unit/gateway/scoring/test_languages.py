"""A task's language policy: what it raises, what it leaves alone."""

from __future__ import annotations

import pytest

from textgate.config import TaskPolicyConfig
from textgate.errors import ConfigError
from textgate.gateway.scoring import languages
from textgate.gateway.scoring.policy import Verdict
from textgate.gateway.scoring.senders import Listed
from textgate.signals.language import UND, Language

EN_ONLY = TaskPolicyConfig(task="spam", ok_languages=("en",))
DE, EN = Language("de", 1.0), Language("en", 1.0)


@pytest.mark.parametrize(
    ("rule", "action", "found", "listed", "expected"),
    [
        (EN_ONLY, "allow", DE, None, "review"),  # another language: at least review
        (EN_ONLY, "allow", EN, None, "allow"),
        (EN_ONLY, "allow", Language(UND, 0.0), None, "allow"),  # too little text: no action
        (EN_ONLY, "quarantine", DE, None, "quarantine"),  # never lowered
        (EN_ONLY, "allow", DE, Listed("allow", "x.example", "dkim"), "allow"),  # allow-listed
        (EN_ONLY, "allow", None, None, "allow"),  # not detected
        (TaskPolicyConfig(task="spam"), "allow", DE, None, "allow"),  # no list: all fine
        (TaskPolicyConfig(task="spam", ok_languages=("en",), language_action="quarantine"),
         "review", DE, None, "quarantine"),
        (TaskPolicyConfig(task="sentiment", kind="label", ok_languages=("en",)),
         "positive", DE, None, "positive"),  # label tasks report, never act
    ],
)  # fmt: skip
def test_the_policy_raises_the_action_only_where_it_should(
    rule: TaskPolicyConfig, action: str, found: Language | None, listed: Listed | None,
    expected: str,
) -> None:  # fmt: skip
    v = languages.verdict(rule, Verdict(action, 0.1), found, listed)
    assert v.action == expected and v.score == 0.1


def test_raw_mail_is_always_detected_texts_only_under_a_list() -> None:
    texts = ["Vielen Dank für Ihre Bestellung, das Paket kommt am Montag früh an."] * 2
    raw: list[str | bytes] = [b"Subject: x\r\n\r\n...", "a json text"]
    found = languages.for_items(TaskPolicyConfig(task="spam"), raw, texts)
    assert found[0] is not None and found[0].code == "de" and found[1] is None
    found = languages.for_items(EN_ONLY, raw, texts)
    assert [f.code for f in found if f] == ["de", "de"]


def test_the_result_names_the_language_and_whether_it_was_acted_on() -> None:
    assert languages.as_result(EN_ONLY, None) == {}
    assert languages.as_result(EN_ONLY, DE) == {
        "language": {"code": "de", "confidence": 1.0, "unwanted": True}
    }


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [({"ok_languages": ("EN",)}, "ok_languages[0]"),
     ({"ok_languages": ("en", "english")}, "ok_languages[1]"),
     ({"language_action": "allow"}, "language_action")],
)  # fmt: skip
def test_bad_language_settings_name_the_key(kwargs: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        TaskPolicyConfig(task="spam", **kwargs)  # type: ignore[arg-type]
    assert key in str(err.value)

"""A task's language policy (``ok_languages``, ``language_action``; docs/mail.md, "Languages").

SpamAssassin's ``ok_languages`` with TextCat's ``UNWANTED_LANGUAGE_BODY``: a site that reads
English and German sends mail in other languages to review (or quarantine). The language is
the scored text's (``textgate.signals.language``); ``und`` (too little text to tell) is never
acted on. It is detected for every raw message (its result names the language) and for texts
only where the task's rule names ``ok_languages``: a quarter of a millisecond of the event
loop per text is too much to spend on every text of a large batch for nothing.

The policy only raises an action: a quarantined message stays quarantined, and a sender the
tenant allow-lists is not held for its language. Label-kind tasks (sentiment) report the
language but take no action on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from textgate.config import TaskPolicyConfig
from textgate.gateway.scoring.policy import Verdict, at_least
from textgate.gateway.scoring.senders import Listed
from textgate.signals import language
from textgate.signals.language import Language

SYMBOL = "UNWANTED_LANGUAGE_BODY"
DESCRIPTION = "Message written in an undesired language"  # SpamAssassin's words


def for_items(
    rule: TaskPolicyConfig,
    raw: Sequence[str | bytes],
    texts: Sequence[str],
    known: Sequence[Language | None] | None = None,
) -> list[Language | None]:
    """Each item's language: every raw message's; a text's where the rule names languages.
    ``known``: what the parse pool already detected, off the event loop."""
    known = known if known is not None else [None] * len(raw)
    return [
        k or (language.detect(t) if isinstance(x, bytes) or rule.ok_languages else None)
        for x, t, k in zip(raw, texts, known, strict=True)
    ]


def unwanted(rule: TaskPolicyConfig, found: Language) -> bool:
    return rule.kind == "threshold" and not language.wanted(found, rule.ok_languages)


def verdict(
    rule: TaskPolicyConfig, v: Verdict, found: Language | None, listed: Listed | None
) -> Verdict:
    """At least ``language_action`` for a language the task's rule does not accept."""
    if (
        found is None
        or not unwanted(rule, found)
        or (listed is not None and listed.list == "allow")
    ):
        return v
    return dataclasses.replace(v, action=at_least(v.action, rule.language_action))


def as_result(rule: TaskPolicyConfig, found: Language | None) -> dict[str, Any]:
    if found is None:
        return {}
    return {"language": found.as_dict() | {"unwanted": unwanted(rule, found)}}

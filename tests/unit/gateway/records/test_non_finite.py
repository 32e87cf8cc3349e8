"""A NaN or infinite score is a model defect, not a score (issue 11 §8): the verdict is
``review`` and names the defect, the event stays valid (``score: null``, as its schema says),
and ``textgate events tail`` shows such an event instead of dying on ``float(None)``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest

from textgate import cli
from textgate.config import TaskPolicyConfig
from textgate.gateway.records.events import EVENT_SCHEMA, Event, score_text
from textgate.gateway.records.outbox import Outbox
from textgate.gateway.scoring.policy import NON_FINITE_OUTPUT, decide, on_malformed

SPAM = TaskPolicyConfig(task="spam", positive_label="spam")
LABELS = ("ham", "spam")


@pytest.mark.parametrize(
    "probs",
    [(math.nan, math.nan), (0.0, math.inf), (0.5, -math.inf), (math.nan, 0.99)],
    ids=["nan", "inf-quarantined-before", "minus-inf-allowed-before", "nan-beside-a-score"],
)
def test_a_non_finite_output_is_a_review_that_names_the_defect(probs: tuple[float, ...]) -> None:
    verdict = decide(SPAM, LABELS, probs)
    assert verdict.action == "review" and verdict.defects == (NON_FINITE_OUTPUT,)


def test_finite_outputs_have_no_defect_and_the_malformed_path_keeps_one() -> None:
    assert decide(SPAM, LABELS, (0.9, 0.1)).defects == ()
    strict = TaskPolicyConfig(task="spam", malformed_action="quarantine")
    raised = on_malformed(strict, decide(strict, LABELS, (math.nan, math.nan)))
    assert raised.action == "quarantine" and raised.defects == (NON_FINITE_OUTPUT,)


def _event(score: float | None) -> Event:
    return Event.of(
        text="x", request_id="r-null", task="spam", model="spam", model_version="1",
        variant="int8", label="spam", score=score, action="review",
    )  # fmt: skip


def test_the_event_schema_states_a_null_score_and_still_refuses_other_types() -> None:
    jsonschema.validate(json.loads(_event(None).to_json()), EVENT_SCHEMA)
    bad = json.loads(_event(0.5).to_json()) | {"score": "NaN"}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, EVENT_SCHEMA)


def test_events_tail_shows_an_event_with_a_null_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "outbox.sqlite3"
    with Outbox(path, publishing=False) as outbox:
        outbox.put_sync(_event(None))  # as older gateways wrote a NaN score
        outbox.put_sync(_event(0.25))
    assert cli.main(["events", "tail", "--outbox", str(path), "-n", "5"]) == 0
    out = capsys.readouterr().out
    assert "spam n/a  review" in out and "spam 0.2500  review" in out
    assert score_text(None) == "n/a" and score_text(1) == "1.0000"

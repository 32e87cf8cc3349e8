"""The events: one per classified text, one per release switch; versioned, JSON on the wire.

The gateway builds an ``Event`` per classification, the ``Outbox`` stores its JSON, the
``Publisher`` sends that JSON to Kafka keyed by ``event_id`` (the dedup key for consumers).
``EVENT_SCHEMA`` is the JSON Schema of ``Event.to_dict()``; a new incompatible field means a
new ``schema`` value, never a silent change.

``textgate.event/2`` (was ``/1``): the key is the server's ``event_id``, never the client's.
Keyed by the client's ``X-Request-ID``, a client that sent one id twice (first a benign
text, then spam) kept only the earlier event, and an id such as ``release/spam/7`` took a
release event's place. ``request_id`` is now a plain field (not unique).

A promote, rollback or automatic canary rollback is a ``ReleaseEvent`` on the same outbox and
topic under its own schema id, ``textgate.release-event/1`` (``RELEASE_EVENT_SCHEMA``): a
``textgate.event/1`` consumer tells them apart by ``schema`` and its events are unchanged.

``score`` is a number, or null where the model's output was not finite (NaN/inf): JSON has
no NaN, and such an output is a model defect, not a score. ``/2`` events always carried null
there; the schema now says so (``textgate events tail`` shows ``n/a``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

SCHEMA_ID = "textgate.event/2"

EVENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "textgate classification event",
    "type": "object",
    "required": [
        "schema",
        "event_id",
        "request_id",
        "time",
        "task",
        "model",
        "model_version",
        "variant",
        "label",
        "score",
        "action",
        "timings_ms",
        "text_sha256",
    ],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "event_id": {
            "type": "string",
            "pattern": "^[0-9a-f]{32}$",
            "description": "the server's id of this event: the dedup and Kafka key",
        },
        "request_id": {
            "type": "string",
            "minLength": 1,
            "description": "the client's X-Request-ID (or the gateway's); not unique",
        },
        "time": {"type": "number", "description": "Unix time (s) the event was made"},
        "task": {"type": "string"},
        "model": {"type": "string", "description": "Triton model (ensemble) name"},
        "model_version": {"type": "string"},
        "variant": {"type": "string", "description": "variant that answered: fp32, int8, ..."},
        "label": {"type": "string"},
        "score": {
            "type": ["number", "null"],
            "description": "what the policy thresholds compare; null only when the model's "
            "output was not finite (NaN/inf: a model defect, never a score; the action is "
            "then review)",
        },
        "action": {"type": "string", "description": "allow, review, quarantine, a label, ..."},
        "timings_ms": {"type": "object", "additionalProperties": {"type": "number"}},
        "text_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "text": {"type": ["string", "null"], "description": "only with events.store_text"},
        "tenant": {"type": ["string", "null"]},
        "rescore_band": {
            "type": ["array", "null"],
            "items": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
            "description": "score intervals re-scored by fp32 ([] where re-scoring is off)",
        },
        "unk_ratio": {
            "type": ["number", "null"],
            "description": "share of the text's tokens that are [UNK]; null: not computed",
        },
    },
}


RELEASE_SCHEMA_ID = "textgate.release-event/1"

RELEASE_EVENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": RELEASE_SCHEMA_ID,
    "title": "textgate release event (promote, rollback, automatic canary rollback)",
    "type": "object",
    "required": ["schema", "request_id", "time", "task", "op", "version", "serving", "reason"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": RELEASE_SCHEMA_ID},
        "request_id": {
            "type": "string",
            "description": "the dedup and Kafka key: release/<task>/<state sequence number> "
            "(its own key space: classification keys are 32 hex digits)",
        },
        "time": {"type": "number"},
        "task": {"type": "string"},
        "op": {"enum": ["promote", "rollback", "auto-rollback"]},
        "version": {
            "type": "integer",
            "description": "promote/rollback: the version now serving; auto-rollback: the "
            "canary version stopped",
        },
        "serving": {"type": "integer", "description": "the version serving after the op"},
        "previous_serving": {"type": ["integer", "null"], "description": "serving before"},
        "reason": {"type": "string"},
        "forced": {"type": "boolean", "description": "a promote past a failed gate"},
    },
}


REVIEW_SCHEMA_ID = "textgate.review-event/1"

REVIEW_EVENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": REVIEW_SCHEMA_ID,
    "title": "textgate review decision (console): spam, ham, or release of quarantined mail",
    "type": "object",
    "required": ["schema", "key", "request_id", "time", "task", "decision", "label"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": REVIEW_SCHEMA_ID},
        "key": {
            "type": "string",
            "description": "the dedup and Kafka key: review/<request id> (one decision each)",
        },
        "request_id": {"type": "string", "description": "the reviewed verdict's request id"},
        "time": {"type": "number"},
        "task": {"type": "string"},
        "tenant": {"type": ["string", "null"]},
        "decision": {
            "enum": ["spam", "ham", "release"],
            "description": "release: quarantined mail judged ham; the MTA side delivers it",
        },
        "label": {"type": "string", "description": "the label written to the feedback store"},
        "previous_action": {"type": ["string", "null"]},
        "previous_label": {"type": ["string", "null"]},
        "previous_score": {"type": ["number", "null"]},
        "model_version": {"type": ["string", "null"]},
        "reviewer": {"type": "string", "description": "admin, or tenant:<name>"},
        "feedback_id": {"type": ["integer", "null"]},
    },
}


def new_event_id() -> str:
    """128 random bits: unguessable, so no client can pre-empt or overwrite an event (what
    secrets.token_hex(16) returns, without its Python-level hops)."""
    return os.urandom(16).hex()


def score_text(score: Any) -> str:
    """An event's score for people: four decimals, ``n/a`` for null (a non-finite output)."""
    return f"{float(score):.4f}" if isinstance(score, int | float) else "n/a"


def text_hash(text: str) -> str:
    """SHA-256 of the UTF-8 text: lets consumers join and count texts without holding them."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, kw_only=True)
class Event:
    """One classification, as stored in the outbox and published to Kafka."""

    request_id: str
    task: str
    model: str
    model_version: str
    variant: str
    label: str
    score: float | None  # None: the model's output was not finite (EVENT_SCHEMA)
    action: str
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    text_sha256: str
    text: str | None = None
    tenant: str | None = None
    rescore_band: list[list[float]] | None = None  # optional fields: /2 readers still match
    unk_ratio: float | None = None
    time: float = field(default_factory=time.time)
    event_id: str = field(default_factory=new_event_id)
    schema: str = SCHEMA_ID

    def __post_init__(self) -> None:
        if not self.request_id:
            raise ValueError("an event needs a request_id (the client's, or the gateway's)")

    @property
    def key(self) -> str:
        """The outbox's unique key and the Kafka message key."""
        return self.event_id

    @classmethod
    def of(cls, *, text: str, store_text: bool = False, **fields: Any) -> Event:
        """An event for ``text``: always its hash, the text itself only when ``store_text``."""
        return cls(text_sha256=text_hash(text), text=text if store_text else None, **fields)

    def to_dict(self) -> dict[str, Any]:
        # Flat fields: a shallow copy equals asdict(), whose deep copy showed in the profile
        # (docs/benchmarks.md, "The gateway's CPU per request").
        data = {name: getattr(self, name) for name in _EVENT_FIELDS}
        data["timings_ms"] = dict(self.timings_ms)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, raw: str | bytes) -> Event:
        return cls(**json.loads(raw))


_EVENT_FIELDS = tuple(f.name for f in fields(Event))


@dataclass(frozen=True, kw_only=True)
class ReleaseEvent:
    """One release switch, as stored in the outbox and published beside classifications."""

    request_id: str
    task: str
    op: str  # promote | rollback | auto-rollback
    version: int
    serving: int
    previous_serving: int | None = None
    reason: str = ""
    forced: bool = False
    time: float = field(default_factory=time.time)
    schema: str = RELEASE_SCHEMA_ID

    @property
    def key(self) -> str:
        """``release/<task>/<seq>``: a retried switch is stored once."""
        return self.request_id

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, kw_only=True)
class ReviewEvent:
    """One console decision, on the same outbox and topic under its own schema id."""

    request_id: str
    task: str
    decision: str  # spam | ham | release
    label: str
    tenant: str | None = None
    previous_action: str | None = None
    previous_label: str | None = None
    previous_score: float | None = None
    model_version: str | None = None
    reviewer: str = ""
    feedback_id: int | None = None
    time: float = field(default_factory=time.time)
    schema: str = REVIEW_SCHEMA_ID

    @property
    def key(self) -> str:
        """``review/<request id>``: a repeated decision is stored once."""
        return f"review/{self.request_id}"

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, **asdict(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

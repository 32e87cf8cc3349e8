"""The wire format of ``POST /v1/classify/{task}`` and of every error, as the published
schema (``/openapi.json``, committed as docs/openapi.json) states it.

Documentation, not validation: the handlers parse bodies by hand (``request_body.py``) and
write answers with orjson; the contract test and the schemathesis runs check that every
answer has this shape.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ClassifyRequest(BaseModel):
    """Exactly one of ``text`` or ``texts``."""

    text: str | None = Field(None, description="one text", min_length=1)
    texts: list[str] | None = Field(None, description="several texts (batch)", min_length=1)


class ModelRef(BaseModel):
    name: str
    version: str
    variant: str


class ItemResult(BaseModel):
    label: str
    probabilities: dict[str, float | None]
    score: float | None = Field(
        description="what the policy thresholds compare; null: the model's output was not "
        "finite (see defects)"
    )
    action: str = Field(description="allow | review | quarantine, or a label | uncertain")
    model: ModelRef
    precision_path: str = Field(description="the variant that answered (fp32 after a re-score)")
    rescored: bool
    path: str = Field(
        "full",
        description="cheap: answered by the n-gram half alone, sure enough by the bundle's "
        "cascade bounds; full: the transformer read it (docs/gateway.md, Confidence cascade)",
    )
    rescore_band: list[list[float]] = Field(
        default_factory=list,
        description="score intervals [low, high] that fp32 re-scores; [] where it is off",
    )
    unk_ratio: float | None = Field(
        None, description="share of tokens the tokenizer maps to [UNK] (tasks that ask)"
    )
    notes: list[str] = Field(
        default_factory=list, description="warnings about this answer (e.g. unseen script)"
    )
    request_id: str
    timings_ms: dict[str, float]
    normalization: dict[str, Any] = Field(description="what normalization did")
    defects: list[str] | None = Field(
        None,
        description="only when the model answered NaN/inf: model_output_not_finite "
        "(the action is then review)",
    )
    listed: dict[str, str] | None = Field(
        None,
        description="a tenant's sender list decided the action: {list: allow|block, entry, why}",
    )
    language: dict[str, Any] | None = Field(
        None,
        description="the text's language {code: ISO 639-1 or und, confidence, unwanted}: for "
        "every raw message, and for texts where the task's policy names ok_languages; "
        "unwanted: not in ok_languages, the action raised to at least language_action",
    )
    tenant_learning: dict[str, Any] | None = Field(
        None,
        description="the tenant's own corrections as a signal (feedback.tenant_learning): "
        "{corrections, weight (0 below feedback.min_corrections), log_odds, version}",
    )
    cached: bool | None = Field(
        None,
        description="true: the model's answer came from the campaign memory (an identical "
        "message of this tenant, same model and policy, scored within gateway.campaign_ttl_s)",
    )
    explanation: list[dict[str, Any]] | None = Field(
        None, description="with ?explain=N: the N spans that moved the score most (occlusion)"
    )
    symbols: list[dict[str, Any]] | None = Field(
        None,
        description="e-mail scored by a combiner: the structure symbols that fired, each with "
        "its weight (log-odds added to the spam side; negative: evidence of legitimate mail)",
    )


class ClassifyResponse(BaseModel):
    request_id: str
    task: str
    results: list[ItemResult]


class ErrorDetail(BaseModel):
    type: str
    message: str
    request_id: str
    field: str | None = None
    hint: str | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": why}
    for code, why in (
        (401, "unknown API key or tenant key"),
        (404, "unknown task"),
        (413, "body over gateway.max_body_bytes"),
        (415, "unsupported Content-Type"),
        (422, "invalid input; `field` names it"),
        (429, "overloaded; see Retry-After"),
        (502, "Triton rejected the request"),
        (503, "Triton or the event outbox unavailable; see Retry-After"),
        (504, "Triton did not answer within the deadline"),
    )
}

REQUEST_BODY = {
    "required": True,
    "content": {
        # Inline: no route declares the model, so a $ref to it dangled in the published schema.
        "application/json": {"schema": ClassifyRequest.model_json_schema()},
        "message/rfc822": {"schema": {"type": "string", "format": "binary"}},
        "text/plain": {"schema": {"type": "string"}},
    },
}

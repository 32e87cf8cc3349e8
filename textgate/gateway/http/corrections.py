"""HTTP side of explanations and corrections (docs/mail.md).

    POST /v1/classify/{task}?explain=N   each result gains ``explanation``: N spans
    POST /v1/feedback                    {"request_id" | "message" | "text", "label", "task"?}

A correction by ``request_id`` takes the text, task and previous verdict from the recent
verdicts (``feedback.Recent``); by ``message`` (a raw RFC 822 message as a string) or
``text`` it needs ``task`` (default ``spam``). The tenant is the request's (API key or
tenant header), as for classify.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from textgate.errors import InvalidInput
from textgate.gateway.runtime import gateway_of
from textgate.gateway.scoring import explain

router = APIRouter(tags=["feedback"])
MAX_FEEDBACK_BYTES = 1_048_576


class FeedbackRequest(BaseModel):
    """Exactly one of ``request_id``, ``message`` or ``text``, and the right ``label``."""

    label: str = Field(description="the correct label, one of the task's labels")
    request_id: str | None = Field(None, description="a recent verdict's request id")
    message: str | None = Field(None, description="a raw RFC 822 message")
    text: str | None = Field(None, description="a plain text")
    task: str | None = Field(None, description="with message/text; default spam")


class FeedbackResponse(BaseModel):
    id: int
    task: str
    label: str
    tenant: str | None
    request_id: str | None
    previous_label: str | None
    previous_action: str | None


def explain_count(request: Request) -> int:
    if not request.scope.get("query_string"):  # the usual request: no query to parse
        return 0
    value = request.query_params.get("explain")
    if value is None:
        return 0
    if not value.isdigit() or not 0 <= int(value) <= explain.MAX_SPANS:
        raise InvalidInput(
            f"explain must be an integer within 0..{explain.MAX_SPANS}", field="explain"
        )
    return int(value)


@router.post(
    "/v1/feedback",
    status_code=201,
    response_model=FeedbackResponse,
    summary="Correct a verdict: store the right label for the next training set",
)
async def post_feedback(request: Request, body: FeedbackRequest) -> Any:
    gw = gateway_of(request)
    rt = gw.runtime
    given = [k for k in ("request_id", "message", "text") if getattr(body, k)]
    if len(given) != 1:
        raise InvalidInput("send exactly one of request_id, message or text", field="body")
    if len(json.dumps(getattr(body, given[0]))) > MAX_FEEDBACK_BYTES:
        raise InvalidInput(f"over {MAX_FEEDBACK_BYTES} bytes", field=given[0])
    tenant = rt.policy.tenant(request.headers)
    raw: str | bytes | None = None
    if body.message:
        raw = body.message.encode("utf-8", "surrogateescape")
    elif body.text:
        raw = body.text
    c = await gw.desk.correct(
        rt,
        body.task or rt.config.mail.task,
        body.label,
        tenant,
        raw=raw,
        request_id=body.request_id,
        source="http",
    )
    return {
        "id": c.id,
        "task": c.task,
        "label": c.label,
        "tenant": c.tenant,
        "request_id": c.request_id,
        "previous_label": c.previous_label,
        "previous_action": c.previous_action,
    }

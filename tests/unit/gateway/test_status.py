from __future__ import annotations

import pytest

from textgate import errors
from textgate.gateway import status


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (errors.Overloaded("busy", retry_after_s=2), 429),
        (errors.TritonUnavailable("down"), 503),
        (errors.TritonTimeout("slow"), 504),
        (errors.TritonError("rejected"), 502),
        (status.BodyTooLarge("big"), 413),
        (status.UnsupportedContentType("png"), 415),
        (status.ValidationFailed("bad", field="text"), 422),
        (status.UnknownTask("nope"), 404),
        (status.Unauthorized("who"), 401),
        (errors.ConfigError("gateway.port", "bad"), 422),
        (ValueError("a bug"), 500),
    ],
)
def test_one_table(exc: BaseException, code: int) -> None:
    assert status.status_of(exc) == code


def test_input_and_outbox_families() -> None:
    assert status.status_of(errors.InvalidInput("bad", field="text")) == 422
    assert status.status_of(errors.PayloadTooLarge("big", reason="x", limit=1)) == 413
    assert status.status_of(errors.UnsupportedMedia("image/png")) == 415
    assert status.status_of(errors.OutboxFull("full", path="x")) == 503
    assert status.retry_after(errors.OutboxFull("full", path="x", retry_after_s=5), 1) == 5


def test_retry_after_and_body() -> None:
    exc = errors.Overloaded("busy", retry_after_s=7)
    assert status.retry_after(exc, 1) == 7
    assert status.retry_after(errors.TritonUnavailable("down"), 2) == 2
    assert status.retry_after(status.ValidationFailed("x"), 2) is None
    body = status.error_body(status.ValidationFailed("bad", field="texts[1]"), "r1")
    assert body == {
        "error": {
            "type": "ValidationFailed",
            "message": "bad",
            "request_id": "r1",
            "field": "texts[1]",
        }
    }

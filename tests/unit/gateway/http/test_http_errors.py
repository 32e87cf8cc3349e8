from __future__ import annotations

import pytest

from textgate import errors
from textgate.gateway.http import http_errors


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (errors.Overloaded("busy", retry_after_s=2), 429),
        (errors.TritonUnavailable("down"), 503),
        (errors.TritonTimeout("slow"), 504),
        (errors.TritonError("rejected"), 502),
        (errors.PayloadTooLarge("big", reason="too_large", limit=1), 413),
        (errors.UnsupportedContentType("png"), 415),
        (errors.InvalidInput("bad", field="text"), 422),
        (errors.ReleaseError("no candidate"), 409),
        (errors.GateFailed("gate failed"), 409),
        (errors.BundleError("no manifest"), 422),
        (errors.UnknownTask("nope"), 404),
        (errors.Unauthorized("who"), 401),
        (errors.ConfigError("gateway.port", "bad"), 422),
        (ValueError("a bug"), 500),
    ],
)
def test_one_table(exc: BaseException, code: int) -> None:
    assert http_errors.status_of(exc) == code


def test_input_and_outbox_families() -> None:
    assert http_errors.status_of(errors.InvalidInput("bad", field="text")) == 422
    assert http_errors.status_of(errors.PayloadTooLarge("big", reason="x", limit=1)) == 413
    assert http_errors.status_of(errors.OutboxFull("full", path="x")) == 503
    assert http_errors.retry_after(errors.OutboxFull("full", path="x", retry_after_s=5), 1) == 5


def test_retry_after_and_body() -> None:
    exc = errors.Overloaded("busy", retry_after_s=7)
    assert http_errors.retry_after(exc, 1) == 7
    assert http_errors.retry_after(errors.TritonUnavailable("down"), 2) == 2
    assert http_errors.retry_after(errors.InvalidInput("x"), 2) is None
    body = http_errors.error_body(errors.InvalidInput("bad", field="texts[1]"), "r1")
    assert body == {
        "error": {
            "type": "InvalidInput",
            "message": "texts[1]: bad",
            "request_id": "r1",
            "field": "texts[1]",
        }
    }


def test_a_bundle_error_names_the_bundle_field() -> None:
    body = http_errors.error_body(errors.BundleError("no manifest.json", hint="rebuild"), "r1")
    assert body["error"]["field"] == "bundle" and body["error"]["hint"] == "rebuild"


def test_every_front_end_maps_every_kind() -> None:
    from textgate.gateway.mailproto import milter, spamd
    from textgate.gateway.records import prometheus

    for table in (http_errors.STATUS, spamd.CODES, prometheus.STATUS_LABEL):
        assert set(table) == set(errors.Kind)
    assert set(errors.Kind) >= milter.CANNOT_SCAN
    assert spamd.code_of(errors.PayloadTooLarge("big", reason="x", limit=1)) == spamd.EX_TOOBIG
    assert spamd.code_of(ValueError("a bug")) == spamd.EX_SOFTWARE
    assert spamd.code_of(errors.TextgateError("ours")) == spamd.EX_UNAVAILABLE

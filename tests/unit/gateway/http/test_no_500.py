"""No 500 from input: decoder and parser failures are 422s with escaped, bounded text; an
unexpected exception answers a generic body and logs the detail under the request id."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from textgate import errors
from textgate.config import Config
from textgate.gateway.app import create_app
from textgate.gateway.http import http_errors


def test_an_exception_outside_the_tree_answers_a_generic_body() -> None:
    body = http_errors.error_body(ValueError("secret path /etc/x and a traceback"), "r1")
    assert body == {
        "error": {
            "type": "InternalError",
            "message": http_errors.INTERNAL_MESSAGE,
            "request_id": "r1",
        }
    }


def test_client_text_in_an_error_is_encodable_escaped_and_bounded() -> None:
    exc = errors.InvalidInput("unknown field '\ud800\x1b[31m'", field="\ud800")
    body = http_errors.error_body(exc, "r1")
    encoded = json.dumps(body, ensure_ascii=False).encode("utf-8")  # must not raise
    assert b"\\\\ud800" in encoded and b"\x1b" not in encoded
    long = http_errors.error_body(errors.InvalidInput("x" * 10_000, field="text"), "r1")
    assert len(long["error"]["message"]) <= 501


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    # No Triton: input is validated before any task is looked up or scored.
    config = Config.from_dict(
        {
            "client": {"endpoints": ["127.0.0.1:9"]},
            "gateway": {"parse_workers": 0},
            "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
        }
    )
    with TestClient(create_app(config), raise_server_exceptions=False) as c:
        yield c


@pytest.mark.parametrize(
    "body",
    [
        b'{"\\ud800": 1}',
        b'{"text": "a", "\\udfff\\u0000": 2}',
        b'{"' + b"k" * 5000 + b'": 1}',
    ],
    ids=["surrogate-key", "surrogate-and-nul-key", "5000-char-key"],
)
def test_hostile_json_keys_are_a_422_with_an_encodable_message(
    client: TestClient, body: bytes
) -> None:
    r = client.post("/v1/classify/spam", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["type"] == "InvalidInput" and len(err["message"]) <= 501


def test_a_bug_is_a_generic_500_and_the_log_has_it(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from textgate.gateway.http import request_body

    def boom(*_: object, **__: object) -> None:
        raise KeyError("internal detail")

    monkeypatch.setattr(request_body, "parse", boom)
    with caplog.at_level(logging.ERROR, logger="textgate"):
        r = client.post("/v1/classify/spam", json={"text": "hi"}, headers={"x-request-id": "bug-1"})
    assert r.status_code == 500
    assert r.json()["error"] == {
        "type": "InternalError",
        "message": http_errors.INTERNAL_MESSAGE,
        "request_id": "bug-1",
    }
    assert "internal detail" not in r.text
    assert any(
        getattr(rec, "request_id", None) == "bug-1" and rec.exc_info for rec in caplog.records
    )

"""The classify fast path answers exactly as FastAPI's router did: same statuses, bodies and
headers for every refusal, and what it does not take still reaches the router."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from textgate.config import Config
from textgate.gateway.app import create_app
from textgate.gateway.http import fastpath

# (method, path, body, content type): refusals that need no Triton
REQUESTS = [
    ("POST", "/v1/classify/nope", b'{"text": "hi"}', "application/json"),
    ("POST", "/v1/classify/spam", b"<p>hi</p>", "text/html"),
    ("POST", "/v1/classify/spam", b'{"text": 1}', "application/json"),
    ("POST", "/v1/classify/spam", b'{"texts": []}', "application/json"),
    ("POST", "/v1/classify/spam", b"not json", "application/json"),
    ("POST", "/v1/classify/spam?explain=x", b'{"text": "hi"}', "application/json"),
    ("POST", "/v1/classify/spam/", b'{"text": "hi"}', "application/json"),
    ("POST", "/v1/classify/spam/x", b'{"text": "hi"}', "application/json"),
    ("POST", "/v1/classify/", b'{"text": "hi"}', "application/json"),
    ("GET", "/v1/classify/spam", b"", "application/json"),
]


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Callable[[], TestClient]]:
    opened: list[Any] = []

    def make() -> TestClient:
        config = Config.from_dict(
            {
                "client": {"endpoints": ["127.0.0.1:9"]},
                "gateway": {"parse_workers": 0},
                "events": {"outbox_path": str(tmp_path / f"events{len(opened)}.sqlite3")},
            }
        )
        client = TestClient(create_app(config), raise_server_exceptions=False)
        opened.append(client.__enter__())
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)


def _answers(client: TestClient) -> list[tuple[int, Any, dict[str, str]]]:
    out = []
    for i, (method, path, body, media) in enumerate(REQUESTS):
        headers = {"content-type": media, "x-request-id": f"r{i}"}
        r = client.request(method, path, content=body, headers=headers, follow_redirects=False)
        kept = {k: v for k, v in r.headers.items() if k not in ("traceparent", "content-length")}
        out.append((r.status_code, r.content, kept))
    return out


def test_the_fast_path_answers_as_the_router_did(
    make_client: Callable[[], TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _answers(make_client())
    taken: list[str] = []
    original = fastpath.ClassifyFastPath._endpoint

    async def spy(self: Any, scope: Any, receive: Any, send: Any) -> None:
        taken.append(scope["path"])
        await original(self, scope, receive, send)

    monkeypatch.setattr(fastpath.ClassifyFastPath, "_endpoint", spy)
    _answers(make_client())
    assert taken == ["/v1/classify/nope"] + ["/v1/classify/spam"] * 5  # the exact matches

    async def passthrough(self: Any, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)

    monkeypatch.setattr(fastpath.ClassifyFastPath, "__call__", passthrough)
    assert _answers(make_client()) == fast  # byte for byte, headers included
    assert [status for status, _, _ in fast][:5] == [404, 415, 422, 422, 422]

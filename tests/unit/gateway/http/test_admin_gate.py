"""The admin path before and after the body: auth and a small size limit are checked from
the headers alone; task and model names follow one pattern; a path the OS refuses is a 422
(issue 10 §4)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from textgate.config import Config
from textgate.gateway.app import create_app
from textgate.gateway.http import admin

TOKEN = "admin-token-0123456789"
AUTH = {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    config = Config.from_dict(
        {
            "client": {"endpoints": ["127.0.0.1:9"]},
            "gateway": {"admin_token": TOKEN, "parse_workers": 0},
            "release": {"repository": str(tmp_path / "repo")},
            "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
        }
    )
    with TestClient(create_app(config), raise_server_exceptions=False) as c:
        c.repo = tmp_path / "repo"  # type: ignore[attr-defined]
        yield c


def test_no_token_is_a_401_before_a_large_body_matters(client: TestClient) -> None:
    big = b"{" + b" " * (4 * 1024 * 1024) + b"}"
    r = client.post("/admin/release/add", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 401 and r.json()["error"]["field"] == "authorization"


def test_an_admin_body_over_the_limit_is_a_413_from_its_length(client: TestClient) -> None:
    big = b'{"task": "spam", "bundle": "' + b"x" * admin.MAX_BODY + b'"}'
    r = client.post(
        "/admin/release/add", content=big, headers={**AUTH, "content-type": "application/json"}
    )
    assert r.status_code == 413, r.text


@pytest.mark.parametrize("task", ["../../../escape", "*", "spam_v1_*", "Spam", "a/b", "x" * 65])
def test_hostile_task_names_are_422_on_every_admin_route(client: TestClient, task: str) -> None:
    bodies = {
        "/admin/release/add": {"bundle": "/nonexistent", "task": task},
        "/admin/release/canary": {"task": task, "percent": 5},
        "/admin/release/shadow": {"task": task},
        "/admin/release/standby": {"task": task},
        "/admin/release/compare": {"task": task},
        "/admin/release/promote": {"task": task},
        "/admin/release/rollback": {"task": task},
    }
    for path, body in bodies.items():
        r = client.post(path, json=body, headers=AUTH)
        assert r.status_code == 422, (path, r.status_code, r.text)
    assert not (client.repo.parent / "escape").exists()  # type: ignore[attr-defined]


def test_hostile_model_names_are_422(client: TestClient) -> None:
    for model in ("../x", "*", "a b"):
        r = client.post("/admin/triton/load", json={"model": model}, headers=AUTH)
        assert r.status_code == 422, r.text


def test_a_path_the_os_refuses_is_a_422_not_a_500(client: TestClient) -> None:
    r = client.post(
        "/admin/release/add", json={"bundle": "/" + "a" * 4000, "task": "spam"}, headers=AUTH
    )
    assert r.status_code == 422, r.text
    assert r.json()["error"]["field"] == "bundle"

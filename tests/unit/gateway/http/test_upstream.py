"""The uvicorn/Starlette private API the front door and the fast path use: pinned, and
checked, so an upgrade fails here (and at the gateway's start) instead of in production."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from uvicorn.protocols.http import httptools_impl

from textgate.config import GatewayConfig
from textgate.errors import DependencyError
from textgate.gateway.http import frontdoor, upstream

PYPROJECT = Path(__file__).parents[4] / "pyproject.toml"


def test_the_installed_stack_fits_the_gateway() -> None:
    assert upstream.problems() == []
    upstream.check()


def test_the_tested_versions_are_the_installed_and_the_pinned_ones() -> None:
    """An upgrade lands only with this table (and the front door's tests) moved with it."""
    assert upstream.installed() == upstream.TESTED
    serve = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["serve"]
    for name, version in upstream.TESTED.items():
        assert f"{name}=={version}" in serve


def test_a_moved_method_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    def on_url(self: object, url: bytes, extra: int) -> None: ...

    monkeypatch.setattr(httptools_impl.HttpToolsProtocol, "on_url", on_url)
    monkeypatch.delattr(httptools_impl.HttpToolsProtocol, "on_body")
    found = upstream.problems()
    assert any("on_url" in p for p in found) and any("on_body is gone" in p for p in found)
    with pytest.raises(DependencyError) as err:
        frontdoor.uvicorn_config(object(), GatewayConfig(), host="127.0.0.1", port=1)
    assert "uvicorn==0.55.0" in str(err.value.hint) and "on_body" in err.value.message


def test_a_missing_status_line_is_a_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = {k: v for k, v in httptools_impl.STATUS_LINE.items() if k != 431}
    monkeypatch.setattr(httptools_impl, "STATUS_LINE", lines)
    assert upstream.problems() == ["uvicorn's STATUS_LINE has no 431"]

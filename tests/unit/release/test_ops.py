"""The operations table: the offline CLI, the remote CLI and the admin API expose the same
release operations with the same parameters. Each test fails when a surface lacks one."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from textgate import cli
from textgate.gateway.http import admin
from textgate.release import OPERATIONS, ops

NAMES = {op.name for op in OPERATIONS}
MINIMAL = {"add": ["repo", "bundle"], "canary": ["--percent", "5"]}


def _release_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    release = sub.choices["release"]
    ops_action = next(a for a in release._actions if isinstance(a, argparse._SubParsersAction))
    return dict(ops_action.choices)


def _argv(op: ops.Operation, *extra: str) -> list[str]:
    task = op.param("task")
    flags = ["--task", "spam"] if task is not None and task.required else []
    return ["release", op.name, *MINIMAL.get(op.name, []), *flags, *extra]


def _admin_routes() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for route in admin.router.routes:
        out.setdefault(route.path, set()).update(route.methods)  # type: ignore[attr-defined]
    return out


def test_the_cli_has_every_operation_and_no_other() -> None:
    parsers = _release_parsers()
    assert set(parsers) == NAMES
    for op in OPERATIONS:
        dests = {a.dest for a in parsers[op.name]._actions}
        assert {p.name for p in op.params} <= dests, op.name


def test_the_admin_api_has_every_operation_and_no_other() -> None:
    routes = _admin_routes()
    release_routes = {p for p in routes if p.startswith("/admin/release/")}
    assert release_routes == {f"/admin{op.route}" for op in OPERATIONS}
    for op in OPERATIONS:
        assert op.method in routes[f"/admin{op.route}"], op.name


def test_each_admin_body_has_the_operations_api_parameters() -> None:
    for op in OPERATIONS:
        model = admin._body_model(op)
        remote = {p.name for p in op.params if p.remote}
        if op.method == "GET" or not remote:
            continue
        assert model is not None and set(model.model_fields) == remote, op.name


def test_the_remote_cli_sends_every_operation_to_its_admin_route(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import httpx

    sent: list[tuple[str, str, dict[str, Any]]] = []

    def answer(method: str) -> Any:
        def call(url: str, **kw: Any) -> httpx.Response:
            sent.append((method, url, kw.get("json") or kw.get("params") or {}))
            return httpx.Response(200, json={"versions": []})

        return call

    monkeypatch.setattr(httpx, "get", answer("GET"))
    monkeypatch.setattr(httpx, "post", answer("POST"))
    monkeypatch.chdir(tmp_path)
    routes = _admin_routes()
    for op in OPERATIONS:
        sent.clear()
        assert cli.main(_argv(op, "--url", "http://gw", "--token", "t")) == 0, op.name
        ((method, url, body),) = sent
        path = url.removeprefix("http://gw")
        assert method in routes[path] and path == f"/admin{op.route}", op.name
        required = {p.name for p in op.params if p.required and p.remote}
        assert required <= set(body), op.name


def test_the_offline_cli_runs_every_operation_through_the_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    called: list[str] = []
    for op in OPERATIONS:

        def record(_rel: Any, _args: Any, _infer: Any, name: str = op.name) -> dict[str, Any]:
            called.append(name)
            return {"versions": []}

        monkeypatch.setitem(ops.BY_NAME, op.name, ops.Operation(op.name, op.help, record))
    (tmp_path / "repo" / ".textgate-release").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    for op in OPERATIONS:
        argv = _argv(op)
        if not op.repo_positional:
            argv += ["--repo", "repo"]
        assert cli.main(argv) == 0, op.name
    assert called == [op.name for op in OPERATIONS]

"""The release operations, once: the table every surface iterates.

    textgate release OP --repo REPO ...   offline CLI: ``op.call(Releases(...), args)``
    textgate release OP --url URL ...     remote CLI: ``op.method`` ``/admin`` + ``op.path``
    POST /admin/release/OP                the gateway's admin routes: ``op.call(manager, body)``

Each ``Operation`` names its parameters once (``Param``): the CLI makes its flags from them,
the admin API its request body (with the bounds), the remote CLI the body it sends. A new
operation is one row here; ``tests/unit/release/test_ops.py`` fails when a surface lacks one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textgate.names import TASK_PATTERN
from textgate.release.gate import Infer
from textgate.release.state import KEYS

if TYPE_CHECKING:
    from textgate.release.manager import Releases


@dataclass(frozen=True)
class Param:
    """One argument of an operation."""

    name: str
    kind: type = str  # str | float | bool
    required: bool = False
    default: Any = None
    help: str = ""
    # Offered by the CLI; the store checks them (over the admin API a bad one is a 409).
    choices: tuple[str, ...] = ()
    path: bool = False  # a path as the gateway's host sees it: the CLI sends it resolved
    remote: bool = True  # part of the admin API's body (False: the offline CLI only)
    # Bounds the admin API's body enforces (a 422 naming the field).
    ge: float | None = None
    le: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None


Args = Mapping[str, Any]
Call = Callable[["Releases", Args, "Infer | None"], Any]


@dataclass(frozen=True)
class Operation:
    name: str
    help: str  # the CLI's help and the admin route's summary
    call: Call
    params: tuple[Param, ...] = ()
    method: str = "POST"
    path: str = ""  # under /admin; "" -> /release/<name>
    read_only: bool = False  # no state change: no operation counter, no re-discovery
    emits: bool = False  # the gateway writes a release event (textgate.release-event/1)
    restarts_watch: bool = False  # a new canary is judged on its own requests
    runs_models: bool = False  # needs inference of both versions (an ``Infer``)
    repo_positional: bool = False  # the CLI's add names the repository it creates

    @property
    def route(self) -> str:
        return self.path or f"/release/{self.name}"

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


_TASK = Param("task", required=True, help="the released task", pattern=f"^{TASK_PATTERN}$")
_REASON = Param("reason", default="", help="recorded in the history", max_length=1000)


def _text(args: Args, name: str) -> str:
    return str(args.get(name) or "")


def _path(args: Args, name: str) -> Path | None:
    value = args.get(name)
    return None if value is None else Path(value)


def _need_infer(infer: Infer | None) -> Infer:
    if infer is None:
        from textgate.errors import ConfigError

        raise ConfigError("release.triton_http", "compare runs the models: --triton")
    return infer


def _add(rel: Releases, a: Args, _i: Infer | None) -> Any:
    return rel.add(Path(a["bundle"]), a["task"])


def _list(rel: Releases, a: Args, _i: Infer | None) -> Any:
    return {"versions": rel.list_versions(a.get("task") or None)}


def _canary(rel: Releases, a: Args, _i: Infer | None) -> Any:
    return rel.canary(a["task"], float(a["percent"]), a.get("key"))


def _shadow(rel: Releases, a: Args, _i: Infer | None) -> Any:
    return rel.shadow(a["task"])


def _standby(rel: Releases, a: Args, _i: Infer | None) -> Any:
    return rel.standby(a["task"], _text(a, "reason"))


def _compare(rel: Releases, a: Args, infer: Infer | None) -> Any:
    data, feedback = _path(a, "data"), _path(a, "feedback")
    return rel.compare(a["task"], _need_infer(infer), data=data, feedback=feedback)


def _promote(rel: Releases, a: Args, _i: Infer | None) -> Any:
    return rel.promote(a["task"], force=bool(a.get("force")), reason=_text(a, "reason"))


def _rollback(rel: Releases, a: Args, _i: Infer | None) -> Any:
    return rel.rollback(a["task"], reason=_text(a, "reason"))


def _gc(rel: Releases, _a: Args, _i: Infer | None) -> Any:
    return {"removed": rel.gc()}


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "add",
        "verify a bundle, add it as the next version, load it",
        _add,
        (
            Param(
                "bundle",
                required=True,
                path=True,
                help="bundle directory (textgate export/build)",
                min_length=1,
                max_length=4096,
            ),
            _TASK,
        ),
        repo_positional=True,
    ),
    Operation(
        "list",
        "versions: hash, metrics, variant, state, load status",
        _list,
        (Param("task", help="only this task"),),
        method="GET",
        path="/release/versions",
        read_only=True,
    ),
    Operation(
        "canary",
        "a sticky share of traffic to the candidate",
        _canary,
        (
            _TASK,
            Param("percent", float, required=True, help="share of traffic, 0..100", ge=0, le=100),
            Param("key", choices=KEYS, help=" | ".join(KEYS)),
        ),
        restarts_watch=True,
    ),
    Operation(
        "shadow", "copy live traffic to the candidate; answers unaffected", _shadow, (_TASK,)
    ),
    Operation(
        "standby", "stop canary/shadow; the candidate stays loaded", _standby, (_TASK, _REASON)
    ),
    Operation(
        "compare",
        "candidate vs serving on shadowed texts (+ --data); the gate",
        _compare,
        (
            _TASK,
            Param("data", path=True, help='JSONL {"text", "label"}', max_length=4096),
            Param(
                "feedback",
                path=True,
                remote=False,
                help="feedback store: report accuracy on the corrections too",
            ),
        ),
        runs_models=True,
    ),
    Operation(
        "promote",
        "candidate -> serving (gate passed, or --force --reason)",
        _promote,
        (_TASK, Param("force", bool, default=False, help="past a failed gate"), _REASON),
        emits=True,
    ),
    Operation(
        "rollback",
        "back to the previous serving version",
        _rollback,
        (_TASK, _REASON),
        emits=True,
    ),
    Operation("gc", "delete the files of retired versions", _gc),
)

BY_NAME = {op.name: op for op in OPERATIONS}


def remote_body(op: Operation, args: Args) -> dict[str, Any]:
    """What the remote CLI sends for ``op``: its API parameters that have a value."""
    body = {}
    for p in op.params:
        value = args.get(p.name)
        if not p.remote or value in (None, ""):
            continue
        body[p.name] = str(Path(value).resolve()) if p.path else value
    return body

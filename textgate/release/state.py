"""The release state as types: which version of each task serves, and its history.

    ReleaseState            format, seq (one more per commit), tasks
      TaskState             serving, candidate, mode, percent, key, versions, previous, history
        VersionInfo         bundle hash, variant, labels, metrics, retired, gate ...

On disk it is ``.textgate-release/state.json``, format ``textgate-release/1`` (the layout of
docs/lifecycle.md, unchanged by these types: version numbers are JSON object keys there).
Reading checks every field's type and every rule of ``problems()``; a state that breaks one
is refused with a ``ReleaseError`` that names it, and so is a write (``Releases`` commits
through ``write_state``). Keys this code does not know are kept (``extra``) so a newer
textgate's fields survive an older one's rewrite.

Writes are atomic: temp file, fsync, rename, fsync of the directory -- a reader sees the old
state or the new, never half of one.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textgate.errors import ReleaseError

FORMAT = "textgate-release/1"
MODES = ("standby", "canary", "shadow")
KEYS = ("tenant", "sender", "request_id")
HISTORY_MAX = 200  # entries per task: the file is rewritten on every operation


@dataclass
class VersionInfo:
    """One added version of a task (its models are ``T_vN*``)."""

    bundle_hash: str = ""
    variant: str = ""
    labels: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)  # the bundle's test metrics
    models: list[str] = field(default_factory=list)
    added: float | None = None
    # The manifest's own hash (it lists every other file's); "" for versions added before
    # it was recorded, which are then loaded without the check.
    manifest_sha256: str = ""
    retired: bool = False  # unloaded; files kept until gc
    collected: bool = False  # gc removed its files
    active: float = 0.0  # when it last served or was left behind: the retire order
    gate: dict[str, Any] | None = None  # summary of its last compare
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any, where: str) -> VersionInfo:
        d = _mapping(data, where)
        return cls(
            bundle_hash=_str(d, "bundle_hash", where, ""),
            variant=_str(d, "variant", where, ""),
            labels=[str(x) for x in _list(d, "labels", where)],
            metrics=dict(_mapping(d.get("metrics", {}), f"{where}.metrics")),
            models=[str(x) for x in _list(d, "models", where)],
            added=_number(d, "added", where, None),
            manifest_sha256=_str(d, "manifest_sha256", where, ""),
            retired=bool(d.get("retired", False)),
            collected=bool(d.get("collected", False)),
            active=_number(d, "active", where, 0.0) or 0.0,
            gate=dict(_mapping(d["gate"], f"{where}.gate")) if d.get("gate") else None,
            extra=_unknown(d, cls),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.extra, "bundle_hash": self.bundle_hash}
        out.update(variant=self.variant, labels=list(self.labels), metrics=dict(self.metrics))
        out.update(models=list(self.models), added=self.added, retired=self.retired)
        out["active"] = self.active
        if self.manifest_sha256:
            out["manifest_sha256"] = self.manifest_sha256
        if self.collected:
            out["collected"] = True
        if self.gate is not None:
            out["gate"] = dict(self.gate)
        return out


@dataclass
class TaskState:
    """One released task: who serves, who is the candidate, how traffic is split."""

    serving: int
    candidate: int | None = None
    mode: str = "standby"  # standby | canary | shadow (the candidate's traffic)
    percent: float = 0.0  # canary share, 0..100
    key: str = "request_id"  # what a canary hashes: tenant | sender | request_id
    versions: dict[int, VersionInfo] = field(default_factory=dict)
    previous: list[int] = field(default_factory=list)  # earlier serving versions, oldest first
    history: list[dict[str, Any]] = field(default_factory=list)  # one entry per commit
    extra: dict[str, Any] = field(default_factory=dict)

    def is_live(self, version: int) -> bool:
        info = self.versions.get(version)
        return info is not None and not info.retired

    def version_state(self, version: int) -> str:
        """What ``release list`` shows: serving, canary N %, shadow, standby, retired."""
        if self.versions[version].retired:
            return "retired"
        if version == self.serving:
            return "serving"
        if version == self.candidate and self.mode == "canary":
            return f"canary {self.percent:g} %"
        if version == self.candidate and self.mode == "shadow":
            return "shadow"
        return "standby"

    def problems(self, task: str) -> list[str]:
        """Every rule this task breaks (empty: consistent)."""
        bad = []
        if not self.is_live(self.serving):
            bad.append(f"{task}: serving version {self.serving} is not a live version")
        cand = self.candidate
        if cand is not None and (cand == self.serving or cand not in self.versions):
            bad.append(f"{task}: candidate {cand} is not a live version other than serving")
        if self.mode not in MODES:
            bad.append(f"{task}: mode {self.mode!r}")
        elif self.mode != "standby" and cand is None:
            bad.append(f"{task}: mode {self.mode} without a candidate")
        if not 0 <= self.percent <= 100:
            bad.append(f"{task}: canary percent {self.percent} outside 0..100")
        if self.key not in KEYS:
            bad.append(f"{task}: canary key {self.key!r} is not one of {', '.join(KEYS)}")
        missing = [v for v in self.previous if v not in self.versions]
        if missing:
            bad.append(f"{task}: previous serving versions {missing} are not versions")
        return bad

    def record(self, entry: Mapping[str, Any]) -> None:
        """Append one history entry without its empty fields; the history is bounded."""
        self.history.append({k: v for k, v in entry.items() if v not in (None, "", False)})
        del self.history[:-HISTORY_MAX]

    @classmethod
    def from_dict(cls, data: Any, where: str) -> TaskState:
        d = _mapping(data, where)
        raw_versions = _mapping(d.get("versions", {}), f"{where}.versions")
        versions = {
            _int_key(k, f"{where}.versions"): VersionInfo.from_dict(v, f"{where}.versions.{k}")
            for k, v in raw_versions.items()
        }
        candidate = d.get("candidate")
        return cls(
            serving=_int(d.get("serving"), f"{where}.serving"),
            candidate=None if candidate is None else _int(candidate, f"{where}.candidate"),
            mode=_str(d, "mode", where, "standby"),
            percent=_number(d, "percent", where, 0.0) or 0.0,
            key=str(d.get("key") or "request_id"),
            versions=dict(sorted(versions.items())),
            previous=[_int(v, f"{where}.previous") for v in _list(d, "previous", where)],
            history=[dict(_mapping(h, f"{where}.history")) for h in _list(d, "history", where)],
            extra=_unknown(d, cls),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the state file's, and what the admin API answers with."""
        return {
            **self.extra,
            "serving": self.serving,
            "candidate": self.candidate,
            "mode": self.mode,
            "percent": self.percent,
            "key": self.key,
            "versions": {str(v): info.to_dict() for v, info in sorted(self.versions.items())},
            "previous": list(self.previous),
            "history": [dict(h) for h in self.history],
        }


@dataclass
class ReleaseState:
    """Every released task of one repository."""

    seq: int = 0  # one more per commit; the journal's operation is committed once reached
    tasks: dict[str, TaskState] = field(default_factory=dict)
    format: str = FORMAT
    extra: dict[str, Any] = field(default_factory=dict)

    def problems(self) -> list[str]:
        return [p for name, t in sorted(self.tasks.items()) for p in t.problems(name)]

    def task(self, name: str) -> TaskState:
        t = self.tasks.get(name)
        if t is None:
            raise ReleaseError(f"task '{name}' has no release")
        return t

    @classmethod
    def from_dict(cls, data: Any, where: str = "state") -> ReleaseState:
        d = _mapping(data, where)
        fmt = d.get("format", FORMAT)
        if fmt != FORMAT:
            raise ReleaseError(f"{where}: format {fmt!r}, not {FORMAT}")
        tasks = _mapping(d.get("tasks", {}), f"{where}.tasks")
        return cls(
            seq=_int(d.get("seq", 0), f"{where}.seq"),
            tasks={str(k): TaskState.from_dict(v, f"{where}.tasks.{k}") for k, v in tasks.items()},
            extra=_unknown(d, cls),
        )

    def to_dict(self) -> dict[str, Any]:
        tasks = {name: t.to_dict() for name, t in sorted(self.tasks.items())}
        return {**self.extra, "format": self.format, "seq": self.seq, "tasks": tasks}


def check_invariants(state: ReleaseState | Mapping[str, Any]) -> list[str]:
    """Every broken rule of a state (empty: consistent); tests and recovery use it."""
    typed = state if isinstance(state, ReleaseState) else ReleaseState.from_dict(state)
    return typed.problems()


# --- files ---------------------------------------------------------------------------------


def read_state(path: Path) -> ReleaseState:
    """The state at ``path`` (empty when there is none); ``ReleaseError`` naming what is
    wrong when it does not parse or breaks a rule."""
    if not path.is_file():
        return ReleaseState()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"{path}: release state unreadable ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReleaseError(f"{path}: not a {FORMAT} state file")
    state = ReleaseState.from_dict(data, where=str(path))
    bad = state.problems()
    if bad:
        raise ReleaseError(f"{path}: inconsistent release state: " + "; ".join(bad))
    return state


def write_state(path: Path, state: ReleaseState) -> None:
    """Atomically replace the state file; an inconsistent state is refused, not written."""
    bad = state.problems()
    if bad:
        raise ReleaseError("refusing to write an inconsistent state: " + "; ".join(bad))
    write_json_atomic(path, state.to_dict())


def write_json_atomic(path: Path, data: Any) -> None:
    """Temp file + fsync + rename + fsync of the directory: the old or the new, never half."""
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a failed write leaves no partial file behind
        raise
    fsync_dir(path.parent)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- field readers: a wrong type names its key ------------------------------------------------


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ReleaseError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _list(d: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = d.get(key, [])
    if not isinstance(value, list):
        raise ReleaseError(f"{where}.{key}: expected a list, got {type(value).__name__}")
    return value


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ReleaseError(f"{where}: expected a version number, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise ReleaseError(f"{where}: expected a version number, got {value!r}") from None


def _int_key(key: Any, where: str) -> int:
    number = _int(key, where)
    if number < 1:
        raise ReleaseError(f"{where}: version {key!r} is not a number >= 1")
    return number


def _number(d: Mapping[str, Any], key: str, where: str, default: float | None) -> float | None:
    value = d.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReleaseError(f"{where}.{key}: expected a number, got {value!r}")
    return float(value)


def _str(d: Mapping[str, Any], key: str, where: str, default: str) -> str:
    value = d.get(key, default)
    if not isinstance(value, str):
        raise ReleaseError(f"{where}.{key}: expected a string, got {value!r}")
    return value


def _unknown(d: Mapping[str, Any], cls: type) -> dict[str, Any]:
    known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    return {k: v for k, v in d.items() if k not in known}

"""The release manager (``Releases``): every version of every task in one repository; every
operation (add, promote, rollback) with crash-safe writes.

A mutating operation (add, promote, rollback) is: (1) its intent to ``journal.json``
(atomic); (2) the idempotent Triton work (copy, verify, build, load); (3) the commit, the new
``state.json`` renamed into place; (4) unload retired versions; (5) the journal deleted. On
open, a journal whose ``seq`` the state has reached is finished (step 4 again); one it has
not reached is undone (an unfinished add's files removed). ``TEXTGATE_RELEASE_CRASH_AFTER=
op:k`` makes the process ``os._exit`` after step k of op (tests only). One writer at a time:
every write holds an ``flock`` on ``.textgate-release/lock``.

Past 400 lines because one class holds one protocol: each operation's steps, the journal
and the commit are read together when checking crash consistency (docs/lifecycle.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from textgate import bundle, names
from textgate.config import ReleaseConfig, RepositoryConfig
from textgate.errors import GateFailed, InvalidInput, ModelLoadError, ReleaseError, TritonError
from textgate.release import install
from textgate.release.gate import Comparison, Infer
from textgate.release.picker import STATE_DIR
from textgate.release.shadow import ShadowLog
from textgate.release.state import (
    KEYS,
    ReleaseState,
    TaskState,
    VersionInfo,
    fsync_dir,
    read_state,
    write_json_atomic,
    write_state,
)
from textgate.triton.control import ModelControl

CRASH_ENV = "TEXTGATE_RELEASE_CRASH_AFTER"


def crash_point(op: str, step: int) -> None:
    """Test hook: die here, like a kill -9, when TEXTGATE_RELEASE_CRASH_AFTER=op:step."""
    if os.environ.get(CRASH_ENV) == f"{op}:{step}":
        os._exit(77)


class Releases:
    """The versions of every task in one model repository; all writes are crash-safe."""

    def __init__(
        self,
        repo: Path | str,
        settings: ReleaseConfig | None = None,
        *,
        repository: RepositoryConfig | None = None,
        control: ModelControl | None = None,
        recover: bool = True,
    ) -> None:
        self.repo = Path(repo).resolve()
        self.settings = settings or ReleaseConfig()
        self.repository = repository or RepositoryConfig()
        self.control = control
        self.dir = self.repo / STATE_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self.state_path = self.dir / "state.json"
        self.journal_path = self.dir / "journal.json"
        self.shadow_log = ShadowLog(self.dir / "shadow", self.settings.shadow_log_max)
        self.on_commit: Callable[[ReleaseState], None] = lambda _s: None
        if recover:
            with self._locked():
                self._recover()

    # --- reading ---------------------------------------------------------------------

    @property
    def state(self) -> ReleaseState:
        return read_state(self.state_path)

    def task(self, task: str) -> dict[str, Any]:
        """The task's state as JSON (what the admin API and the CLI answer with)."""
        return self.task_state(task).to_dict()

    def task_state(self, task: str) -> TaskState:
        t = self.state.tasks.get(task)
        if t is None:
            raise ReleaseError(f"task '{task}' has no release in {self.repo}")
        return t

    def list_versions(self, task: str | None = None) -> list[dict[str, Any]]:
        """One row per version: hash, metrics, variant, state, load status."""
        states = self._model_states()
        rows = []
        for name, t in sorted(self.state.tasks.items()):
            if task is not None and name != task:
                continue
            for v, info in sorted(t.versions.items()):
                model = names.version_ensemble(name, v)
                rows.append(
                    {
                        "task": name,
                        "version": v,
                        "model": model,
                        "state": t.version_state(v),
                        "bundle_hash": info.bundle_hash,
                        "variant": info.variant,
                        "metrics": dict(info.metrics),
                        "load": _load_status(states, model),
                        "added": info.added,
                    }
                )
        return rows

    def _model_states(self) -> Mapping[str, Any] | None:
        if self.control is None:
            return None
        try:
            return self.control.model_states()
        except TritonError:
            return None

    # --- add -------------------------------------------------------------------------

    def add(self, bundle_dir: Path | str, task: str) -> dict[str, Any]:
        """Verify, copy in as the next version, load beside the serving one. Traffic: same."""
        names.check_task(task)
        src = Path(bundle_dir)
        manifest = bundle.verify(src)  # BundleError names the bad file; nothing changed yet
        current = self.state.tasks.get(task)
        install.check_bundle(
            src, manifest, task, current.versions[current.serving] if current else None
        )
        with self._locked():
            state = self.state
            t = state.tasks.get(task)
            version = 1 + max([0, *(t.versions if t else ())])
            self._journal({"op": "add", "task": task, "version": version, "seq": state.seq + 1})
            try:
                crash_point("add", 1)
                info = install.install(self.repo, self.dir, self.repository, src, task, version)
                crash_point("add", 2)
                self._load(task, version)
                crash_point("add", 3)
                self._with_version(state, task, version, info)
                self._commit(state, "add", task, version=version)
            except Exception:
                # A failed add (bad copy, model that does not load) is undone now and its
                # journal removed: left behind, it made every later operation a 409.
                self._undo_add(task, version)
                self._finish()
                raise
            crash_point("add", 4)
            self._unload_retired(state)
            self._finish()
        model = names.version_ensemble(task, version)
        return {"task": task, "version": version, "model": model, **_info_json(info)}

    def _undo_add(self, task: str, version: int) -> None:
        self._unload(install.version_models(self.repo, task, version))
        install.remove_models(self.repo, task, version)
        install.remove_bundle(self.dir, task, version)

    def verify_installed(self, task: str, version: int) -> None:
        """The installed bundle's manifest is the one recorded at add (BundleError if not)."""
        t = self.state.tasks.get(task)
        info = t.versions.get(version) if t is not None else None
        install.verify_installed(self.dir, task, version, info)

    def _with_version(
        self, state: ReleaseState, task: str, version: int, info: VersionInfo
    ) -> None:
        t = state.tasks.get(task)
        if t is None:  # the first version serves at once: there is nothing to compare it to
            t = state.tasks[task] = TaskState(serving=version, key=self.settings.canary_key)
        elif t.candidate is None or t.mode == "standby":
            # A running canary or shadow keeps its candidate: an add never moves traffic.
            t.candidate = version
        info.retired, info.active = False, time.time()
        t.versions[version] = info
        self._retire(t)

    # --- traffic modes ---------------------------------------------------------------

    def canary(self, task: str, percent: float, key: str | None = None) -> dict[str, Any]:
        """A sticky ``percent`` of traffic (hash of ``key``) to the candidate."""
        if not 0 <= percent <= 100:
            raise ReleaseError(f"canary percent {percent} is outside 0..100")
        key = key or self.settings.canary_key
        if key not in KEYS:
            raise ReleaseError(f"canary key {key!r} is not one of {', '.join(KEYS)}")
        return self._set_mode(task, "canary", percent=float(percent), key=key)

    def shadow(self, task: str) -> dict[str, Any]:
        """Every request also goes to the candidate, asynchronously; answers unaffected."""
        return self._set_mode(task, "shadow")

    def standby(self, task: str, reason: str = "") -> dict[str, Any]:
        """Stop canary/shadow: the candidate stays loaded, takes no traffic."""
        return self._set_mode(task, "standby", reason=reason)

    def _set_mode(
        self, task: str, mode: str, *, percent: float = 0.0, key: str | None = None,
        reason: str = "",
    ) -> dict[str, Any]:  # fmt: skip
        with self._locked():
            state = self.state
            t = state.task(task)
            if t.candidate is None and mode != "standby":
                raise ReleaseError(
                    f"{task} has no candidate version", hint="textgate release add first"
                )
            t.mode, t.percent = mode, percent
            t.key = key or t.key
            self._commit(state, mode, task, version=t.candidate, reason=reason)
        return self.task(task)

    # --- promote / rollback ----------------------------------------------------------

    def promote(self, task: str, *, force: bool = False, reason: str = "") -> dict[str, Any]:
        """Candidate -> serving at once; refused unless its compare gate passed (or force)."""
        t = self.task_state(task)
        cand = t.candidate
        if cand is None:
            raise ReleaseError(f"{task} has no candidate version to promote")
        gate = t.versions[cand].gate
        if not (gate and gate.get("passed")):
            if not force:
                why = gate.get("reasons") if gate else "compare has not run"
                raise GateFailed(
                    f"promote of {task} v{cand} refused: gate failed ({why})",
                    hint="textgate release compare, or --force --reason TEXT",
                )
            if not reason.strip():
                raise GateFailed("--force needs --reason TEXT (it is logged)")
        return self._switch(task, "promote", cand, force=force, reason=reason)

    def rollback(self, task: str, *, reason: str = "") -> dict[str, Any]:
        """Back to the previous serving version that is still loadable."""
        t = self.task_state(task)
        back = [v for v in t.previous if t.is_live(v)]
        if not back:
            raise ReleaseError(f"{task} has no previous version that is still loadable")
        return self._switch(task, "rollback", back[-1], reason=reason)

    def _switch(
        self, task: str, op: str, to: int, *, force: bool = False, reason: str = ""
    ) -> dict[str, Any]:
        with self._locked():
            state = self.state
            t = state.task(task)
            old = t.serving
            self._journal({"op": op, "task": task, "version": to, "seq": state.seq + 1})
            crash_point(op, 1)
            self._load(task, to)  # idempotent: already loaded beside the serving one
            crash_point(op, 2)
            self._apply_switch(t, op, old, to)
            self._commit(state, op, task, version=to, reason=reason, forced=force, previous=old)
            crash_point(op, 3)
            self._unload_retired(state)
            crash_point(op, 4)
            self._finish()
        return self.task(task)

    def _apply_switch(self, t: TaskState, op: str, old: int, to: int) -> None:
        now = time.time()
        if op == "promote":
            t.previous = [v for v in t.previous if v != old] + [old]
        else:
            t.previous = [v for v in t.previous if v != to]
        # After a rollback the version left behind is the candidate (standby) unless there
        # is one: it is the one to compare, fix or canary again.
        cand = (t.candidate or old) if op == "rollback" else None
        t.serving, t.candidate = to, None if cand == to else cand
        t.mode, t.percent = "standby", 0.0
        t.versions[to].active = now
        t.versions[old].active = now
        self._retire(t)

    def _retire(self, t: TaskState) -> None:
        """Keep serving, candidate and the most recently active versions up to the limit."""
        pinned = {t.serving, t.candidate}
        live = [(v, i) for v, i in t.versions.items() if not i.retired]
        ranked = sorted(live, key=lambda vi: (vi[0] not in pinned, -vi[1].active))
        for v, info in ranked[self.settings.keep_loadable :]:
            if v not in pinned:
                info.retired = True
        t.previous = [v for v in t.previous if t.is_live(v)]

    # --- compare ---------------------------------------------------------------------

    def record_shadow(self, task: str, row: Mapping[str, Any]) -> None:
        """Append one shadowed text (the gateway calls this); the log rotates at its bound."""
        self.shadow_log.record(task, row)

    def compare(
        self,
        task: str,
        infer: Infer,
        *,
        data: Path | str | None = None,
        feedback: Path | str | None = None,
    ) -> dict[str, Any]:
        """Run serving and candidate on the shadow log (+ a labelled file); gate; save.

        ``feedback`` (a feedback store) adds both versions' accuracy on the operators'
        corrections beside the gate: reported, not gating (a handful of corrections is noise).
        """
        comparison = Comparison(task, self.task_state(task), infer, self.settings)
        cand = comparison.candidate
        report = comparison.run(self.shadow_log, Path(data) if data is not None else None)
        if feedback is not None:
            report["feedback"] = comparison.feedback_accuracy(Path(feedback))
        serving = comparison.t.serving
        report.update(task=task, serving=serving, candidate=cand, time=time.time())
        self._save_report(task, cand, report)
        return report

    def _save_report(self, task: str, cand: int, report: dict[str, Any]) -> None:
        out = (
            self.dir
            / "reports"
            / f"{names.version_ensemble(task, cand)}_compare_{int(report['time'])}.json"
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out, report)
        report["report"] = out.relative_to(self.repo).as_posix()
        with self._locked():
            state = self.state
            t = state.task(task)
            if t.candidate != cand:
                raise ReleaseError(f"{task}: the candidate changed while comparing")
            keys = ("passed", "reasons", "agreement", "n", "f1_serving", "f1_candidate", "samples")
            t.versions[cand].gate = {k: report.get(k) for k in keys} | {"report": report["report"]}
            self._commit(state, "compare", task, version=cand, reason=str(report["reasons"]))

    # --- gc / reconcile --------------------------------------------------------------

    def gc(self) -> list[str]:
        """Delete the files of retired versions (their models are unloaded already)."""
        removed = []
        with self._locked():
            state = self.state
            for task, t in state.tasks.items():
                for v, info in t.versions.items():
                    if info.retired and not info.collected:
                        self._unload(install.version_models(self.repo, task, v))
                        install.remove_models(self.repo, task, v)
                        shutil.rmtree(install.bundle_dir(self.dir, task, v), ignore_errors=True)
                        info.collected = True
                        removed.append(names.version_ensemble(task, v))
            if removed:
                self._commit(state, "gc", None, reason=", ".join(removed))
        return removed

    def loadable(self) -> list[str]:
        """Every Triton model that should be loaded: all versions not retired."""
        out = []
        for task, t in self.state.tasks.items():
            for v, info in t.versions.items():
                if not info.retired:
                    out += install.version_models(self.repo, task, v)
        return out

    def reconcile(self) -> dict[str, list[str]]:
        """Make Triton match the state: load what should be, unload retired versions."""
        if self.control is None:
            return {"loaded": [], "unloaded": []}
        states = self.control.model_states()
        state = self.state
        loaded = []
        for task, t in state.tasks.items():
            for v, info in t.versions.items():
                if info.retired:
                    continue
                install.verify_installed(self.dir, task, v, info)  # a changed one stays out
                models = install.version_models(self.repo, task, v)
                loaded += [m for m in models if _ready(states, m) is False]
        for name in loaded:
            self.control.load_model(name)
        unloaded = []
        for task, t in state.tasks.items():
            for v, info in t.versions.items():
                if info.retired:
                    models = install.version_models(self.repo, task, v)
                    names_ready = [m for m in models if _ready(states, m)]
                    self._unload(names_ready)
                    unloaded += names_ready
        return {"loaded": loaded, "unloaded": unloaded}

    # --- internals -------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # One writer at a time across processes (CLI and gateway share a repository).
        with open(self.dir / "lock", "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _journal(self, intent: dict[str, Any]) -> None:
        if self.journal_path.exists():
            raise ReleaseError(f"{self.journal_path}: another operation is unfinished")
        write_json_atomic(self.journal_path, {**intent, "time": time.time()})

    def _finish(self) -> None:
        self.journal_path.unlink(missing_ok=True)
        fsync_dir(self.dir)

    def _commit(self, state: ReleaseState, op: str, task: str | None, **record: Any) -> None:
        state.seq += 1
        if task is not None:
            entry = {"seq": state.seq, "time": time.time(), "op": op, **record}
            state.task(task).record(entry)
        write_state(self.state_path, state)  # refuses an inconsistent state
        self.on_commit(state)

    def _recover(self) -> None:
        if not self.journal_path.is_file():
            return
        try:
            intent = json.loads(self.journal_path.read_text(encoding="utf-8"))
        except ValueError:  # the journal itself is written atomically; be safe anyway
            intent = {}
        if not isinstance(intent, dict):
            intent = {}
        state = self.state
        committed = state.seq >= _int_or(intent.get("seq"), 1 << 62)
        if intent.get("op") == "add" and not committed:
            try:  # a journal naming "../x" or "*" must not steer a delete
                task, version = names.check_task(intent.get("task")), int(intent["version"])
            except (InvalidInput, KeyError, TypeError, ValueError):
                task, version = "", 0
            if task and version > 0:
                self._undo_add(task, version)
        if committed:
            self._unload_retired(state)
        self._finish()

    def _load(self, task: str, version: int) -> None:
        if self.control is None:
            return
        models = install.version_models(self.repo, task, version)
        try:
            for name in models:
                self.control.load_model(name)
        except ModelLoadError:
            self._unload(models)
            raise

    def _unload(self, models: Sequence[str]) -> None:
        if self.control is None:
            return
        for name in reversed(models):  # the ensemble before its steps
            with contextlib.suppress(TritonError):
                self.control.unload_model(name)

    def _unload_retired(self, state: ReleaseState) -> None:
        for task, t in state.tasks.items():
            for v, info in t.versions.items():
                if info.retired and not info.collected:
                    self._unload(install.version_models(self.repo, task, v))


def _info_json(info: VersionInfo) -> dict[str, Any]:
    """What ``add`` answers: the recorded fields of the new version."""
    out = info.to_dict()
    for key in ("retired", "active"):
        out.pop(key, None)
    return out


def _int_or(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _ready(states: Mapping[str, Any] | None, name: str) -> bool | None:
    if states is None:
        return None
    s = states.get(name)
    return s is not None and getattr(s, "state", "") == "READY"


def _load_status(states: Mapping[str, Any] | None, name: str) -> str:
    if states is None:
        return "unknown"
    s = states.get(name)
    return "not loaded" if s is None else str(getattr(s, "state", "") or "UNAVAILABLE")

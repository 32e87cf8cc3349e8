"""Model versions of a task: add, canary, shadow, compare, promote, rollback, gc.

Every version N of task T is its own set of Triton models, ``T_vN`` (ensemble) with
``T_vN_tokenize``, ``T_vN_model``, ``T_vN_postprocess`` (each at Triton version 1): Triton
ensembles are unversioned and unloading a member unloads its ensemble, so versions that share
names cannot serve side by side. Which version answers is the gateway's choice, read from one
state file; a switch is one atomic rename of that file (docs/lifecycle.md).

    REPO/T_vN*/                       the version's Triton models (built from the copy below)
    REPO/.textgate-release/state.json which version serves, canary %, shadow, history
    REPO/.textgate-release/journal.json  the operation in progress (crash recovery)
    REPO/.textgate-release/bundles/T/N/  the verified copy of the version's bundle
    REPO/.textgate-release/shadow/T.jsonl texts scored by serving and candidate (compare)
    REPO/.textgate-release/reports/   compare reports

Crash safety: a mutating operation writes its intent to the journal, does its idempotent
Triton work, then commits by renaming the new state into place. On open, a journal whose
operation was committed is finished (retired models unloaded); one that was not is undone
(orphan files removed). Either way exactly one version serves. The environment variable
``TEXTGATE_RELEASE_CRASH_AFTER=op:k`` makes the process ``os._exit`` after step k of op
(tests only).

A low-layer module: errors, config, bundle, repository and triton only — never the gateway.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import math
import os
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from textgate import bundle
from textgate.config import ReleaseConfig, RepositoryConfig
from textgate.errors import (
    BundleError,
    GateFailed,
    InvalidInput,
    ModelLoadError,
    ReleaseError,
    TritonError,
)
from textgate.triton import API_KEY_HEADER  # the header of Triton's restricted API

STATE_DIR = ".textgate-release"
FORMAT = "textgate-release/1"
CRASH_ENV = "TEXTGATE_RELEASE_CRASH_AFTER"
KEYS = ("tenant", "sender", "request_id")
STEPS = ("tokenize", "model", "postprocess")

Infer = Callable[[str, Sequence[str]], np.ndarray]  # (ensemble, texts) -> probabilities


class ModelControl(Protocol):
    """What releases need from Triton: ``TritonServer`` and ``HttpControl`` both fit."""

    def load_model(self, name: str) -> None: ...
    def unload_model(self, name: str) -> None: ...
    def model_states(self) -> Mapping[str, Any]: ...  # name -> object with ``.state``


# --- names ---------------------------------------------------------------------------------

# One pattern for a released task's name, wherever one arrives (API, CLI, a bundle's
# manifest, the journal): it becomes a directory and a Triton model name, so no "/", "..",
# glob characters or upper case. A manifest with task "../../../escape" wrote files outside
# the repository; "*" made a glob delete every serving spam_v1_* model.
TASK_PATTERN = r"[a-z0-9][a-z0-9_-]{0,63}"
_TASK = re.compile(TASK_PATTERN)


def check_task(task: object, *, field: str = "task") -> str:
    """``task`` when it is a valid task name, else an ``InvalidInput`` (a 422) naming it."""
    if not isinstance(task, str) or not _TASK.fullmatch(task):
        shown = repr(task)[:80]
        raise InvalidInput(
            f"{shown} is not a task name (lower-case letters, digits, '_' and '-'; "
            "at most 64; starting with a letter or digit)",
            field=field,
            reason="invalid_name",
        )
    return task


def ensemble(task: str, version: int) -> str:
    return f"{task}_v{version}"


def version_models(repo: Path, task: str, version: int) -> list[str]:
    """The version's Triton models, in load order (steps before ensembles)."""
    base = ensemble(task, version)
    names = sorted(p.parent.name for p in repo.glob(f"{glob.escape(base)}_*/config.pbtxt"))
    steps = [n for n in names if not n.endswith("_fp32")]
    fp32 = [n for n in names if n.endswith("_fp32")]
    tail = [base] if (repo / base / "config.pbtxt").is_file() else []
    return steps + tail + fp32


def parse_ensemble(name: str) -> tuple[str, int] | None:
    """``spam_v3`` -> ("spam", 3); anything else -> None."""
    task, sep, num = name.rpartition("_v")
    return (task, int(num)) if sep and task and num.isdigit() else None


# --- atomic files --------------------------------------------------------------------------


def write_json_atomic(path: Path, data: Any) -> None:
    """Temp file + fsync + rename + fsync of the directory: the old or the new, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def crash_point(op: str, step: int) -> None:
    """Test hook: die here, like a kill -9, when TEXTGATE_RELEASE_CRASH_AFTER=op:step."""
    if os.environ.get(CRASH_ENV) == f"{op}:{step}":
        os._exit(77)


def empty_state() -> dict[str, Any]:
    return {"format": FORMAT, "seq": 0, "tasks": {}}


def read_state(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return empty_state()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"{path}: release state unreadable ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ReleaseError(f"{path}: not a {FORMAT} state file")
    return data


def check_invariants(state: Mapping[str, Any]) -> list[str]:
    """Every broken rule of a state (empty: consistent); tests and recovery use it."""
    bad = []
    for task, t in state.get("tasks", {}).items():
        versions = t.get("versions", {})
        serving = t.get("serving")
        if str(serving) not in versions or versions[str(serving)].get("retired"):
            bad.append(f"{task}: serving version {serving} is not a live version")
        cand = t.get("candidate")
        if cand is not None and (cand == serving or str(cand) not in versions):
            bad.append(f"{task}: candidate {cand} is not a live version other than serving")
        if t.get("mode") not in ("standby", "canary", "shadow"):
            bad.append(f"{task}: mode {t.get('mode')!r}")
    return bad


# --- routing (read by the gateway on every request) -----------------------------------------


def bucket(task: str, key: str) -> float:
    """A stable number in [0, 100) per (task, key): the same key always lands the same way."""
    digest = hashlib.sha256(f"{task}\0{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 * 100.0


def pick(state: Mapping[str, Any], task: str, key: str) -> int | None:
    """The version that answers this request, or None when the task is not released."""
    t = state.get("tasks", {}).get(task)
    if t is None:
        return None
    cand = t.get("candidate")
    if cand is not None and t.get("mode") == "canary" and bucket(task, key) < t["percent"]:
        return int(cand)
    return int(t["serving"])


def shadow_target(state: Mapping[str, Any], task: str) -> int | None:
    t = state.get("tasks", {}).get(task) or {}
    return t.get("candidate") if t.get("mode") == "shadow" else None


class StateView:
    """The gateway's view of the state file: re-read when the file changes (cheap stat)."""

    def __init__(self, repo: Path, *, min_interval_s: float = 0.2) -> None:
        self.path = Path(repo) / STATE_DIR / "state.json"
        self.min_interval_s = min_interval_s
        self.state: dict[str, Any] = empty_state()
        self._stamp: tuple[int, int, int] | None = None
        self._checked = 0.0
        self.refresh(force=True)

    def refresh(self, *, force: bool = False) -> dict[str, Any]:
        now = time.monotonic()
        if not force and now - self._checked < self.min_interval_s:
            return self.state
        self._checked = now
        with contextlib.suppress(FileNotFoundError):
            st = self.path.stat()
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            if stamp != self._stamp:
                # One reference swap: a request sees the old state or the new, never a mix.
                self.state = read_state(self.path)
                self._stamp = stamp
        return self.state

    def set(self, state: dict[str, Any]) -> None:
        """The in-memory swap after this process committed a new state."""
        self.state = state
        self._stamp = None

    def tasks(self) -> list[str]:
        return sorted(self.refresh().get("tasks", {}))

    def pick(self, task: str, key: str) -> int | None:
        return pick(self.refresh(), task, key)

    def shadow(self, task: str) -> int | None:
        return shadow_target(self.refresh(), task)

    def canary_key(self, task: str) -> str:
        t = self.refresh().get("tasks", {}).get(task) or {}
        return str(t.get("key") or "request_id")


# --- Triton model control over HTTP ----------------------------------------------------------


class _State:
    def __init__(self, state: str, reason: str = "") -> None:
        self.state, self.reason = state, reason


class HttpControl:
    """Model control of a running Triton over its HTTP endpoint (loopback; optional key)."""

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 120.0) -> None:
        self.url = url if url.startswith("http") else f"http://{url}"
        self.headers = {API_KEY_HEADER: api_key} if api_key else {}
        self.timeout_s = timeout_s

    def _post(self, path: str) -> Any:
        req = urllib.request.Request(
            self.url + path, data=b"{}", method="POST", headers=self.headers
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                text = resp.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            raise TritonError(
                f"Triton {path}: HTTP {exc.code}: {exc.read().decode('utf-8', 'replace')}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise TritonError(f"Triton at {self.url} unreachable: {exc}") from None
        return json.loads(text) if text else {}

    def load_model(self, name: str) -> None:
        try:
            self._post(f"/v2/repository/models/{_quote(name)}/load")
        except TritonError as exc:
            raise ModelLoadError(name, f"  reason: {exc.message}") from None

    def unload_model(self, name: str) -> None:
        self._post(f"/v2/repository/models/{_quote(name)}/unload")

    def model_states(self) -> dict[str, Any]:
        return {
            e.get("name", ""): _State(e.get("state", ""), e.get("reason", ""))
            for e in self._post("/v2/repository/index")
        }


def _quote(name: str) -> str:
    # A model name from the admin API must not reach another path of Triton's API.
    return urllib.parse.quote(name, safe="")


def http_infer(url: str) -> Infer:
    """``Infer`` over Triton's HTTP inference API (KServe v2 JSON), for an offline compare."""
    base = url if url.startswith("http") else f"http://{url}"

    def infer(model: str, texts: Sequence[str]) -> np.ndarray:
        body = {
            "inputs": [
                {"name": "text", "shape": [len(texts), 1], "datatype": "BYTES", "data": list(texts)}
            ],
            "outputs": [{"name": "probabilities"}],
        }
        req = urllib.request.Request(
            f"{base}/v2/models/{model}/infer",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                out = json.loads(resp.read())
        except (urllib.error.URLError, OSError) as exc:
            raise TritonError(f"Triton {model} infer failed: {exc}") from None
        probs = out["outputs"][0]
        return np.asarray(probs["data"], np.float32).reshape(probs["shape"])

    return infer


# --- the release store -----------------------------------------------------------------------


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
        self.on_commit: Callable[[dict[str, Any]], None] = lambda _s: None
        if recover:
            with self._locked():
                self._recover()

    # --- reading ---------------------------------------------------------------------

    @property
    def state(self) -> dict[str, Any]:
        return read_state(self.state_path)

    def task(self, task: str) -> dict[str, Any]:
        t = self.state["tasks"].get(task)
        if t is None:
            raise ReleaseError(f"task '{task}' has no release in {self.repo}")
        return dict(t)

    def list_versions(self, task: str | None = None) -> list[dict[str, Any]]:
        """One row per version: hash, metrics, variant, state, load status."""
        states = self._model_states()
        rows = []
        for name, t in sorted(self.state["tasks"].items()):
            if task is not None and name != task:
                continue
            for v, info in sorted(t["versions"].items(), key=lambda kv: int(kv[0])):
                rows.append(
                    {
                        "task": name,
                        "version": int(v),
                        "model": ensemble(name, int(v)),
                        "state": version_state(t, int(v)),
                        "bundle_hash": info["bundle_hash"],
                        "variant": info["variant"],
                        "metrics": info.get("metrics", {}),
                        "load": _load_status(states, ensemble(name, int(v))),
                        "added": info.get("added"),
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
        check_task(task)
        src = Path(bundle_dir)
        manifest = bundle.verify(src)  # BundleError names the bad file; nothing changed yet
        self._check_bundle(src, manifest, task)
        with self._locked():
            state = self.state
            t = state["tasks"].get(task)
            version = 1 + max([0, *(int(v) for v in (t or {}).get("versions", {}))])
            self._journal({"op": "add", "task": task, "version": version, "seq": state["seq"] + 1})
            try:
                crash_point("add", 1)
                info = self._install(src, task, version)
                crash_point("add", 2)
                self._load(task, version)
                crash_point("add", 3)
                state = self._with_version(state, task, version, info)
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
        return {"task": task, "version": version, "model": ensemble(task, version), **info}

    def _undo_add(self, task: str, version: int) -> None:
        self._unload(version_models(self.repo, task, version))
        self._remove_models(task, version)
        shutil.rmtree(self.dir / "bundles" / task / str(version), ignore_errors=True)
        shutil.rmtree(self.dir / "bundles" / task / f"{version}.tmp", ignore_errors=True)

    def _check_bundle(self, src: Path, manifest: Mapping[str, Any], task: str) -> None:
        if manifest.get("task") not in (None, task):
            raise BundleError(
                f"{src / bundle.MANIFEST}: bundle is task '{manifest.get('task')}', not '{task}'",
                file=bundle.MANIFEST,
            )
        t = self.state["tasks"].get(task)
        if t is None:
            return
        serving = t["versions"][str(t["serving"])]
        if list(manifest["labels"]) != list(serving["labels"]):
            raise BundleError(
                f"{src / bundle.MANIFEST}: labels {manifest['labels']} differ from the serving "
                f"version's {serving['labels']}",
                file=bundle.MANIFEST,
                hint="a new version must keep the label order; release it as a new task",
            )

    def _install(self, src: Path, task: str, version: int) -> dict[str, Any]:
        from textgate.repository import build  # heavy (protobuf); only adds need it

        dest = self.dir / "bundles" / task / str(version)
        tmp = dest.with_name(f"{version}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(src, tmp)
        manifest = bundle.verify(tmp)  # the copy, not the source: catches a bad transfer
        manifest_sha256 = bundle.sha256_file(tmp / bundle.MANIFEST)
        os.replace(tmp, dest)
        self._remove_models(task, version)  # leftovers of an add that crashed
        result = build([dest], self.repo, self.repository, suffix=f"_v{version}")
        spec = result.spec.tasks[0]
        return {
            "bundle_hash": hashlib.sha256(
                json.dumps(manifest["files"], sort_keys=True).encode()
            ).hexdigest(),
            "variant": spec.variant,
            "labels": list(spec.labels),
            "metrics": manifest.get("metrics", {}).get("test", {}),
            "models": list(result.models),
            "added": time.time(),
            # The manifest lists every file's hash but not its own: its hash lives here,
            # outside the bundle, and is checked before a version is loaded again.
            "manifest_sha256": manifest_sha256,
        }

    def verify_installed(self, task: str, version: int) -> None:
        """The installed bundle's manifest is the one recorded at add (BundleError if not)."""
        info = self.state["tasks"].get(task, {}).get("versions", {}).get(str(version), {})
        want = info.get("manifest_sha256")
        if not want:  # added before manifests were recorded
            return
        path = self.dir / "bundles" / task / str(version) / bundle.MANIFEST
        try:
            have = bundle.sha256_file(path)
        except OSError as exc:
            raise BundleError(
                f"{path}: cannot be read ({exc.strerror})", file=bundle.MANIFEST
            ) from exc
        if have != want:
            raise BundleError(
                f"{path}: changed since the version was added (sha256 {have[:12]}…, "
                f"recorded {want[:12]}…)",
                file=bundle.MANIFEST,
                hint="re-add the bundle as a new version; do not edit installed bundles",
            )

    def _with_version(
        self, state: dict[str, Any], task: str, version: int, info: dict[str, Any]
    ) -> dict[str, Any]:
        t = state["tasks"].get(task)
        if t is None:  # the first version serves at once: there is nothing to compare it to
            t = {"serving": version, "candidate": None, "mode": "standby", "percent": 0.0}
            t.update(key=self.settings.canary_key, versions={}, previous=[], history=[])
            state["tasks"][task] = t
        elif t.get("candidate") is None or t.get("mode") == "standby":
            # A running canary or shadow keeps its candidate: an add never moves traffic.
            t["candidate"] = version
        t["versions"][str(version)] = {**info, "retired": False, "active": time.time()}
        self._retire(t)
        return state

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
        return self._set_mode(task, "shadow", percent=0.0)

    def standby(self, task: str, reason: str = "") -> dict[str, Any]:
        """Stop canary/shadow: the candidate stays loaded, takes no traffic."""
        return self._set_mode(task, "standby", percent=0.0, reason=reason)

    def candidate(self, task: str, version: int) -> dict[str, Any]:
        """Pick which loaded version is the candidate (default: the newest added)."""
        with self._locked():
            state = self.state
            t = _task(state, task)
            self._live(t, task, version)
            if version == t["serving"]:
                raise ReleaseError(f"{task} v{version} is serving; it cannot be the candidate")
            t.update(candidate=version, mode="standby", percent=0.0)
            self._commit(state, "candidate", task, version=version)
        return self.task(task)

    def _set_mode(self, task: str, mode: str, *, reason: str = "", **extra: Any) -> dict[str, Any]:
        with self._locked():
            state = self.state
            t = _task(state, task)
            if t.get("candidate") is None and mode != "standby":
                raise ReleaseError(
                    f"{task} has no candidate version", hint="textgate release add first"
                )
            t.update(mode=mode, **extra)
            self._commit(state, mode, task, version=t.get("candidate"), reason=reason)
        return self.task(task)

    # --- promote / rollback ----------------------------------------------------------

    def promote(self, task: str, *, force: bool = False, reason: str = "") -> dict[str, Any]:
        """Candidate -> serving at once; refused unless its compare gate passed (or force)."""
        t = self.task(task)
        cand = t.get("candidate")
        if cand is None:
            raise ReleaseError(f"{task} has no candidate version to promote")
        gate = t["versions"][str(cand)].get("gate")
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
        t = self.task(task)
        back = [v for v in t["previous"] if not t["versions"][str(v)].get("retired")]
        if not back:
            raise ReleaseError(f"{task} has no previous version that is still loadable")
        return self._switch(task, "rollback", back[-1], reason=reason)

    def _switch(
        self, task: str, op: str, to: int, *, force: bool = False, reason: str = ""
    ) -> dict[str, Any]:
        with self._locked():
            state = self.state
            t = _task(state, task)
            old = t["serving"]
            self._journal({"op": op, "task": task, "version": to, "seq": state["seq"] + 1})
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

    def _apply_switch(self, t: dict[str, Any], op: str, old: int, to: int) -> None:
        now = time.time()
        if op == "promote":
            t["previous"] = [v for v in t["previous"] if v != old] + [old]
        else:
            t["previous"] = [v for v in t["previous"] if v != to]
        # After a rollback the version left behind is the candidate (standby) unless there
        # is one: it is the one to compare, fix or canary again.
        cand = (t.get("candidate") or old) if op == "rollback" else None
        t.update(serving=to, candidate=None if cand == to else cand, mode="standby", percent=0.0)
        t["versions"][str(to)]["active"] = now
        t["versions"][str(old)]["active"] = now
        self._retire(t)

    def _retire(self, t: dict[str, Any]) -> None:
        """Keep serving, candidate and the most recently active versions up to the limit."""
        live = [(v, i) for v, i in t["versions"].items() if not i.get("retired")]
        pinned = {str(t["serving"]), str(t.get("candidate"))}
        ranked = sorted(live, key=lambda vi: (vi[0] not in pinned, -vi[1].get("active", 0)))
        for v, info in ranked[self.settings.keep_loadable :]:
            if v not in pinned:
                info["retired"] = True
        t["previous"] = [v for v in t["previous"] if not t["versions"][str(v)].get("retired")]

    # --- compare ---------------------------------------------------------------------

    def record_shadow(self, task: str, row: Mapping[str, Any]) -> None:
        """Append one shadowed text (the gateway calls this); the log rotates at its bound."""
        path = self.dir / "shadow" / f"{task}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        if path.stat().st_size > self.settings.shadow_log_max * 512:
            lines = path.read_text(encoding="utf-8").splitlines()[-self.settings.shadow_log_max :]
            write_text_atomic(path, "\n".join(lines) + "\n")

    def shadow_texts(self, task: str) -> list[str]:
        path = self.dir / "shadow" / f"{task}.jsonl"
        if not path.is_file():
            return []
        out = []
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                text = json.loads(line).get("text")
                if isinstance(text, str):  # rows of events.store_text: false hold a hash only
                    out.append(text)
        return out[-self.settings.shadow_log_max :]

    def shadow_outputs(
        self, task: str, serving: int, candidate: int, n_labels: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Recorded (serving, candidate) probabilities of the text-less shadow rows that
        were made by this very pair of versions."""
        path = self.dir / "shadow" / f"{task}.jsonl"
        s_rows: list[list[float]] = []
        c_rows: list[list[float]] = []
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        for line in lines[-self.settings.shadow_log_max :]:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                row = json.loads(line)
                if isinstance(row.get("text"), str):
                    continue  # re-run by compare from its text
                pair = (int(row["serving"]), int(row["candidate"]))
                s, c = (
                    [float(x) for x in row["serving_probs"]],
                    [float(x) for x in row["candidate_probs"]],
                )
                if pair == (serving, candidate) and len(s) == len(c) == n_labels:
                    s_rows.append(s)
                    c_rows.append(c)
        shape = (len(s_rows), n_labels)
        return (
            np.asarray(s_rows, np.float32).reshape(shape),
            np.asarray(c_rows, np.float32).reshape(shape),
        )

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
        t = self.task(task)
        cand = t.get("candidate")
        if cand is None:
            raise ReleaseError(f"{task} has no candidate version to compare")
        labels = t["versions"][str(t["serving"])]["labels"]
        shadow = self.shadow_texts(task)
        # Rows kept without their text (events.store_text: false) carry both outputs of
        # the shadow copy: those answers are compared as recorded, not re-run.
        rec_s, rec_c = self.shadow_outputs(task, int(t["serving"]), int(cand), len(labels))
        rows = read_labelled(Path(data), labels) if data is not None else []
        texts = shadow + [r[0] for r in rows]
        rate = self.settings.compare_texts_per_s
        serving_p = _probs(infer, ensemble(task, t["serving"]), texts, len(labels), rate)
        cand_p = _probs(infer, ensemble(task, cand), texts, len(labels), rate)
        report = gate_report(
            np.concatenate([rec_s, serving_p]),
            np.concatenate([rec_c, cand_p]),
            [r[1] for r in rows],
            n_shadow=len(shadow) + len(rec_s),
            settings=self.settings,
            manifest_f1=(
                t["versions"][str(t["serving"])]["metrics"].get("f1"),
                t["versions"][str(cand)]["metrics"].get("f1"),
            ),
        )
        if feedback is not None:
            report["feedback"] = self._feedback_accuracy(task, infer, t, cand, Path(feedback))
        report.update(task=task, serving=t["serving"], candidate=cand, time=time.time())
        self._save_report(task, cand, report)
        return report

    def _feedback_accuracy(
        self, task: str, infer: Infer, t: dict[str, Any], cand: int, path: Path
    ) -> dict[str, Any]:
        from textgate import feedback as feedback_store

        labels = list(t["versions"][str(t["serving"])]["labels"])
        rows = [c for c in feedback_store.read_all(path, task) if c.label in labels]
        if not rows:
            return {"n": 0, "note": f"no corrections for {task} with a label in {labels}"}
        texts, gold = [c.text for c in rows], [labels.index(c.label) for c in rows]
        rate = self.settings.compare_texts_per_s
        out: dict[str, Any] = {"n": len(rows)}
        for name, version in (("serving", t["serving"]), ("candidate", cand)):
            pred = _probs(infer, ensemble(task, version), texts, len(labels), rate).argmax(axis=1)
            out[f"accuracy_{name}"] = float(np.mean(_agrees(pred, gold, labels)))
        return out

    def _save_report(self, task: str, cand: int, report: dict[str, Any]) -> None:
        out = self.dir / "reports" / f"{task}_v{cand}_compare_{int(report['time'])}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out, report)
        report["report"] = out.relative_to(self.repo).as_posix()
        with self._locked():
            state = self.state
            t = _task(state, task)
            if t.get("candidate") != cand:
                raise ReleaseError(f"{task}: the candidate changed while comparing")
            keys = ("passed", "reasons", "agreement", "n", "f1_serving", "f1_candidate")
            gate = {k: report.get(k) for k in keys} | {"report": report["report"]}
            t["versions"][str(cand)]["gate"] = gate
            self._commit(state, "compare", task, version=cand, reason=str(report["reasons"]))

    # --- gc / reconcile --------------------------------------------------------------

    def gc(self) -> list[str]:
        """Delete the files of retired versions (their models are unloaded already)."""
        removed = []
        with self._locked():
            state = self.state
            for task, t in state["tasks"].items():
                for v, info in t["versions"].items():
                    if info.get("retired") and not info.get("collected"):
                        self._unload(version_models(self.repo, task, int(v)))
                        self._remove_models(task, int(v))
                        shutil.rmtree(self.dir / "bundles" / task / v, ignore_errors=True)
                        info["collected"] = True
                        removed.append(ensemble(task, int(v)))
            if removed:
                self._commit(state, "gc", None, reason=", ".join(removed))
        return removed

    def loadable(self) -> list[str]:
        """Every Triton model that should be loaded: all versions not retired."""
        out = []
        for task, t in self.state["tasks"].items():
            for v, info in sorted(t["versions"].items(), key=lambda kv: int(kv[0])):
                if not info.get("retired"):
                    out += version_models(self.repo, task, int(v))
        return out

    def reconcile(self) -> dict[str, list[str]]:
        """Make Triton match the state: load what should be, unload retired versions."""
        if self.control is None:
            return {"loaded": [], "unloaded": []}
        states = self.control.model_states()
        loaded = []
        for task, t in self.state["tasks"].items():
            for v, info in sorted(t["versions"].items(), key=lambda kv: int(kv[0])):
                if info.get("retired"):
                    continue
                self.verify_installed(task, int(v))  # a changed manifest is not loaded
                loaded += [
                    m for m in version_models(self.repo, task, int(v)) if _ready(states, m) is False
                ]
        for name in loaded:
            self.control.load_model(name)
        unloaded = []
        for task, t in self.state["tasks"].items():
            for v, info in t["versions"].items():
                if info.get("retired"):
                    names = [
                        m for m in version_models(self.repo, task, int(v)) if _ready(states, m)
                    ]
                    self._unload(names)
                    unloaded += names
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

    def _live(self, t: Mapping[str, Any], task: str, version: int) -> None:
        info = t["versions"].get(str(version))
        if info is None or info.get("retired"):
            raise ReleaseError(f"{task} v{version} is not a live (non-retired) version")

    def _journal(self, intent: dict[str, Any]) -> None:
        if self.journal_path.exists():
            raise ReleaseError(f"{self.journal_path}: another operation is unfinished")
        write_json_atomic(self.journal_path, {**intent, "time": time.time()})

    def _finish(self) -> None:
        self.journal_path.unlink(missing_ok=True)
        _fsync_dir(self.dir)

    def _commit(
        self, state: dict[str, Any], op: str, task: str | None, **record: Any
    ) -> dict[str, Any]:
        state["seq"] = int(state["seq"]) + 1
        if task is not None:
            entry = {"seq": state["seq"], "time": time.time(), "op": op, **record}
            history = state["tasks"][task].setdefault("history", [])
            history.append({k: v for k, v in entry.items() if v not in (None, "", False)})
            del history[:-200]  # bounded: the file is rewritten on every operation
        bad = check_invariants(state)
        if bad:
            raise ReleaseError("refusing to write an inconsistent state: " + "; ".join(bad))
        write_json_atomic(self.state_path, state)
        self.on_commit(state)
        return state

    def _recover(self) -> None:
        if not self.journal_path.is_file():
            return
        try:
            intent = json.loads(self.journal_path.read_text(encoding="utf-8"))
        except ValueError:  # the journal itself is written atomically; be safe anyway
            intent = {}
        state = self.state
        committed = int(state["seq"]) >= int(intent.get("seq", 1 << 62))
        if intent.get("op") == "add" and not committed:
            try:  # a journal naming "../x" or "*" must not steer a delete
                task, version = check_task(intent.get("task")), int(intent["version"])
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
        names = version_models(self.repo, task, version)
        try:
            for name in names:
                self.control.load_model(name)
        except ModelLoadError:
            self._unload(names)
            raise

    def _unload(self, names: Sequence[str]) -> None:
        if self.control is None:
            return
        for name in reversed(names):  # the ensemble before its steps
            with contextlib.suppress(TritonError):
                self.control.unload_model(name)

    def _unload_retired(self, state: Mapping[str, Any]) -> None:
        for task, t in state["tasks"].items():
            for v, info in t["versions"].items():
                if info.get("retired") and not info.get("collected"):
                    self._unload(version_models(self.repo, task, int(v)))

    def _remove_models(self, task: str, version: int) -> None:
        for name in version_models(self.repo, task, version):
            shutil.rmtree(self.repo / name, ignore_errors=True)


def write_text_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _task(state: dict[str, Any], task: str) -> dict[str, Any]:
    t = state["tasks"].get(task)
    if t is None:
        raise ReleaseError(f"task '{task}' has no release")
    return t  # type: ignore[no-any-return]


def version_state(t: Mapping[str, Any], version: int) -> str:
    if t["versions"][str(version)].get("retired"):
        return "retired"
    if version == t["serving"]:
        return "serving"
    if version == t.get("candidate") and t.get("mode") == "canary":
        return f"canary {t['percent']:g} %"
    if version == t.get("candidate") and t.get("mode") == "shadow":
        return "shadow"
    return "standby"


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


# --- the gate ------------------------------------------------------------------------------


def read_labelled(path: Path, labels: Sequence[str]) -> list[tuple[str, int]]:
    """JSONL ``{"text", "label"}`` (the checkpoint's data/test.jsonl) -> (text, class id)."""
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ReleaseError(f"{path}: cannot read ({exc.strerror})") from None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            rows.append((str(row["text"]), list(labels).index(row["label"])))
        except (ValueError, KeyError, TypeError):
            raise ReleaseError(
                f"{path}: line {i} is not {{'text', 'label'}} with a label in {list(labels)}"
            ) from None
    return rows


def _agrees(pred: np.ndarray, gold: Sequence[int], labels: Sequence[str]) -> np.ndarray:
    """Correct per row; for a mail model only "ham or not" counts (a phish called spam is
    caught mail, as the operator's spam/ham correction means)."""
    gold_a = np.asarray(gold)
    if "ham" in labels:
        ham = list(labels).index("ham")
        return np.asarray((pred == ham) == (gold_a == ham))
    return np.asarray(pred == gold_a)


def _probs(
    infer: Infer, model: str, texts: Sequence[str], n_labels: int, rate: float = 0.0
) -> np.ndarray:
    """Batches of 8 texts, paced to ``rate`` texts/s (0: unpaced) to spare live traffic."""
    parts = []
    start = time.monotonic()
    for i in range(0, len(texts), 8):
        parts.append(infer(model, texts[i : i + 8]))
        if rate > 0:
            due = start + (i + 8) / rate  # when the next batch may start
            time.sleep(max(0.0, due - time.monotonic()))
    return np.concatenate(parts) if parts else np.zeros((0, n_labels), np.float32)


def f1(pred: np.ndarray, gold: Sequence[int], n_labels: int) -> float:
    """Binary: F1 of class 1 (the positive label); more classes: macro F1."""
    gold_a = np.asarray(gold)
    classes = [1] if n_labels == 2 else list(range(n_labels))
    scores = []
    for c in classes:
        tp = int(np.sum((pred == c) & (gold_a == c)))
        fp = int(np.sum((pred == c) & (gold_a != c)))
        fn = int(np.sum((pred != c) & (gold_a == c)))
        scores.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 1.0)
    return float(np.mean(scores))


def gate_report(
    serving: np.ndarray,
    candidate: np.ndarray,
    gold: Sequence[int],
    *,
    n_shadow: int,
    settings: ReleaseConfig,
    manifest_f1: tuple[Any, Any] = (None, None),
) -> dict[str, Any]:
    """Agreement and F1 of candidate vs serving; ``passed`` with every reason it did not."""
    n = len(serving)
    sp, cp = serving.argmax(axis=1), candidate.argmax(axis=1)
    agreement = float(np.mean(sp == cp)) if n else 0.0
    reasons = []
    if n < settings.min_compare_texts:
        reasons.append(f"only {n} texts compared (< {settings.min_compare_texts})")
    if agreement < settings.agreement_min:
        reasons.append(f"argmax agreement {agreement:.4f} < {settings.agreement_min}")
    f1_s = f1_c = None
    source = "none"
    if gold:
        k = serving.shape[1]
        f1_s, f1_c = f1(sp[-len(gold) :], gold, k), f1(cp[-len(gold) :], gold, k)
        source = "data"
    elif all(isinstance(x, int | float) for x in manifest_f1):
        f1_s, f1_c = float(manifest_f1[0]), float(manifest_f1[1])
        source = "bundle test metrics"
    if f1_s is not None and f1_c is not None and f1_c < f1_s - settings.f1_tolerance:
        reasons.append(f"F1 {f1_c:.4f} < serving {f1_s:.4f} - {settings.f1_tolerance}")
    return {
        "n": n,
        "n_shadow": n_shadow,
        "n_labelled": len(gold),
        "agreement": agreement,
        "agreement_min": settings.agreement_min,
        "f1_serving": f1_s,
        "f1_candidate": f1_c,
        "f1_source": source,
        "f1_tolerance": settings.f1_tolerance,
        "passed": not reasons,
        "reasons": reasons,
    }


# --- canary watch (automatic rollback) ------------------------------------------------------


def psi(expected: Sequence[float], actual: Sequence[float], bins: int = 10) -> float:
    """Population stability index of two score samples in [0, 1] (fixed-width bins)."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    e = np.histogram(np.clip(expected, 0, 1), edges)[0] / max(1, len(expected))
    a = np.histogram(np.clip(actual, 0, 1), edges)[0] / max(1, len(actual))
    e, a = np.maximum(e, 1e-4), np.maximum(a, 1e-4)  # empty bins would make it infinite
    return float(np.sum((a - e) * np.log(a / e)))


class CanaryWatch:
    """Outcomes per version while a canary runs; ``verdict`` says when to roll back."""

    def __init__(self, settings: ReleaseConfig, max_samples: int = 5000) -> None:
        self.settings = settings
        self.max_samples = max_samples
        self.samples: dict[int, dict[str, list[float]]] = {}

    def record(self, version: int, *, ok: bool, latency_s: float, score: float | None) -> None:
        s = self.samples.setdefault(version, {"ok": [], "latency": [], "score": []})
        s["ok"].append(1.0 if ok else 0.0)
        if ok:
            s["latency"].append(latency_s)
        if score is not None and math.isfinite(score):
            s["score"].append(score)
        for values in s.values():
            del values[: -self.max_samples]

    def reset(self) -> None:
        self.samples.clear()

    def stats(self, version: int) -> dict[str, float]:
        s = self.samples.get(version, {"ok": [], "latency": [], "score": []})
        n = len(s["ok"])
        return {
            "n": n,
            "error_rate": 1 - float(np.mean(s["ok"])) if n else 0.0,
            "p99_s": float(np.percentile(s["latency"], 99)) if s["latency"] else 0.0,
            "positive_rate": float(np.mean(np.asarray(s["score"]) >= 0.5)) if s["score"] else 0.0,
        }

    def verdict(self, serving: int, canary: int) -> str | None:
        """A reason to roll back, or None (also while either side has too few requests)."""
        cfg = self.settings
        a, b = self.stats(serving), self.stats(canary)
        if min(a["n"], b["n"]) < cfg.watch_min_requests:
            return None
        if b["error_rate"] - a["error_rate"] > cfg.max_error_rate_delta:
            return f"error rate {b['error_rate']:.3f} vs serving {a['error_rate']:.3f}"
        if a["p99_s"] > 0 and b["p99_s"] / a["p99_s"] > cfg.max_p99_ratio:
            return f"P99 {b['p99_s'] * 1000:.1f} ms vs serving {a['p99_s'] * 1000:.1f} ms"
        if abs(b["positive_rate"] - a["positive_rate"]) > cfg.max_positive_rate_delta:
            return f"positive rate {b['positive_rate']:.3f} vs serving {a['positive_rate']:.3f}"
        ss, cs = self.samples[serving]["score"], self.samples[canary]["score"]
        # PSI of two finite samples of one distribution is about (bins-1)(1/n1 + 1/n2), not
        # 0: judge the excess over that, or small canaries are rolled back for noise.
        noise = 9 * (1 / max(1, len(ss)) + 1 / max(1, len(cs)))
        value = psi(ss, cs) - noise
        if value > cfg.max_psi:
            return f"score PSI {value + noise:.3f} (noise {noise:.3f}) > {cfg.max_psi}"
        return None

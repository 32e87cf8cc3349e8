"""Which version answers a request: what the gateway reads on every request.

``StateView`` is the gateway's version picker (the ``VersionPicker`` shape its router
calls): ``tasks()``, ``pick(task, key)`` and ``canary_key(task)``. It re-reads the state file
when the file changed (a cheap stat, at most every ``min_interval_s``) and swaps one
reference, so a request sees the old state or the new, never a mix.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from pathlib import Path

from textgate.release.state import ReleaseState, read_state

STATE_DIR = ".textgate-release"


def bucket(task: str, key: str) -> float:
    """A stable number in [0, 100) per (task, key): the same key always lands the same way."""
    digest = hashlib.sha256(f"{task}\0{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 * 100.0


def pick(state: ReleaseState, task: str, key: str) -> int | None:
    """The version that answers this request, or None when the task is not released."""
    t = state.tasks.get(task)
    if t is None:
        return None
    if t.candidate is not None and t.mode == "canary" and bucket(task, key) < t.percent:
        return t.candidate
    return t.serving


class StateView:
    """The gateway's view of the state file: re-read when the file changes (cheap stat)."""

    def __init__(self, repo: Path | str, *, min_interval_s: float = 0.2) -> None:
        self.path = Path(repo) / STATE_DIR / "state.json"
        self.min_interval_s = min_interval_s
        self.state = ReleaseState()
        self._stamp: tuple[int, int, int] | None = None
        self._checked = 0.0
        self.refresh(force=True)

    def refresh(self, *, force: bool = False) -> ReleaseState:
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

    def set(self, state: ReleaseState) -> None:
        """The in-memory swap after this process committed a new state."""
        self.state = state
        self._stamp = None

    # --- what the gateway's router calls (gateway.routing's VersionPicker) -----------------

    def tasks(self) -> list[str]:
        """The released tasks: their ``T_vN`` ensembles are versions, not tasks."""
        return sorted(self.refresh().tasks)

    def pick(self, task: str, key: str) -> int | None:
        """The version that answers a request with canary key ``key``; None: not released."""
        return pick(self.refresh(), task, key)

    def canary_key(self, task: str) -> str:
        """What the canary of ``task`` hashes: ``tenant``, ``sender`` or ``request_id``."""
        t = self.refresh().tasks.get(task)
        return t.key if t is not None else "request_id"

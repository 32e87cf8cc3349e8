"""One SQLite file a store keeps its rows in: the plumbing the feedback and review stores share.

The file is opened in WAL mode with ``synchronous=FULL`` (a write that was answered
survives a power loss) and its schema created; one connection serves every thread, one
lock at a time, so the gateway can call it from ``asyncio.to_thread`` workers. Every
``sqlite3`` error becomes the store's own error naming the file, which the gateway maps to
one status (``errors.py``).

The outbox does not use this: it owns its connection in one writer thread (group commit)
and holds a per-process lock on its file.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from textgate.errors import FeedbackError


class SQLiteStore:
    """A store's SQLite file; ``error`` is the store's error class (message, ``path=``)."""

    def __init__(
        self, path: Path, *, ddl: str, schema_version: int, error: type[FeedbackError]
    ) -> None:
        self.path = Path(path)
        self._error = error
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(ddl)
            self._db.execute(f"PRAGMA user_version={schema_version}")
        except (sqlite3.Error, OSError) as exc:
            raise error(str(exc), path=self.path) from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _locked(self) -> Iterator[sqlite3.Connection]:
        """The connection, to this thread alone; its errors raised as the store's."""
        with self._lock:
            try:
                yield self._db
            except sqlite3.Error as exc:
                raise self._error(str(exc), path=self.path) from exc

    def _run(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._locked() as db:
            return list(db.execute(sql, args).fetchall())

"""The outbox file's one writer: a thread that owns the SQLite connection and commits every
write that is waiting as one transaction (group commit).

Concurrent ``put``s share one fsync, and the event loop never blocks on disk.

Durability (``synchronous``): ``full`` fsyncs the WAL on every commit, so an event whose
``put`` returned survives a power loss; ``normal`` skips that fsync and survives a process
crash but may lose the last commits on a power loss or kernel crash. The default is
``full``; group commit keeps its cost to one fsync per batch of writers.

Requests answered together commit together: ``grouped`` calls made in one turn of the
event loop (the requests of one coalesced Triton call resume in the same turn) go to the
writer as one op, so their events share one transaction and one fsync however the writer
thread is scheduled; each caller still gets its own result or error.

The writer knows nothing of events: ``Outbox`` hands it operations (functions of the
connection), a ``setup`` run once the file is open, and a ``checkpoint`` taken before each
transaction that undoes the outbox's in-memory state if the transaction rolls back.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fcntl
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from textgate.errors import OutboxError, OutboxFull
from textgate.gateway.records.outbox.rows import OutboxStats

T = TypeVar("T")
Operation = Callable[[sqlite3.Connection], Any]
# Called before a transaction; what it returns is called with the connection on rollback.
Checkpoint = Callable[[], Callable[[sqlite3.Connection], None]]


class _Op:
    """One unit of work for the writer thread and the future its caller waits on."""

    def __init__(self, fn: Operation) -> None:
        self.fn = fn
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()


class Writer:
    """The thread that writes one outbox file (one process writes it: a file lock says so)."""

    def __init__(
        self,
        path: Path,
        *,
        synchronous: str,
        busy_timeout_s: float,
        max_group: int,
        stats: OutboxStats,
        setup: Callable[[sqlite3.Connection], None],
        checkpoint: Checkpoint,
    ) -> None:
        self.path = path
        self.stats = stats
        self._synchronous = synchronous.upper()
        self._busy_ms = int(busy_timeout_s * 1000)
        self._max_group = max_group
        self._setup = setup
        self._checkpoint = checkpoint
        # grouped calls of this event-loop turn, flushed as one writer op (group commit)
        self._pending: list[tuple[Operation, asyncio.Future[Any]]] = []
        self._queue: queue.SimpleQueue[_Op | None] = queue.SimpleQueue()
        self._closed = False
        opened: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._serve, args=(opened,), name=f"outbox-writer:{path.name}", daemon=True
        )
        self._thread.start()
        opened.result()  # raises OutboxError when the file is unusable

    async def submit(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.wrap_future(self._enqueue(fn))

    async def grouped(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``submit``, joined with the other calls of this loop turn into one op."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._pending.append((fn, future))
        if len(self._pending) == 1:
            loop.call_soon(self._flush_pending)
        return await future

    def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``submit`` for code outside an event loop: waits in this thread."""
        result: T = self._enqueue(fn).result()
        return result

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()

    def _flush_pending(self) -> None:
        group, self._pending = self._pending, []
        fns = [fn for fn, _ in group]

        def run_all(conn: sqlite3.Connection) -> list[tuple[Any, BaseException | None]]:
            out: list[tuple[Any, BaseException | None]] = []
            for fn in fns:
                try:
                    out.append((fn(conn), None))
                except OutboxFull as exc:  # this caller only; the others commit
                    out.append((None, exc))
            return out

        try:
            done = asyncio.wrap_future(self._enqueue(run_all))
        except OutboxError as exc:
            _settle(group, None, exc)
            return
        done.add_done_callback(lambda f: _settle(group, f, None))

    def _enqueue(self, fn: Operation) -> concurrent.futures.Future[Any]:
        if self._closed:
            raise OutboxError("is closed", path=self.path)
        op = _Op(fn)
        self._queue.put(op)
        return op.future

    # --- the thread -----------------------------------------------------------------------

    def _serve(self, opened: concurrent.futures.Future[None]) -> None:
        conn = self._run_open(opened)
        if conn is None:
            return
        try:
            while (op := self._queue.get()) is not None:
                group = [op]
                stop = self._fill(group)
                self._commit(conn, group)
                if stop:
                    break
        finally:
            conn.close()
            self._unlock_writer()
            self._fail_leftovers()

    def _fail_leftovers(self) -> None:
        """Ops queued behind the close marker would otherwise be awaited forever."""
        while True:
            try:
                op = self._queue.get_nowait()
            except queue.Empty:
                return
            if op is not None and op.future.set_running_or_notify_cancel():
                op.future.set_exception(OutboxError("is closed", path=self.path))

    def _fill(self, group: list[_Op]) -> bool:
        """Take every waiting op (up to max_group) into this transaction; True on close."""
        while len(group) < self._max_group:
            try:
                op = self._queue.get_nowait()
            except queue.Empty:
                return False
            if op is None:
                return True
            group.append(op)
        return False

    def _commit(self, conn: sqlite3.Connection, group: list[_Op]) -> None:
        # A caller that gave up (cancelled await) cancelled its future: skip its op, and
        # mark the rest running so a late cancel cannot make set_result raise here.
        group = [op for op in group if op.future.set_running_or_notify_cancel()]
        if not group:
            return
        results: list[tuple[_Op, Any, BaseException | None]] = []
        undo = self._checkpoint()  # restores the outbox's state when the transaction rolls back
        try:
            conn.execute("BEGIN IMMEDIATE")
            for op in group:
                try:
                    results.append((op, op.fn(conn), None))
                except OutboxFull as exc:  # refuses this op only; the others commit
                    results.append((op, None, exc))
            conn.execute("COMMIT")
            self.stats.commits += 1
        except Exception as exc:  # sqlite3.Error, or OverflowError binding a value
            if conn.in_transaction:
                conn.rollback()
            undo(conn)
            error = self._error(exc)
            for op in group:
                op.future.set_exception(error)
            return
        for op, value, err in results:
            if err is None:
                op.future.set_result(value)
            else:
                op.future.set_exception(err)

    # --- the file -------------------------------------------------------------------------

    def _run_open(self, opened: concurrent.futures.Future[None]) -> sqlite3.Connection | None:
        try:
            conn = self._open()
        except Exception as exc:  # e.g. ValueError for a NUL in the path
            opened.set_exception(self._error(exc))
            return None
        opened.set_result(None)
        return conn

    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock_writer()
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=self._busy_ms / 1000)
        except (OSError, sqlite3.Error) as exc:
            self._unlock_writer()
            raise self._error(exc) from exc
        try:
            conn.execute(f"PRAGMA busy_timeout={self._busy_ms}")
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise OutboxError(f"cannot switch to WAL mode (got {mode})", path=self.path)
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            self._setup(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise self._error(exc) from exc
        return conn

    def _lock_writer(self) -> None:
        """One writer per file, held while open: two gateways on one outbox would each
        publish every event (SQLite's own locks serialize writes, not ownership)."""
        self._lock_fh: Any = open(self.path.with_name(self.path.name + ".lock"), "a+")  # noqa: SIM115
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._unlock_writer()
            raise OutboxError(
                "is locked by another process (another gateway writes it)",
                path=self.path,
                hint="one gateway process per outbox file: stop the other one "
                "or give each its own events.outbox_path",
            ) from None

    def _unlock_writer(self) -> None:
        fh = getattr(self, "_lock_fh", None)
        if fh is not None:
            fh.close()  # closing the descriptor releases the flock
            self._lock_fh = None

    def _error(self, exc: BaseException) -> OutboxError:
        if isinstance(exc, OutboxError):
            return exc
        text = str(exc)
        if "locked" in text or "busy" in text:
            return OutboxError(
                f"is locked by another process (waited {self._busy_ms / 1000:g} s)",
                path=self.path,
                hint="one gateway process per outbox file: stop the other one "
                "or give each its own events.outbox_path",
            )
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            return OutboxError(
                f"is not a readable SQLite database ({text})",
                path=self.path,
                hint="move the file (and its -wal/-shm files) aside to keep it for "
                "inspection; textgate then starts a new, empty outbox",
            )
        if "full" in text or "No space" in text:
            return OutboxError(
                f"has no room left on its disk ({text}): new requests are refused, "
                "accepted events are kept",
                path=self.path,
                hint="free space on the file system of events.outbox_path; "
                "the gateway accepts requests again as soon as a write succeeds",
            )
        return OutboxError(
            f"cannot be opened or written ({text})",
            path=self.path,
            hint="check that its directory exists, is writable and has free space",
        )


def _settle(
    group: Sequence[tuple[Any, asyncio.Future[Any]]],
    done: asyncio.Future[Any] | None,
    error: BaseException | None,
) -> None:
    """Hand each grouped caller its own result (or the group's failure)."""
    if error is None and done is not None:
        error = asyncio.CancelledError() if done.cancelled() else done.exception()
    results = done.result() if error is None and done is not None else [(None, None)] * len(group)
    for (_fn, future), (value, err) in zip(group, results, strict=True):
        if future.done():  # its caller gave up; the write may still have committed
            continue
        if error is not None or err is not None:
            future.set_exception(error or err)  # type: ignore[arg-type]
        else:
            future.set_result(value)

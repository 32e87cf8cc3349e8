"""The event outbox: a durable SQLite (WAL) queue between a classification and Kafka.

The gateway awaits ``put`` before it answers, so an accepted classification's event is on
disk first; the ``Publisher`` drains the outbox with ``claim`` / ``ack`` / ``release``.

Writes go through one writer thread that owns the connection and commits every write that
is waiting as one transaction (group commit): concurrent ``put``s share one fsync, and the
event loop never blocks on disk.

Durability (``synchronous``): ``full`` fsyncs the WAL on every commit, so an event whose
``put`` returned survives a power loss; ``normal`` skips that fsync and survives a process
crash but may lose the last commits on a power loss or kernel crash. The default is
``full``; group commit keeps its cost to one fsync per batch of writers.

Bound (``max_depth`` unpublished events): ``reject`` raises ``OutboxFull`` at once (the
gateway answers 503 with Retry-After: accepted work is never dropped, new work is refused);
``block`` waits up to ``block_timeout_s`` for the publisher to make room, then rejects.

An event key is stored once: a second ``put`` with the same key is a no-op returning
False, while both rows' window overlaps (unpublished rows plus ``retain_published``
published ones). Keys are the server's ``event_id`` (release events: ``release/...``); the
``request_id`` column keeps its name from schema 1 and holds that key.

Requests answered together commit together: ``put_batch`` calls made in one turn of the
event loop (the requests of one coalesced Triton call resume in the same turn) go to the
writer as one op, so their events share one transaction and one fsync however the writer
thread is scheduled; each caller still gets its own result or error.

Idempotent requests (``put_batch`` with a ``RequestRecord``): the ``requests`` table maps
(tenant, client request id) to the payload's hash and the answer given. A repeat with the
same hash writes nothing and gets the stored answer; with another hash it is a new request
and its record replaces the old one. The check and the batch's events are one transaction,
so two concurrent repeats cannot both write.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fcntl
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from textgate.errors import OutboxError, OutboxFull
from textgate.gateway.events import Event, ReleaseEvent, ReviewEvent

SCHEMA_VERSION = 2  # 2: the requests table (additive; a version-1 file is migrated)
T = TypeVar("T")

_DDL = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    payload TEXT NOT NULL,
    published_at REAL,
    attempts INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS events_pending ON events(id) WHERE published_at IS NULL;
CREATE INDEX IF NOT EXISTS events_published ON events(id) WHERE published_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS requests (
    tenant TEXT NOT NULL,
    client_id TEXT NOT NULL,
    payload_sha256 TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (tenant, client_id)
);
"""

_COLUMNS = "id, request_id, created_at, payload, published_at, attempts"


@dataclass(frozen=True)
class OutboxRow:
    id: int
    key: str  # the event's key (the column is named request_id since schema 1)
    created_at: float
    payload: str  # the event's JSON, sent to Kafka as is
    published_at: float | None
    attempts: int


@dataclass(frozen=True)
class RequestRecord:
    """A client request id, for idempotency: same tenant + id + payload hash = a repeat."""

    tenant: str | None
    client_id: str
    payload_sha256: str
    response: str  # the answer's JSON, returned as is to a repeat


@dataclass
class OutboxStats:
    """Plain counters (read by the metrics collector); written by the writer thread only."""

    written: int = 0
    duplicates: int = 0  # puts of a key already stored
    repeats: int = 0  # requests answered from their record, nothing written
    rejected: int = 0
    published: int = 0
    commits: int = 0  # transactions committed (each one fsync with synchronous=full)


class _Op:
    """One unit of work for the writer thread and the future its caller waits on."""

    def __init__(self, fn: Callable[[sqlite3.Connection], Any]) -> None:
        self.fn = fn
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()


class Outbox:
    """A bounded, durable queue of events in one SQLite file (one process writes it)."""

    def __init__(
        self,
        path: Path | str,
        *,
        max_depth: int = 100_000,
        overflow: Literal["reject", "block"] = "reject",
        block_timeout_s: float = 1.0,
        retry_after_s: int = 5,
        synchronous: Literal["full", "normal"] = "full",
        retain_published: int = 10_000,
        retain_requests: int = 10_000,
        publishing: bool = True,
        busy_timeout_s: float = 5.0,
        max_group: int = 512,
    ) -> None:
        self.path = Path(path)
        self.max_depth = max_depth
        self.overflow = overflow
        self.block_timeout_s = block_timeout_s
        self.retry_after_s = retry_after_s
        self.retain_published = retain_published
        self.retain_requests = retain_requests
        # Without a broker the outbox is the sink: rows are stored as already delivered.
        self.publishing = publishing
        self.stats = OutboxStats()
        self._synchronous = synchronous.upper()
        self._busy_ms = int(busy_timeout_s * 1000)
        self._max_group = max_group
        self._depth = 0
        self._oldest: float | None = None
        self._claimed: set[int] = set()
        # put_batch calls of this event-loop turn, flushed as one writer op (group commit)
        self._pending: list[tuple[Callable[[sqlite3.Connection], Any], asyncio.Future[Any]]] = []
        self._queue: queue.SimpleQueue[_Op | None] = queue.SimpleQueue()
        self._closed = False
        opened: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._serve, args=(opened,), name=f"outbox-writer:{self.path.name}", daemon=True
        )
        self._thread.start()
        opened.result()  # raises OutboxError when the file is unusable

    @classmethod
    def from_config(cls, cfg: Any) -> Outbox:
        """From an ``EventsConfig``; publishing only when Kafka servers are configured."""
        return cls(
            cfg.outbox_path,
            max_depth=cfg.max_depth,
            overflow=cfg.overflow,
            block_timeout_s=cfg.block_timeout_s,
            retry_after_s=cfg.retry_after_s,
            synchronous=cfg.synchronous,
            retain_published=cfg.retain_published,
            publishing=bool(cfg.kafka.bootstrap_servers),
        )

    # --- public API (async for the gateway, *_sync for threads and tools) --------------

    async def put(self, event: Event | ReleaseEvent | ReviewEvent) -> bool:
        """Store ``event`` durably; False when its request id is already stored.

        Raises ``OutboxFull`` at the bound (after ``block_timeout_s`` with ``block``).
        """
        deadline = time.monotonic() + (self.block_timeout_s if self.overflow == "block" else 0)
        while True:
            try:
                return await self._submit(self._put_fn(event))
            except OutboxFull:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.01)  # the publisher acks in batches; poll for room

    async def put_batch(
        self, events: Sequence[Event], record: RequestRecord | None = None
    ) -> str | None:
        """A request's events in one transaction, with its idempotency record.

        Returns None when written, or the stored answer when ``record`` repeats an earlier
        request (same tenant, id and payload hash): then nothing is written.
        """
        payloads = [(e.key, e.time, e.to_json()) for e in events]
        deadline = time.monotonic() + (self.block_timeout_s if self.overflow == "block" else 0)
        while True:
            try:
                return await self._grouped(lambda conn: self._put_batch(conn, payloads, record))
            except OutboxFull:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.01)

    async def lookup(self, tenant: str | None, client_id: str) -> tuple[str, str] | None:
        """(payload hash, stored answer) of an earlier request with this id, or None."""
        return await self._submit(lambda conn: self._lookup(conn, tenant, client_id))

    def put_sync(self, event: Event | ReleaseEvent | ReviewEvent) -> bool:
        """``put`` for code outside an event loop (reject policy only)."""
        return self._call(self._put_fn(event))

    async def claim(self, limit: int) -> list[OutboxRow]:
        """The oldest unpublished rows not already claimed, at most ``limit``."""
        return await self._submit(lambda conn: self._claim(conn, limit))

    async def ack(self, ids: Sequence[int]) -> None:
        """Mark rows published (only after the broker acknowledged them)."""
        if ids:
            await self._submit(lambda conn: self._ack(conn, ids))

    async def release(self, ids: Iterable[int]) -> None:
        """Give claimed rows back (their send failed); the next ``claim`` returns them."""
        ids = list(ids)
        await self._submit(lambda conn: self._claimed.difference_update(ids))

    def depth(self) -> int:
        """Unpublished events (kept by the writer thread; no query)."""
        return self._depth

    def oldest_age_s(self) -> float:
        """Age of the oldest unpublished event; 0 when none waits."""
        return 0.0 if self._oldest is None else max(0.0, time.time() - self._oldest)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()

    def __enter__(self) -> Outbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writer thread -------------------------------------------------------------------

    async def _submit(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.wrap_future(self._enqueue(fn))

    async def _grouped(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``_submit``, joined with the other calls of this loop turn into one op."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._pending.append((fn, future))
        if len(self._pending) == 1:
            loop.call_soon(self._flush_pending)
        return await future

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

    def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        result: T = self._enqueue(fn).result()
        return result

    def _enqueue(self, fn: Callable[[sqlite3.Connection], Any]) -> concurrent.futures.Future[Any]:
        if self._closed:
            raise OutboxError("is closed", path=self.path)
        op = _Op(fn)
        self._queue.put(op)
        return op.future

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
        claimed = set(self._claimed)  # restored when the transaction rolls back
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
            self._claimed = claimed
            self._resync(conn)
            error = self._error(exc)
            for op in group:
                op.future.set_exception(error)
            return
        for op, value, err in results:
            if err is None:
                op.future.set_result(value)
            else:
                op.future.set_exception(err)

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
            self._migrate(conn)
            self._resync(conn)
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

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise OutboxError(
                f"has schema version {version}; this textgate reads {SCHEMA_VERSION}",
                path=self.path,
                hint="upgrade textgate, or point events.outbox_path at a new file",
            )
        conn.executescript(_DDL)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _resync(self, conn: sqlite3.Connection) -> None:
        """Recount depth and oldest age from the file (at open, after a failed commit)."""
        self._depth = conn.execute(
            "SELECT count(*) FROM events WHERE published_at IS NULL"
        ).fetchone()[0]
        row = conn.execute(
            "SELECT created_at FROM events WHERE published_at IS NULL ORDER BY id LIMIT 1"
        ).fetchone()
        self._oldest = None if row is None else row[0]

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
        return OutboxError(
            f"cannot be opened or written ({text})",
            path=self.path,
            hint="check that its directory exists, is writable and has free space",
        )

    # --- operations (run inside the writer's transaction) --------------------------------

    def _put_fn(
        self, event: Event | ReleaseEvent | ReviewEvent
    ) -> Callable[[sqlite3.Connection], bool]:
        payload = event.to_json()  # serialized by the caller, outside the writer thread
        return lambda conn: self._put(conn, event.key, event.time, payload)

    def _lookup(
        self, conn: sqlite3.Connection, tenant: str | None, client_id: str
    ) -> tuple[str, str] | None:
        row = conn.execute(
            "SELECT payload_sha256, response FROM requests WHERE tenant = ? AND client_id = ?",
            (tenant or "", client_id),
        ).fetchone()
        return None if row is None else (row[0], row[1])

    def _put_batch(
        self,
        conn: sqlite3.Connection,
        payloads: Sequence[tuple[str, float, str]],
        record: RequestRecord | None,
    ) -> str | None:
        if record is not None:
            earlier = self._lookup(conn, record.tenant, record.client_id)
            if earlier is not None and earlier[0] == record.payload_sha256:
                self.stats.repeats += 1
                return earlier[1]
        room = self.max_depth - self._depth
        if self.publishing and len(payloads) > room:
            self.stats.rejected += 1
            raise OutboxFull(
                f"holds {self._depth} unpublished events (events.max_depth)",
                path=self.path,
                retry_after_s=self.retry_after_s,
            )
        # One SAVEPOINT: a failure half-way leaves none of this request's events behind,
        # while the other writers of the group commit keep theirs.
        conn.execute("SAVEPOINT batch")
        try:
            for key, created, payload in payloads:
                self._put(conn, key, created, payload)
            if record is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO requests VALUES (?, ?, ?, ?, ?)",
                    (record.tenant or "", record.client_id, record.payload_sha256,
                     record.response, time.time()),
                )  # fmt: skip
                self._prune_requests(conn)
        except BaseException:
            conn.execute("ROLLBACK TO batch")
            conn.execute("RELEASE batch")
            self._resync(conn)  # _put counted rows that are gone again
            raise
        conn.execute("RELEASE batch")
        return None

    def _prune_requests(self, conn: sqlite3.Connection) -> None:
        conn.execute(
            "DELETE FROM requests WHERE rowid <= ("
            " SELECT rowid FROM requests ORDER BY rowid DESC LIMIT 1 OFFSET ?)",
            (self.retain_requests,),
        )

    def _put(self, conn: sqlite3.Connection, request_id: str, created: float, payload: str) -> bool:
        if self.publishing and self._depth >= self.max_depth:
            self.stats.rejected += 1
            raise OutboxFull(
                f"holds {self._depth} unpublished events (events.max_depth)",
                path=self.path,
                retry_after_s=self.retry_after_s,
            )
        published = None if self.publishing else time.time()
        cur = conn.execute(
            "INSERT OR IGNORE INTO events (request_id, created_at, payload, published_at) "
            "VALUES (?, ?, ?, ?)",
            (request_id, created, payload, published),
        )
        if cur.rowcount == 0:
            self.stats.duplicates += 1
            return False
        self.stats.written += 1
        if self.publishing:
            self._depth += 1
            if self._oldest is None:
                self._oldest = created
        else:
            self._prune(conn)
        return True

    def _claim(self, conn: sqlite3.Connection, limit: int) -> list[OutboxRow]:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM events WHERE published_at IS NULL ORDER BY id LIMIT ?",
            (limit + len(self._claimed),),
        ).fetchall()
        # attempts counts this claim too, as the UPDATE below stores it
        picked = [
            OutboxRow(r[0], r[1], r[2], r[3], r[4], r[5] + 1)
            for r in rows
            if r[0] not in self._claimed
        ][:limit]
        ids = [r.id for r in picked]
        self._claimed.update(ids)
        conn.executemany(
            "UPDATE events SET attempts = attempts + 1 WHERE id = ?", ((i,) for i in ids)
        )
        return picked

    def _ack(self, conn: sqlite3.Connection, ids: Sequence[int]) -> None:
        now = time.time()
        cur = conn.executemany(
            "UPDATE events SET published_at = ? WHERE id = ? AND published_at IS NULL",
            ((now, i) for i in ids),
        )
        self._claimed.difference_update(ids)
        self._depth -= cur.rowcount
        self.stats.published += cur.rowcount
        row = conn.execute(
            "SELECT created_at FROM events WHERE published_at IS NULL ORDER BY id LIMIT 1"
        ).fetchone()
        self._oldest = None if row is None else row[0]
        self._prune(conn)

    def _prune(self, conn: sqlite3.Connection) -> None:
        """Keep only the newest ``retain_published`` published rows (for ``events tail``)."""
        conn.execute(
            "DELETE FROM events WHERE published_at IS NOT NULL AND id <= ("
            " SELECT id FROM events WHERE published_at IS NOT NULL"
            " ORDER BY id DESC LIMIT 1 OFFSET ?)",
            (self.retain_published,),
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


def read_rows(path: Path | str, *, after_id: int = 0, last: int | None = None) -> list[OutboxRow]:
    """Rows for ``textgate events tail``: read-only, never creates the file.

    ``last``: only the newest ``last`` rows after ``after_id``; in id order either way.
    """
    path = Path(path)
    if not path.is_file():
        raise OutboxError(
            "does not exist", path=path, hint="pass --outbox or set events.outbox_path"
        )
    try:
        # as_uri() percent-encodes '#', '?' and '%', which a raw "file:" URI would misread.
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            order = "DESC" if last is not None else "ASC"
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM events WHERE id > ? ORDER BY id {order} LIMIT ?",
                (after_id, -1 if last is None else last),
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise OutboxError(
            f"cannot be read ({exc})",
            path=path,
            hint="is it a textgate outbox? (events.outbox_path)",
        ) from exc
    out = [OutboxRow(*r) for r in rows]
    return out[::-1] if last is not None else out

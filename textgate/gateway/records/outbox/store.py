"""The outbox itself: a bounded, durable queue of events that the gateway ``put``s into
before it answers and the ``Publisher`` drains with ``claim`` / ``ack`` / ``release``.

Bound (``max_depth`` unpublished events): ``reject`` raises ``OutboxFull`` at once (the
gateway answers 503 with Retry-After: accepted work is never dropped, new work is refused);
``block`` waits up to ``block_timeout_s`` for the publisher to make room, then rejects.

An event key is stored once: a second ``put`` with the same key is a no-op returning
False, while both rows' window overlaps (unpublished rows plus ``retain_published``
published ones). Keys are the server's ``event_id`` (release events: ``release/...``); the
``request_id`` column keeps its name from schema 1 and holds that key.

Idempotent requests (``put_batch`` with a ``RequestRecord``): the ``requests`` table maps
(tenant, client request id) to the payload's hash and the answer given. A repeat with the
same hash writes nothing and gets the stored answer; with another hash it is a new request
and its record replaces the old one. The check and the batch's events are one transaction,
so two concurrent repeats cannot both write.

Every operation runs in the writer's transaction (``writer.py``); the depth, the oldest
age and the claimed ids are kept here, in memory, and recounted from the file at open and
after a rollback.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from textgate.errors import OutboxError, OutboxFull
from textgate.gateway.records.events import Event, ReleaseEvent, ReviewEvent
from textgate.gateway.records.outbox.rows import (
    COLUMNS,
    DDL,
    SCHEMA_VERSION,
    OutboxRow,
    OutboxStats,
    RequestRecord,
)
from textgate.gateway.records.outbox.writer import Writer


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
        self._depth = 0
        self._published = 0  # published rows in the file (what _prune trims to the retention)
        self._oldest: float | None = None
        self._claimed: set[int] = set()
        self._writer = Writer(  # opens the file: raises OutboxError when it is unusable
            self.path,
            synchronous=synchronous,
            busy_timeout_s=busy_timeout_s,
            max_group=max_group,
            stats=self.stats,
            setup=self._setup,
            checkpoint=self._checkpoint,
        )

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
                return await self._writer.submit(self._put_fn(event))
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
                return await self._writer.grouped(
                    lambda conn: self._put_batch(conn, payloads, record)
                )
            except OutboxFull:
                if time.monotonic() >= deadline:
                    raise
                await asyncio.sleep(0.01)

    async def lookup(self, tenant: str | None, client_id: str) -> tuple[str, str] | None:
        """(payload hash, stored answer) of an earlier request with this id, or None."""
        return await self._writer.submit(lambda conn: self._lookup(conn, tenant, client_id))

    def put_sync(self, event: Event | ReleaseEvent | ReviewEvent) -> bool:
        """``put`` for code outside an event loop (reject policy only)."""
        return self._writer.call(self._put_fn(event))

    async def claim(self, limit: int) -> list[OutboxRow]:
        """The oldest unpublished rows not already claimed, at most ``limit``."""
        return await self._writer.submit(lambda conn: self._claim(conn, limit))

    async def ack(self, ids: Sequence[int]) -> None:
        """Mark rows published (only after the broker acknowledged them)."""
        if ids:
            await self._writer.submit(lambda conn: self._ack(conn, ids))

    async def release(self, ids: Iterable[int]) -> None:
        """Give claimed rows back (their send failed); the next ``claim`` returns them."""
        ids = list(ids)
        await self._writer.submit(lambda conn: self._claimed.difference_update(ids))

    def depth(self) -> int:
        """Unpublished events (kept by the writer thread; no query)."""
        return self._depth

    def oldest_age_s(self) -> float:
        """Age of the oldest unpublished event; 0 when none waits."""
        return 0.0 if self._oldest is None else max(0.0, time.time() - self._oldest)

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> Outbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- in-memory state, kept by the writer thread ----------------------------------------

    def _setup(self, conn: sqlite3.Connection) -> None:
        self._migrate(conn)
        self._resync(conn)

    def _checkpoint(self) -> Callable[[sqlite3.Connection], None]:
        """Before a transaction: how to undo what it did to the in-memory state."""
        claimed = set(self._claimed)

        def undo(conn: sqlite3.Connection) -> None:
            self._claimed = claimed
            self._resync(conn)

        return undo

    def _migrate(self, conn: sqlite3.Connection) -> None:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise OutboxError(
                f"has schema version {version}; this textgate reads {SCHEMA_VERSION}",
                path=self.path,
                hint="upgrade textgate, or point events.outbox_path at a new file",
            )
        conn.executescript(DDL)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _resync(self, conn: sqlite3.Connection) -> None:
        """Recount depth and oldest age from the file (at open, after a failed commit)."""
        self._depth = conn.execute(
            "SELECT count(*) FROM events WHERE published_at IS NULL"
        ).fetchone()[0]
        self._published = conn.execute(
            "SELECT count(*) FROM events WHERE published_at IS NOT NULL"
        ).fetchone()[0]
        row = conn.execute(
            "SELECT created_at FROM events WHERE published_at IS NULL ORDER BY id LIMIT 1"
        ).fetchone()
        self._oldest = None if row is None else row[0]

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
            self._published += 1
            self._prune(conn)
        return True

    def _claim(self, conn: sqlite3.Connection, limit: int) -> list[OutboxRow]:
        rows = conn.execute(
            f"SELECT {COLUMNS} FROM events WHERE published_at IS NULL ORDER BY id LIMIT ?",
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
        self._published += cur.rowcount
        self.stats.published += cur.rowcount
        row = conn.execute(
            "SELECT created_at FROM events WHERE published_at IS NULL ORDER BY id LIMIT 1"
        ).fetchone()
        self._oldest = None if row is None else row[0]
        self._prune(conn)

    def _prune(self, conn: sqlite3.Connection) -> None:
        """Keep only the newest ``retain_published`` published rows (for ``events tail``).

        The surplus is counted in memory and deleted from the oldest end: finding the
        cut-off from the newest end walked ``retain_published`` rows on every event of an
        outbox-only gateway (docs/benchmarks.md, "The gateway's CPU per request")."""
        surplus = self._published - self.retain_published
        if surplus <= 0:
            return
        cur = conn.execute(
            "DELETE FROM events WHERE id IN ("
            " SELECT id FROM events WHERE published_at IS NOT NULL ORDER BY id LIMIT ?)",
            (surplus,),
        )
        self._published -= cur.rowcount

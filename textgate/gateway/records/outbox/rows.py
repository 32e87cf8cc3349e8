"""What the outbox file holds: its schema, its rows, the records and counters around them,
and the read-only reader of ``textgate events tail``."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from textgate.errors import OutboxError

SCHEMA_VERSION = 2  # 2: the requests table (additive; a version-1 file is migrated)

DDL = """
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

COLUMNS = "id, request_id, created_at, payload, published_at, attempts"


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
                f"SELECT {COLUMNS} FROM events WHERE id > ? ORDER BY id {order} LIMIT ?",
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

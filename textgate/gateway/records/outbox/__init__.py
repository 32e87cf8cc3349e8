"""The event outbox: a durable SQLite (WAL) queue between a classification and Kafka.

The gateway awaits ``put`` before it answers, so an accepted classification's event is on
disk first; the ``Publisher`` (``publisher.py``) drains the outbox with ``claim`` / ``ack``
/ ``release``.

One room per concern:

    rows    the schema, OutboxRow, RequestRecord, OutboxStats; read_rows (events tail)
    writer  the one writer thread: group commit, durability, the file lock, error mapping
    store   Outbox: the bound, keys stored once, idempotent requests, claim / ack
"""

from __future__ import annotations

from textgate.gateway.records.outbox.rows import (
    SCHEMA_VERSION,
    OutboxRow,
    OutboxStats,
    RequestRecord,
    read_rows,
)
from textgate.gateway.records.outbox.store import Outbox

__all__ = ["SCHEMA_VERSION", "Outbox", "OutboxRow", "OutboxStats", "RequestRecord", "read_rows"]

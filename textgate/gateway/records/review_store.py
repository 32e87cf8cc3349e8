"""The review and quarantine store: what the console shows a person (docs/console.md).

    classify / spamd scan ─> action in review.actions ─> ReviewStore.keep (one row per id)
    console decision ─> ReviewStore.decide: feedback record + review event, then the mark

Bounded three ways (``max_age_days``, ``max_messages``, ``max_bytes``); a row dropped by a
bound is counted in ``textgate_review_dropped_total{reason}``, never dropped silently. WAL
with ``synchronous=FULL`` like the outbox and the feedback store; calls run in a worker
thread so the event loop never waits on disk.

A decision is idempotent by request id: a second identical decision writes nothing and
answers the first; a different one on a decided message is a 409. Decisions are serialized
by one lock, and the decision is marked only after its feedback record and event are
durable: a crash in between leaves the message undecided, and the repeat writes the same
event key (the outbox keeps it once) and one more feedback row (training dedups by text).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from textgate.errors import ReviewStoreError
from textgate.store import SQLiteStore

DAY_S = 86_400.0
DECISIONS = ("spam", "ham", "release")
SCHEMA_VERSION = 2  # 2: queue_id (added to a version-1 file when opened)

_DDL = """
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    task TEXT NOT NULL,
    tenant TEXT NOT NULL DEFAULT '',
    action TEXT NOT NULL,
    label TEXT NOT NULL,
    score REAL,
    probabilities TEXT NOT NULL,
    model TEXT NOT NULL,
    model_version TEXT NOT NULL,
    subject TEXT NOT NULL DEFAULT '',
    sender TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL,
    raw BLOB NOT NULL,
    notes TEXT NOT NULL DEFAULT '{}',
    explanation TEXT,
    size INTEGER NOT NULL,
    queue_id TEXT,
    decision TEXT,
    decided_at REAL,
    decided_by TEXT
);
CREATE INDEX IF NOT EXISTS messages_tenant ON messages(tenant, id);
"""
_COLUMNS = (
    "id, request_id, created_at, task, tenant, action, label, score, probabilities, model, "
    "model_version, subject, sender, text, raw, notes, explanation, size, queue_id, decision, "
    "decided_at, decided_by"
)

# Every column but the id and the decision's three.
_INSERT_COLUMNS = _COLUMNS.split(", ", 1)[1].rsplit(", ", 3)[0]
_INSERT = (
    f"INSERT OR IGNORE INTO messages ({_INSERT_COLUMNS}) "
    f"VALUES ({', '.join('?' * len(_INSERT_COLUMNS.split(', ')))})"
)


@dataclass(frozen=True)
class Held:
    """One kept message."""

    id: int
    request_id: str
    created_at: float
    task: str
    tenant: str | None
    action: str
    label: str
    score: float | None
    probabilities: dict[str, float | None]
    model: str
    model_version: str
    subject: str
    sender: str
    text: str
    raw: bytes
    notes: dict[str, Any]
    explanation: list[dict[str, Any]] | None
    size: int
    queue_id: str | None  # the MTA's, when the milter saw one (held_mail.py releases by it)
    decision: str | None
    decided_at: float | None
    decided_by: str | None

    def summary(self) -> dict[str, Any]:
        """The queue's row: no body (its first words as a preview), no raw message."""
        out = asdict(self)
        for key in ("text", "raw", "notes", "explanation"):
            out.pop(key)
        out["preview"] = self.text[:120]
        return out

    def detail(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("raw")
        return out


@dataclass(frozen=True)
class Filters:
    task: str | None = None
    tenant: str | None = None  # "" is the default tenant
    action: str | None = None
    min_score: float | None = None
    max_score: float | None = None
    decided: bool | None = None  # None: both; False: the open queue


class ReviewMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.stored = Counter(
            "textgate_review_stored",
            "Messages kept for review or quarantine",
            ["task", "action"],
            registry=registry,
        )
        self.dropped = Counter(
            "textgate_review_dropped",
            "Kept messages dropped by a retention bound (age, count, bytes)",
            ["reason"],
            registry=registry,
        )
        self.decisions = Counter(
            "textgate_review_decisions",
            "Console decisions written (repeats of a decision not counted)",
            ["task", "decision"],
            registry=registry,
        )
        self.held = Gauge("textgate_review_held", "Messages in the review store", registry=registry)


class ReviewStore(SQLiteStore):
    def __init__(
        self,
        path: Path,
        *,
        max_age_days: float = 30.0,
        max_messages: int = 100_000,
        max_bytes: int = 1 << 30,
        metrics: ReviewMetrics | None = None,
    ) -> None:
        self.max_age_s = max_age_days * DAY_S
        self.max_messages, self.max_bytes = max_messages, max_bytes
        self.metrics = metrics or ReviewMetrics(CollectorRegistry())
        self.deciding = asyncio.Lock()  # one decision at a time (see the module doc)
        super().__init__(path, ddl=_DDL, schema_version=SCHEMA_VERSION, error=ReviewStoreError)
        with self._locked() as db:
            if "queue_id" not in {row[1] for row in db.execute("PRAGMA table_info(messages)")}:
                db.execute("ALTER TABLE messages ADD COLUMN queue_id TEXT")
        self.metrics.held.set(self.count())

    @classmethod
    def from_config(cls, cfg: Any, *, metrics: ReviewMetrics) -> ReviewStore:
        return cls(
            cfg.path,
            max_age_days=cfg.max_age_days,
            max_messages=cfg.max_messages,
            max_bytes=cfg.max_bytes,
            metrics=metrics,
        )

    def bound(self, max_age_days: float, max_messages: int, max_bytes: int) -> None:
        """New retention bounds (a reload); applied from the next message kept."""
        self.max_age_s = max_age_days * DAY_S
        self.max_messages, self.max_bytes = max_messages, max_bytes

    # --- writes ---------------------------------------------------------------------------

    def keep(
        self,
        *,
        request_id: str,
        task: str,
        tenant: str | None,
        result: dict[str, Any],
        text: str,
        raw: bytes,
        subject: str = "",
        sender: str = "",
        queue_id: str | None = None,
        now: float | None = None,
    ) -> bool:
        """Store one verdict's message; False when its request id is already held."""
        now = time.time() if now is None else now
        model = result.get("model") or {}
        explanation = result.get("explanation")
        row = (
            request_id,
            now,
            task,
            tenant or "",
            result["action"],
            result["label"],
            result.get("score"),
            json.dumps(result.get("probabilities") or {}),
            str(model.get("name", "")),
            str(model.get("version", "")),
            subject[:998],
            sender[:320],
            text,
            raw,
            json.dumps(result.get("normalization") or {}),
            json.dumps(explanation) if explanation is not None else None,
            len(raw) + len(text.encode("utf-8", "surrogatepass")),
            queue_id,
        )
        with self._locked() as db:
            added = db.execute(_INSERT, row).rowcount == 1
            if added:
                self._prune(now)
        if added:
            self.metrics.stored.labels(task, result["action"]).inc()
        self.metrics.held.set(self.count())
        return added

    def _prune(self, now: float) -> None:
        """Drop by age, then oldest first past the count and the byte bound (lock held)."""
        db = self._db
        aged = db.execute("DELETE FROM messages WHERE created_at < ?", (now - self.max_age_s,))
        if aged.rowcount > 0:
            self.metrics.dropped.labels("age").inc(aged.rowcount)
        (n,) = db.execute("SELECT COUNT(*) FROM messages").fetchone()
        if n > self.max_messages:
            cur = db.execute(
                "DELETE FROM messages WHERE id IN (SELECT id FROM messages ORDER BY id LIMIT ?)",
                (n - self.max_messages,),
            )
            self.metrics.dropped.labels("count").inc(cur.rowcount)
        (size,) = db.execute("SELECT COALESCE(SUM(size), 0) FROM messages").fetchone()
        while size > self.max_bytes:
            oldest = db.execute("SELECT id, size FROM messages ORDER BY id LIMIT 1").fetchone()
            if oldest is None:
                break
            db.execute("DELETE FROM messages WHERE id = ?", (oldest[0],))
            self.metrics.dropped.labels("bytes").inc()
            size -= oldest[1]

    def set_explanation(self, request_id: str, spans: list[dict[str, Any]]) -> None:
        self._run(
            "UPDATE messages SET explanation = ? WHERE request_id = ?",
            (json.dumps(spans), request_id),
        )

    def mark(self, request_id: str, decision: str, by: str, now: float | None = None) -> bool:
        """Record a decision on an undecided message; False if it was decided meanwhile."""
        rows = self._run(
            "UPDATE messages SET decision = ?, decided_at = ?, decided_by = ? "
            "WHERE request_id = ? AND decision IS NULL RETURNING id",
            (decision, time.time() if now is None else now, by, request_id),
        )
        return bool(rows)

    # --- reads ----------------------------------------------------------------------------

    def get(self, request_id: str) -> Held | None:
        rows = self._run(f"SELECT {_COLUMNS} FROM messages WHERE request_id = ?", (request_id,))
        return _held(rows[0]) if rows else None

    def find(
        self, filters: Filters = Filters(), *, before_id: int | None = None, limit: int = 50
    ) -> list[Held]:
        where, args = _where(filters)
        if before_id is not None:
            where.append("id < ?")
            args.append(before_id)
        sql = f"SELECT {_COLUMNS} FROM messages" + (
            f" WHERE {' AND '.join(where)}" if where else ""
        )
        return [_held(r) for r in self._run(sql + " ORDER BY id DESC LIMIT ?", [*args, limit])]

    def count(self, filters: Filters = Filters()) -> int:
        where, args = _where(filters)
        sql = "SELECT COUNT(*) FROM messages" + (f" WHERE {' AND '.join(where)}" if where else "")
        return int(self._run(sql, args)[0][0])

    def counts(self, filters: Filters = Filters()) -> dict[str, int]:
        """Messages by action and open/decided, under the filters (the queue's header)."""
        where, args = _where(filters)
        sql = "SELECT action, decision IS NULL, COUNT(*) FROM messages" + (
            f" WHERE {' AND '.join(where)}" if where else ""
        )
        out: dict[str, int] = {"total": 0, "open": 0, "decided": 0}
        for action, is_open, n in self._run(sql + " GROUP BY action, decision IS NULL", args):
            out[action] = out.get(action, 0) + n
            out["total"] += n
            out["open" if is_open else "decided"] += n
        return out

    # --- async wrappers -------------------------------------------------------------------

    async def keep_async(self, **kw: Any) -> bool:
        return await asyncio.to_thread(lambda: self.keep(**kw))

    async def get_async(self, request_id: str) -> Held | None:
        return await asyncio.to_thread(self.get, request_id)


def _where(f: Filters) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    args: list[Any] = []
    for column, value in (("task", f.task), ("tenant", f.tenant), ("action", f.action)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    if f.min_score is not None:
        where.append("score >= ?")
        args.append(f.min_score)
    if f.max_score is not None:
        where.append("score <= ?")
        args.append(f.max_score)
    if f.decided is not None:
        where.append("decision IS NOT NULL" if f.decided else "decision IS NULL")
    return where, args


def _held(r: tuple[Any, ...]) -> Held:
    values = list(r)
    values[4] = values[4] or None  # tenant
    values[8] = json.loads(values[8])
    values[14] = bytes(values[14])
    values[15] = json.loads(values[15])
    values[16] = json.loads(values[16]) if values[16] is not None else None
    return Held(*values)


# --- what classify and the mail listeners keep ---------------------------------------------

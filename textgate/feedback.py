"""Operator corrections: a durable SQLite store, and the recent verdicts they can refer to.

    spamc -L spam|ham ──┐                         ┌─> textgate train --feedback STORE
    POST /v1/feedback ──┴─> FeedbackStore.add ──> │   (train/: dedup, weight, cap/tenant)
      {request_id | message, label}               └─> a review console (list / get / count)

A correction by ``request_id`` is looked up in ``Recent``, an in-memory LRU of the last
verdicts (bounded in entries and bytes): the outbox keeps only the text's hash, and a
correction must carry the text the model saw. An id that is not there (never served, or
evicted, or from before a restart) is a 404 that says to send the message instead.

The store is WAL with ``synchronous=FULL`` like the outbox: a correction that was answered
survives a power loss. Writes run in a worker thread so the event loop never waits on disk.
Each tenant may add at most ``max_per_tenant_per_hour`` corrections (429 beyond), so one
user cannot flood the next training set; training caps each tenant's share again.

The API for a console: ``add``, ``remove``, ``get``, ``find`` (newest first, filters,
keyset paging by id), ``count``, each returning ``Correction`` rows or plain numbers; and
for per-tenant learning, ``watchers`` of every committed write and ``data_version``.

Just over 400 lines: the store, its row type and the folding of its rows into a training
set share one schema, kept on one page.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from textgate.errors import FeedbackError, Overloaded
from textgate.store import SQLiteStore

SCHEMA_VERSION = 1
HOUR_S = 3600.0

_DDL = """
CREATE TABLE IF NOT EXISTS corrections (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    task TEXT NOT NULL,
    tenant TEXT NOT NULL DEFAULT '',
    label TEXT NOT NULL,
    text TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    raw BLOB,
    request_id TEXT,
    source TEXT NOT NULL,
    model TEXT,
    model_version TEXT,
    previous_label TEXT,
    previous_score REAL,
    previous_action TEXT
);
CREATE INDEX IF NOT EXISTS corrections_tenant ON corrections(tenant, created_at);
CREATE INDEX IF NOT EXISTS corrections_sha ON corrections(text_sha256);
"""
_COLUMNS = (
    "id, created_at, task, tenant, label, text, text_sha256, raw, request_id, source, model, "
    "model_version, previous_label, previous_score, previous_action"
)


@dataclass(frozen=True)
class Seen:
    """One served verdict, as a correction by request id needs it."""

    task: str
    raw: str | bytes  # the input as sent: normalized again only if it is corrected
    tenant: str | None
    labels: tuple[str, ...]
    model: str
    model_version: str
    label: str
    score: float | None
    action: str

    @property
    def size(self) -> int:
        return len(self.raw)


@dataclass(frozen=True)
class Correction:
    id: int
    created_at: float
    task: str
    tenant: str | None
    label: str
    text: str
    text_sha256: str
    raw: bytes | None
    request_id: str | None
    source: str  # "http", "spamd"
    model: str | None
    model_version: str | None
    previous_label: str | None
    previous_score: float | None
    previous_action: str | None

    def as_dict(self, *, with_raw: bool = False) -> dict[str, Any]:
        out = asdict(self)
        out["raw"] = (self.raw or b"").decode("utf-8", "replace") if with_raw else None
        return out


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Recent:
    """The last verdicts by request id, bounded by count and by bytes (oldest out first)."""

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self.max_items, self.max_bytes = max_items, max_bytes
        self._items: OrderedDict[str, Seen] = OrderedDict()
        self._bytes = 0

    def remember(self, request_id: str, seen: Seen) -> None:
        if self.max_items == 0 or seen.size > self.max_bytes:
            return
        old = self._items.pop(request_id, None)
        if old is not None:
            self._bytes -= old.size
        self._items[request_id] = seen
        self._bytes += seen.size
        while len(self._items) > self.max_items or self._bytes > self.max_bytes:
            _, dropped = self._items.popitem(last=False)
            self._bytes -= dropped.size

    def get(self, request_id: str) -> Seen | None:
        return self._items.get(request_id)

    def __len__(self) -> int:
        return len(self._items)


class FeedbackStore(SQLiteStore):
    def __init__(self, path: Path, *, max_per_tenant_per_hour: int = 1000) -> None:
        super().__init__(path, ddl=_DDL, schema_version=SCHEMA_VERSION, error=FeedbackError)
        self.max_per_tenant_per_hour = max_per_tenant_per_hour
        # Called with ("add" | "remove", row) after each committed write, in the writing
        # thread: every way a correction arrives (HTTP, spamc, console) ends in add/remove,
        # so per-tenant learning hooks here once (docs/learning.md).
        self.watchers: list[Callable[[str, Correction], None]] = []

    @classmethod
    def from_config(cls, config: Any) -> FeedbackStore:
        return cls(config.path, max_per_tenant_per_hour=config.max_per_tenant_per_hour)

    # --- writes ---------------------------------------------------------------------------

    def add(
        self,
        *,
        task: str,
        label: str,
        text: str,
        source: str,
        tenant: str | None = None,
        raw: bytes | None = None,
        request_id: str | None = None,
        previous: Seen | None = None,
        now: float | None = None,
    ) -> Correction:
        """Store one correction; ``Overloaded`` (429) past the tenant's hourly allowance."""
        now = time.time() if now is None else now
        with self._locked():
            return self._add(task, label, text, source, tenant, raw, request_id, previous, now)

    def _add(
        self,
        task: str,
        label: str,
        text: str,
        source: str,
        tenant: str | None,
        raw: bytes | None,
        request_id: str | None,
        previous: Seen | None,
        now: float,
    ) -> Correction:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            (recent,) = db.execute(
                "SELECT COUNT(*) FROM corrections WHERE tenant = ? AND created_at > ?",
                (tenant or "", now - HOUR_S),
            ).fetchone()
            if recent >= self.max_per_tenant_per_hour:
                raise Overloaded(
                    f"tenant {tenant or '(default)'!r} sent {recent} corrections in the last hour; "
                    f"at most {self.max_per_tenant_per_hour}",
                    retry_after_s=60,
                    hint="feedback.max_per_tenant_per_hour raises the allowance",
                )
            p = previous
            cur = db.execute(
                f"INSERT INTO corrections ({_COLUMNS.split(', ', 1)[1]}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    now,
                    task,
                    tenant or "",
                    label,
                    text,
                    sha256(text),
                    raw,
                    request_id,
                    source,
                    p.model if p else None,
                    p.model_version if p else None,
                    p.label if p else None,
                    p.score if p else None,
                    p.action if p else None,
                ),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        row = db.execute(f"SELECT {_COLUMNS} FROM corrections WHERE id = ?", (cur.lastrowid,))
        added = _row(row.fetchone())
        self._tell("add", [added])
        return added

    def remove(self, *, text_sha256: str, tenant: str | None = None) -> int:
        """Forget a tenant's corrections of one text (spamc -L forget); how many went."""
        return len(self.remove_rows(text_sha256=text_sha256, tenant=tenant))

    def remove_rows(self, *, text_sha256: str, tenant: str | None = None) -> list[Correction]:
        """``remove``, returning the rows that went (a learner subtracts exactly those)."""
        with self._locked() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                where, args = "text_sha256 = ? AND tenant = ?", (text_sha256, tenant or "")
                rows = db.execute(f"SELECT {_COLUMNS} FROM corrections WHERE {where}", args)
                gone = [_row(r) for r in rows.fetchall()]
                db.execute(f"DELETE FROM corrections WHERE {where}", args)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            self._tell("remove", gone)
            return gone

    def _tell(self, what: str, rows: Sequence[Correction]) -> None:
        for row in rows:
            for watch in self.watchers:
                watch(what, row)

    def data_version(self) -> int:
        """SQLite's data_version: it changes when *another* connection commits (a
        ``textgate learn`` beside a running gateway), not for this one's own writes."""
        return int(self._run("PRAGMA data_version")[0][0])

    # --- reads (a console's API) ----------------------------------------------------------

    def get(self, correction_id: int) -> Correction | None:
        rows = self._run(f"SELECT {_COLUMNS} FROM corrections WHERE id = ?", (correction_id,))
        return _row(rows[0]) if rows else None

    def find(
        self,
        *,
        task: str | None = None,
        tenant: str | None = None,
        label: str | None = None,
        before_id: int | None = None,
        limit: int = 100,
    ) -> list[Correction]:
        where, args = self._where(task, tenant, label)
        if before_id is not None:
            where.append("id < ?")
            args.append(before_id)
        sql = f"SELECT {_COLUMNS} FROM corrections"
        sql += f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._run(sql + " ORDER BY id DESC LIMIT ?", [*args, limit])  # -1: all
        return [_row(r) for r in rows]

    def labels_of(self, *, text_sha256: str, task: str, tenant: str | None = None) -> set[str]:
        """The labels a tenant's corrections already give one text (sa-learn's "already
        learned")."""
        rows = self._run(
            "SELECT DISTINCT label FROM corrections WHERE text_sha256 = ? AND tenant = ? "
            "AND task = ?",
            (text_sha256, tenant or "", task),
        )
        return {r[0] for r in rows}

    def count(
        self, *, task: str | None = None, tenant: str | None = None, label: str | None = None
    ) -> int:
        where, args = self._where(task, tenant, label)
        sql = "SELECT COUNT(*) FROM corrections" + (
            f" WHERE {' AND '.join(where)}" if where else ""
        )
        return int(self._run(sql, args)[0][0])

    @staticmethod
    def _where(
        task: str | None, tenant: str | None, label: str | None
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        args: list[Any] = []
        for column, value in (("task", task), ("tenant", tenant), ("label", label)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        return where, args

    # --- async wrappers for the gateway ---------------------------------------------------

    async def add_async(self, **kw: Any) -> Correction:
        return await asyncio.to_thread(lambda: self.add(**kw))

    async def remove_async(self, **kw: Any) -> int:
        return await asyncio.to_thread(lambda: self.remove(**kw))


def _row(r: tuple[Any, ...]) -> Correction:
    c = Correction(*r)
    return Correction(**{**asdict(c), "tenant": c.tenant or None})


def read_all(path: Path, task: str | None = None) -> list[Correction]:
    """Every correction in a store file (for training); a clear error if it is not one."""
    if not Path(path).is_file():
        raise FeedbackError("no such file", path=path, hint="pass the feedback.path of the gateway")
    store = FeedbackStore(path)
    try:
        return store.find(task=task, limit=-1)
    finally:
        store.close()


# --- folding corrections into training data ---------------------------------------------------


@dataclass
class FoldReport:
    corrections: int = 0  # read from the store for this task
    used: int = 0  # distinct texts folded in
    duplicates: int = 0  # older corrections of a text corrected again later
    over_cap: int = 0  # beyond a tenant's cap
    unknown_label: int = 0  # labels the training data does not have
    replaced: int = 0  # rows of the base data whose text a correction relabels
    weight: int = 1

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def fold(
    table: Any,
    corrections: Sequence[Correction],
    *,
    weight: int = 3,
    cap_per_tenant: int = 200,
) -> tuple[Any, FoldReport]:
    """``table`` (a data.Table) with the corrections folded in.

    Deduplicated (the newest correction of a text wins), capped per tenant (its newest
    ``cap_per_tenant`` distinct texts), weighted (each used correction appears ``weight``
    times; the split is by content hash, so the copies never straddle train and test), and
    authoritative (base rows with a corrected text are dropped). Base rows keep their source
    group and symbols, so ``data.split`` still keeps synthetic rows in training and the
    per-group cap still holds; a tenant's corrections are the group ``feedback/<tenant>``.
    """
    from textgate.data import Table, text_hash

    report = FoldReport(corrections=len(corrections), weight=weight)
    newest: dict[str, Correction] = {}
    for c in sorted(corrections, key=lambda c: -c.id):
        key = text_hash(c.text)
        if key in newest:
            report.duplicates += 1
        else:
            newest[key] = c
    per_tenant: dict[str, int] = {}
    used: dict[str, Correction] = {}
    for key, c in newest.items():  # newest first
        if c.label not in table.label_names:
            report.unknown_label += 1
            continue
        n = per_tenant.get(c.tenant or "", 0)
        if n >= cap_per_tenant:
            report.over_cap += 1
            continue
        per_tenant[c.tenant or ""] = n + 1
        used[key] = c
    report.used = len(used)
    keep = [i for i, t in enumerate(table.texts) if text_hash(t) not in used]
    report.replaced = len(table.texts) - len(keep)
    # subset keeps each row's group and symbols: without groups the per-group cap turns off
    # and the training-only (synthetic-*) rows would be split into validation and test.
    base = table.subset(keep)
    added = [c for c in used.values() for _ in range(weight)]
    folded = Table(
        texts=base.texts + tuple(c.text for c in added),
        labels=base.labels + tuple(c.label for c in added),
        label_names=table.label_names,
        source=f"{table.source}+feedback",
        report=table.report,
        groups=base.groups + tuple(feedback_group(c) for c in added) if table.groups else (),
        # a correction holds the text only, so it fires no structure symbols
        symbols=base.symbols + ((),) * len(added) if table.symbols else (),
    )
    return folded, report


def feedback_group(c: Correction) -> str:
    """A tenant's corrections are one source group of their own (capped per tenant by
    ``fold``, and left whole by the trainer's per-group cap: their weight is deliberate)."""
    from textgate.data.table import FEEDBACK_PREFIX

    return f"{FEEDBACK_PREFIX}{c.tenant or 'default'}"

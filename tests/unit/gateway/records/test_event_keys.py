"""Events keyed by the server: a client's id never overwrites, hides or pre-empts an event;
a repeated id is idempotent only for the same tenant and payload; a batch is one
transaction (issue 10 §2)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from textgate.errors import OutboxFull
from textgate.gateway.records.events import EVENT_SCHEMA, Event, ReleaseEvent
from textgate.gateway.records.outbox import SCHEMA_VERSION, Outbox, RequestRecord, read_rows


def event(rid: str, text: str = "hi", **over: Any) -> Event:
    fields: dict[str, Any] = {
        "request_id": rid,
        "task": "spam",
        "model": "spam",
        "model_version": "1",
        "variant": "int8",
        "label": "ham",
        "score": 0.1,
        "action": "allow",
    }
    return Event.of(text=text, **(fields | over))


def record(cid: str, payload: str, tenant: str | None = None) -> RequestRecord:
    return RequestRecord(tenant, cid, payload, json.dumps([{"answer": payload}]))


def test_event_ids_are_the_servers_and_request_ids_are_plain_fields() -> None:
    a, b = event("same"), event("same")
    assert a.key == a.event_id != b.event_id and len(a.event_id) == 32
    assert int(a.event_id, 16) >= 0  # hex, as the schema's pattern says
    assert "event_id" in EVENT_SCHEMA["required"]


def test_the_same_client_id_twice_keeps_both_events(tmp_path: Path) -> None:
    # Keyed by X-Request-ID, the second (spam) verdict's event was silently dropped.
    async def go() -> None:
        with Outbox(tmp_path / "o.db", publishing=False) as ob:
            assert await ob.put(event("r1", "benign", action="allow"))
            assert await ob.put(event("r1", "spam", action="quarantine"))

    asyncio.run(go())
    rows = [json.loads(r.payload) for r in read_rows(tmp_path / "o.db")]
    assert [(r["request_id"], r["action"]) for r in rows] == [("r1", "allow"), ("r1", "quarantine")]


def test_a_client_id_spelled_like_a_release_key_does_not_pre_empt_it(tmp_path: Path) -> None:
    async def go() -> None:
        with Outbox(tmp_path / "o.db", publishing=False) as ob:
            assert await ob.put(event("release/spam/7"))
            release = ReleaseEvent(
                request_id="release/spam/7", task="spam", op="promote", version=2, serving=2
            )
            assert await ob.put(release)  # its own key space
            assert not await ob.put(release)  # and still stored once when retried

    asyncio.run(go())
    schemas = [json.loads(r.payload)["schema"] for r in read_rows(tmp_path / "o.db")]
    assert schemas == ["textgate.event/2", "textgate.release-event/1"]


def test_repeat_with_same_tenant_and_payload_writes_nothing_and_returns_the_answer(
    tmp_path: Path,
) -> None:
    async def go() -> list[Any]:
        with Outbox(tmp_path / "o.db", publishing=False) as ob:
            first = await ob.put_batch([event("c1")], record("c1", "h1"))
            again = await ob.put_batch([event("c1")], record("c1", "h1"))
            other_payload = await ob.put_batch([event("c1", "spam")], record("c1", "h2"))
            other_tenant = await ob.put_batch([event("c1")], record("c1", "h1", tenant="t2"))
            looked = await ob.lookup(None, "c1")
            return [first, again, other_payload, other_tenant, looked, ob.stats.repeats]

    first, again, other_payload, other_tenant, looked, repeats = asyncio.run(go())
    assert first is None and json.loads(again) == [{"answer": "h1"}]
    assert other_payload is None and other_tenant is None  # new requests: new events
    assert looked is not None and looked[0] == "h2"  # the latest payload is remembered
    assert repeats == 1
    assert len(read_rows(tmp_path / "o.db")) == 3


def test_concurrent_repeats_write_once(tmp_path: Path) -> None:
    async def go() -> list[str | None]:
        with Outbox(tmp_path / "o.db", publishing=False) as ob:
            return list(
                await asyncio.gather(
                    *(ob.put_batch([event("c9")], record("c9", "h")) for _ in range(20))
                )
            )

    answers = asyncio.run(go())
    assert answers.count(None) == 1  # exactly one wrote; the others got its answer
    assert len(read_rows(tmp_path / "o.db")) == 1


def test_a_batch_is_one_transaction(tmp_path: Path) -> None:
    async def go() -> None:
        with Outbox(tmp_path / "o.db", max_depth=5) as ob:
            await ob.put_batch([event(f"b{i}") for i in range(4)])
            with pytest.raises(OutboxFull):
                await ob.put_batch([event(f"c{i}") for i in range(3)])  # 7 > 5: none of them
            assert ob.depth() == 4

    asyncio.run(go())
    assert sorted(json.loads(r.payload)["request_id"] for r in read_rows(tmp_path / "o.db")) == [
        "b0",
        "b1",
        "b2",
        "b3",
    ]


def test_a_version_1_outbox_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with Outbox(path, publishing=False):
        pass
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE requests")
    conn.execute("PRAGMA user_version=1")
    conn.commit()
    conn.close()

    async def go() -> str | None:
        with Outbox(path, publishing=False) as ob:
            return await ob.put_batch([event("m")], record("m", "h"))

    assert asyncio.run(go()) is None
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_requests_answered_together_commit_in_one_transaction(tmp_path: Path) -> None:
    # Group commit (issue 12 §3): put_batch calls of one event-loop turn (the requests of
    # one coalesced Triton call) are one transaction and one fsync; each caller gets its
    # own answer, and a repeat inside the group still gets the stored one.
    async def go() -> tuple[list[Any], int]:
        with Outbox(tmp_path / "o.db", publishing=False) as ob:
            await ob.put_batch([event("c0")], record("c0", "h0"))
            before = ob.stats.commits
            got = await asyncio.gather(
                *(
                    ob.put_batch([event(f"c{i}"), event(f"c{i}")], record(f"c{i}", f"h{i}"))
                    for i in range(6)
                )
            )
            return got, ob.stats.commits - before

    got, commits = asyncio.run(go())
    assert commits == 1
    assert got[0] == json.dumps([{"answer": "h0"}]) and got[1:] == [None] * 5
    rows = [json.loads(r.payload)["request_id"] for r in read_rows(tmp_path / "o.db")]
    assert sorted(rows) == ["c0", *sorted(f"c{i}" for i in range(1, 6) for _ in range(2))]


def test_a_full_outbox_refuses_only_the_request_that_does_not_fit(tmp_path: Path) -> None:
    async def go() -> list[Any]:
        with Outbox(tmp_path / "o.db", max_depth=3) as ob:
            return await asyncio.gather(
                ob.put_batch([event("a"), event("a")]),
                ob.put_batch([event("b"), event("b")]),  # 4 > 3: refused
                ob.put_batch([event("c")]),
                return_exceptions=True,
            )

    a, b, c = asyncio.run(go())
    assert a is None and c is None and isinstance(b, OutboxFull)
    assert [json.loads(r.payload)["request_id"] for r in read_rows(tmp_path / "o.db")] == [
        "a",
        "a",
        "c",
    ]

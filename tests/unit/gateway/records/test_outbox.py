"""The event outbox (SQLite WAL), the event schema and the publisher's round logic."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from textgate.config import Config, EventsConfig, KafkaConfig
from textgate.errors import ConfigError, OutboxError, OutboxFull
from textgate.gateway.records.events import EVENT_SCHEMA, SCHEMA_ID, Event, text_hash
from textgate.gateway.records.outbox import Outbox, read_rows
from textgate.gateway.records.publisher import Publisher, backoff_s, register_metrics


def key(i: int) -> str:
    """The server's event id of test event ``i`` (the outbox and Kafka key)."""
    return f"{i:032x}"


def event(i: int, **over: Any) -> Event:
    fields: dict[str, Any] = {
        "event_id": key(i),
        "request_id": f"r{i}",
        "task": "spam",
        "model": "spam",
        "model_version": "1",
        "variant": "int8",
        "label": "spam",
        "score": 0.97,
        "action": "quarantine",
        "timings_ms": {"total": 3.0},
    }
    return Event.of(text=f"text {i}", **(fields | over))


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# --- the event ---------------------------------------------------------------------------


def test_event_json_matches_its_schema_and_round_trips() -> None:
    e = event(1)
    data = e.to_dict()
    assert data["schema"] == SCHEMA_ID == EVENT_SCHEMA["$id"]
    assert set(EVENT_SCHEMA["required"]) <= set(data) <= set(EVENT_SCHEMA["properties"])
    assert data["text"] is None and data["text_sha256"] == text_hash("text 1")
    assert Event.from_json(e.to_json()) == e
    fields = {k: v for k, v in data.items() if k not in ("text", "text_sha256")}
    assert Event.of(text="hi", store_text=True, **fields).text == "hi"


def test_release_event_has_its_own_schema_beside_event_1(tmp_path: Path) -> None:
    from textgate.gateway.records.events import (
        RELEASE_EVENT_SCHEMA,
        RELEASE_SCHEMA_ID,
        ReleaseEvent,
    )

    e = ReleaseEvent(request_id="release/spam/7", task="spam", op="promote", version=2,
                     serving=2, previous_serving=1, reason="gate passed")  # fmt: skip
    data = json.loads(e.to_json())
    assert data["schema"] == RELEASE_SCHEMA_ID == RELEASE_EVENT_SCHEMA["$id"] != SCHEMA_ID
    props = RELEASE_EVENT_SCHEMA["properties"]
    assert set(RELEASE_EVENT_SCHEMA["required"]) <= set(data) <= set(props)
    assert data["op"] in props["op"]["enum"]
    # the classification event's schema has none of the release fields
    assert "op" not in EVENT_SCHEMA["properties"] and EVENT_SCHEMA["$id"] == "textgate.event/2"

    async def store() -> None:
        with Outbox(tmp_path / "o.db", publishing=False) as ob:
            assert await ob.put(e) and not await ob.put(e)  # dedup by the same key

    run(store())
    rows = read_rows(tmp_path / "o.db")
    assert [json.loads(r.payload) for r in rows] == [data]
    import subprocess
    import sys

    tail = [
        sys.executable,
        "-m",
        "textgate.cli",
        "events",
        "tail",
        "--outbox",
        str(tmp_path / "o.db"),
    ]
    shown = subprocess.run(tail, capture_output=True, text=True, timeout=60, check=True).stdout
    assert "release/spam/7  spam  promote v2 (serving v2)  gate passed" in shown


def test_event_needs_a_request_id() -> None:
    with pytest.raises(ValueError, match="request_id"):
        event(1, request_id="")


# --- put / claim / ack ---------------------------------------------------------------------


def test_put_claim_ack_release(tmp_path: Path) -> None:
    async def scenario() -> None:
        with Outbox(tmp_path / "o.db") as ob:
            for i in range(5):
                assert await ob.put(event(i))
            assert not await ob.put(event(0))  # the request id is the dedup key
            assert ob.depth() == 5 and ob.stats.duplicates == 1
            first = await ob.claim(3)
            assert [r.key for r in first] == [key(0), key(1), key(2)]
            assert [r.key for r in await ob.claim(10)] == [key(3), key(4)]  # not re-claimed
            await ob.ack([first[0].id, first[1].id])
            await ob.release([first[2].id])
            assert ob.depth() == 3
            again = await ob.claim(10)
            assert [r.key for r in again] == [key(2)] and again[0].attempts == 2
            assert ob.oldest_age_s() >= 0

    run(scenario())


def test_events_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "o.db"

    async def write() -> None:
        with Outbox(path) as ob:
            for i in range(4):
                await ob.put(event(i))
            await ob.ack([r.id for r in await ob.claim(1)])

    async def reread() -> list[str]:
        with Outbox(path) as ob:
            assert ob.depth() == 3
            return [r.key for r in await ob.claim(10)]  # claims are not durable

    run(write())
    assert run(reread()) == [key(1), key(2), key(3)]
    assert [r.key for r in read_rows(path, last=2)] == [key(2), key(3)]
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_write_that_fails_oddly_is_an_error_and_the_writer_lives_on(tmp_path: Path) -> None:
    # sqlite3 raises OverflowError (not sqlite3.Error) binding an int over 64 bits; the
    # writer thread must survive it, or every later put would wait forever.
    async def scenario() -> None:
        with Outbox(tmp_path / "o.db") as ob:
            with pytest.raises(OutboxError):
                await asyncio.wait_for(ob.put(event(1, time=2**70)), 5)
            assert await asyncio.wait_for(ob.put(event(2)), 5)
            assert ob.depth() == 1
            assert [r.key for r in await ob.claim(10)] == [key(2)]

    run(scenario())


def test_a_put_whose_caller_gave_up_does_not_stop_the_writer(tmp_path: Path) -> None:
    # A cancelled await cancels the writer's future; setting a result on it afterwards
    # raised InvalidStateError in the writer thread, and every later put hung.
    path = tmp_path / "o.db"

    async def scenario() -> None:
        with Outbox(path) as ob:
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")  # holds the write lock: the writer waits
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(ob.put(event(1)), 0.2)
            other.execute("COMMIT")
            other.close()
            assert await asyncio.wait_for(ob.put(event(2)), 5)
            # r1 was already in the writer's hands when its caller gave up: stored or not,
            # the writer goes on and r2 is stored.
            assert [r.key for r in await ob.claim(10)][-1] == key(2)

    run(scenario())


def test_a_path_sqlite_cannot_take_is_an_error_not_a_hang(tmp_path: Path) -> None:
    outcome: list[BaseException | None] = []

    def open_it() -> None:
        try:
            Outbox(tmp_path / "bad\0name.db").close()
            outcome.append(None)
        except BaseException as exc:  # the test inspects whatever came out
            outcome.append(exc)

    worker = threading.Thread(target=open_it, daemon=True)
    worker.start()
    worker.join(10)
    assert outcome, "Outbox() hung on a path with a NUL byte"
    assert isinstance(outcome[0], OutboxError)


def test_tail_reads_an_outbox_whose_path_has_uri_characters(tmp_path: Path) -> None:
    path = tmp_path / "ev#1?x%41.db"

    async def write() -> None:
        with Outbox(path) as ob:
            await ob.put(event(7))

    run(write())
    assert [r.key for r in read_rows(path)] == [key(7)]


def test_concurrent_writers_from_tasks_and_threads(tmp_path: Path) -> None:
    ob = Outbox(tmp_path / "o.db", synchronous="normal")

    def from_thread(base: int) -> None:
        for i in range(base, base + 100):
            ob.put_sync(event(i))

    async def scenario() -> None:
        threads = [threading.Thread(target=from_thread, args=(10_000 * k,)) for k in (1, 2)]
        for t in threads:
            t.start()
        await asyncio.gather(*(ob.put(event(i)) for i in range(500)))
        for t in threads:
            t.join()

    run(scenario())
    ob.close()
    rows = read_rows(tmp_path / "o.db")
    assert len(rows) == len({r.key for r in rows}) == 700


# --- the bound -----------------------------------------------------------------------------


def test_reject_policy_refuses_new_work_at_the_bound(tmp_path: Path) -> None:
    async def scenario() -> None:
        with Outbox(tmp_path / "o.db", max_depth=3, retry_after_s=7) as ob:
            for i in range(3):
                await ob.put(event(i))
            t0 = time.monotonic()
            with pytest.raises(OutboxFull) as info:
                await ob.put(event(3))
            assert time.monotonic() - t0 < 0.5 and info.value.retry_after_s == 7
            assert ob.stats.rejected == 1 and ob.depth() == 3  # nothing accepted was dropped
            await ob.ack([r.id for r in await ob.claim(1)])
            assert await ob.put(event(3))

    run(scenario())


def test_block_policy_waits_for_room_then_rejects(tmp_path: Path) -> None:
    async def scenario() -> None:
        with Outbox(tmp_path / "o.db", max_depth=1, overflow="block", block_timeout_s=0.3) as ob:
            await ob.put(event(0))
            t0 = time.monotonic()
            with pytest.raises(OutboxFull):
                await ob.put(event(1))
            assert time.monotonic() - t0 >= 0.3

            async def drain_soon() -> None:
                await asyncio.sleep(0.1)
                await ob.ack([r.id for r in await ob.claim(1)])

            _, stored = await asyncio.gather(drain_soon(), ob.put(event(1)))
            assert stored and ob.depth() == 1

    run(scenario())


def test_outbox_only_mode_keeps_recent_events_and_no_backlog(tmp_path: Path) -> None:
    with Outbox(tmp_path / "o.db", publishing=False, max_depth=1, retain_published=5) as ob:
        for i in range(20):
            ob.put_sync(event(i))  # never full: nothing waits for a publisher
        assert ob.depth() == 0
    assert [r.key for r in read_rows(tmp_path / "o.db")] == [key(i) for i in range(15, 20)]


# --- damaged and busy files ----------------------------------------------------------------


def test_corrupted_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(OutboxError, match="not a readable SQLite database") as info:
        Outbox(path)
    assert info.value.path == str(path) and "aside" in (info.value.hint or "")
    with pytest.raises(OutboxError, match="cannot be read"):
        read_rows(path)


def test_locked_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    ob = Outbox(path, busy_timeout_s=0.2)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # another process holding the write lock
    try:
        with pytest.raises(OutboxError, match="locked by another process"):
            Outbox(path, busy_timeout_s=0.2)  # opening needs the lock too
        with pytest.raises(OutboxError, match="locked by another process") as info:
            ob.put_sync(event(1))
        assert "outbox_path" in (info.value.hint or "")
        other.execute("ROLLBACK")
        assert ob.put_sync(event(1))  # usable again once the lock is gone
        ob.close()
    finally:
        other.close()


def test_newer_schema_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    sqlite3.connect(path).execute("PRAGMA user_version=99")
    with pytest.raises(OutboxError, match="schema version 99"):
        Outbox(path)
    with pytest.raises(OutboxError, match="does not exist"):
        read_rows(tmp_path / "missing.db")


# --- config --------------------------------------------------------------------------------


def test_events_config_keys() -> None:
    cfg = Config.from_dict(
        {"events": {"overflow": "block", "kafka": {"bootstrap_servers": "a:9092,b:9092"}}},
        env={"TEXTGATE_EVENTS__MAX_DEPTH": "10"},
    )
    assert cfg.events.max_depth == 10 and cfg.events.overflow == "block"
    assert cfg.events.kafka.bootstrap_servers == ("a:9092", "b:9092")
    assert EventsConfig().kafka.bootstrap_servers == ()  # default: outbox only
    with pytest.raises(ConfigError, match="events.kafka.retry_backoff_max_s"):
        Config.from_dict({"events": {"kafka": {"retry_backoff_max_s": 0.01}}})
    with pytest.raises(ConfigError, match="events.overflow"):
        Config.from_dict({"events": {"overflow": "drop"}})


# --- publisher rounds without a broker -----------------------------------------------------


class FakeProducer:
    """Delivers keys not in ``fail``; records what it was asked to send."""

    def __init__(self, fail: set[str]) -> None:
        self.fail = fail
        self.sent: list[str] = []
        self.pending: list[tuple[str, Any]] = []

    def produce(self, topic: str, value: bytes, key: bytes, on_delivery: Any) -> None:
        self.sent.append(key.decode())
        self.pending.append((key.decode(), on_delivery))

    def poll(self, timeout: float) -> int:
        done, self.pending = self.pending, []
        for key, cb in done:
            cb("broker down" if key in self.fail else None, None)
        return len(done)

    def purge(self) -> None:
        self.pending = []

    def flush(self, timeout: float) -> int:
        return 0


def test_publisher_acks_delivered_and_keeps_failed(tmp_path: Path) -> None:
    producers: list[FakeProducer] = []

    def factory(config: dict[str, Any]) -> FakeProducer:
        assert config["enable.idempotence"] is True and config["acks"] == "all"
        producers.append(FakeProducer(fail={key(1)} if not producers else set()))
        return producers[-1]

    async def scenario() -> None:
        with Outbox(tmp_path / "o.db") as ob:
            for i in range(3):
                await ob.put(event(i))
            # verify_resends off: "x:1" is no broker to read back (tests/unit/gateway/
            # test_publisher.py and the Kafka integration tests cover the read-back).
            kafka = KafkaConfig(bootstrap_servers=("x:1",), verify_resends=False)
            pub = Publisher(ob, kafka, producer_factory=factory)
            assert await pub.publish_once() == 1
            assert ob.depth() == 1 and pub.stats.failures == 1 and not pub.stats.broker_up
            assert await pub.publish_once() == 0  # a new producer sends the released row
            assert ob.depth() == 0 and pub.stats.published == 3 and pub.stats.producers == 2
            registry = CollectorRegistry()
            register_metrics(registry, ob, pub)
            assert registry.get_sample_value("textgate_events_publish_failures_total") == 1
            assert registry.get_sample_value("textgate_outbox_depth") == 0

    run(scenario())
    assert producers[1].sent == [key(1)]  # keyed by the server's event id


def test_publisher_survives_an_unexpected_error_and_keeps_draining(tmp_path: Path) -> None:
    calls: list[int] = []

    def factory(config: dict[str, Any]) -> FakeProducer:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("librdkafka: invalid configuration")  # e.g. KafkaException
        return FakeProducer(fail=set())

    async def scenario() -> None:
        with Outbox(tmp_path / "o.db") as ob:
            for i in range(3):
                await ob.put(event(i))
            # No read-back: the failed round sent nothing, and "x:1" is no broker to read.
            kafka = KafkaConfig(
                bootstrap_servers=("x:1",), retry_backoff_min_s=0.01, verify_resends=False
            )
            pub = Publisher(ob, kafka, producer_factory=factory, rand=lambda: 0.0)
            pub.start()
            deadline = time.monotonic() + 5
            while ob.depth() and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            await pub.stop()
            assert ob.depth() == 0 and pub.stats.published == 3
            assert "invalid configuration" in (pub.stats.last_error or "")

    run(scenario())


def test_backoff_is_bounded_exponential_with_jitter() -> None:
    assert backoff_s(1, 0.1, 10, lambda: 1.0) == pytest.approx(0.2)
    assert backoff_s(50, 0.1, 10, lambda: 1.0) == 10
    assert backoff_s(50, 0.1, 10, lambda: 0.0) == 0.1


def test_retention_holds_across_a_reopen_and_the_publishers_acks(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    with Outbox(path, publishing=False, retain_published=50) as ob:
        for i in range(20):
            ob.put_sync(event(i))
    with Outbox(path, publishing=False, retain_published=5) as ob:  # 20 on file, 5 kept
        ob.put_sync(event(20))
    assert [r.key for r in read_rows(path)] == [key(i) for i in range(16, 21)]

    async def publish() -> None:
        with Outbox(path, publishing=True, retain_published=3) as ob:
            for i in range(21, 25):
                await ob.put(event(i))
            await ob.ack([r.id for r in await ob.claim(2)])  # 5 + 2 published: 3 kept

    run(publish())
    rows = read_rows(path)
    assert [r.key for r in rows] == [key(i) for i in (20, 21, 22, 23, 24)]
    assert [r.published_at is not None for r in rows] == [True, True, True, False, False]


def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    with Outbox(path, publishing=False):
        with pytest.raises(OutboxError, match="locked by another process") as err:
            Outbox(path, publishing=False)
        assert "outbox_path" in (err.value.hint or "")
    with Outbox(path, publishing=False):  # released on close
        pass

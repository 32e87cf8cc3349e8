"""The publisher drops a failed round's producer off the event loop (librdkafka's flush and
destroy block for seconds on a dead broker, and the gateway's requests share the loop)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from textgate.config import KafkaConfig
from textgate.gateway.records.events import Event
from textgate.gateway.records.outbox import Outbox
from textgate.gateway.records.publisher import Publisher

SLOW_S = 0.4


class SlowProducer:
    """Fails every delivery; purge, flush and its destruction each block ``SLOW_S``."""

    def __init__(self, threads: dict[str, str]) -> None:
        self.threads = threads  # call -> name of the thread it ran in
        self.pending: list[Any] = []

    def _blocking(self, call: str) -> None:
        self.threads[call] = threading.current_thread().name
        time.sleep(SLOW_S)

    def produce(self, topic: str, *, value: bytes, key: bytes, on_delivery: Any) -> None:
        self.pending.append(on_delivery)

    def poll(self, timeout: float) -> int:
        done, self.pending = self.pending, []
        for cb in done:
            cb("broker down", None)
        return len(done)

    def purge(self) -> None:
        self._blocking("purge")

    def flush(self, timeout: float) -> int:
        self._blocking("flush")
        return 0

    def __del__(self) -> None:  # stands in for rd_kafka_destroy
        self._blocking("destroy")


def test_dropping_a_slow_producer_keeps_the_loop_responsive(tmp_path: Path) -> None:
    threads: dict[str, str] = {}
    gaps: list[float] = []

    async def ticker(stop: asyncio.Event) -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async def scenario() -> None:
        with Outbox(tmp_path / "o.db") as ob:
            await ob.put(Event.of(text="t", request_id="r1", task="spam", model="spam",
                                  model_version="1", variant="fp32", label="spam", score=0.9,
                                  action="review"))  # fmt: skip
            kafka = KafkaConfig(bootstrap_servers=("x:1",))
            pub = Publisher(ob, kafka, producer_factory=lambda _c: SlowProducer(threads))
            stop = asyncio.Event()
            tick = asyncio.create_task(ticker(stop))
            started = time.perf_counter()
            assert await pub.publish_once() == 1  # the failed round drops its producer
            took = time.perf_counter() - started
            stop.set()
            await tick
            assert ob.depth() == 1 and pub.stats.failures == 1
            assert took >= 3 * SLOW_S  # the blocking calls did run (and were awaited)

    asyncio.run(scenario())
    assert set(threads) == {"purge", "flush", "destroy"}
    assert all(name != "MainThread" for name in threads.values()), threads
    assert max(gaps) < SLOW_S / 2, f"the event loop stalled for {max(gaps):.3f} s"


class OkProducer:
    """Delivers everything it is given; remembers the keys."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.pending: list[Any] = []

    def produce(self, topic: str, *, value: bytes, key: bytes, on_delivery: Any) -> None:
        self.keys.append(key.decode())
        self.pending.append(on_delivery)

    def poll(self, timeout: float) -> int:
        done, self.pending = self.pending, []
        for cb in done:
            cb(None, None)
        return len(done)

    def purge(self) -> None: ...

    def flush(self, timeout: float) -> int:
        return 0


def _event(i: int) -> Event:
    return Event.of(
        text=f"m{i}", event_id=f"e-{i}", request_id=f"e-{i}", task="spam", model="spam",
        model_version="1", variant="fp32", label="ham", score=0.1, action="allow",
        timings_ms={"total": 1.0},
    )  # fmt: skip


def _reclaimed(tmp_path: Path, kafka: KafkaConfig, monkeypatch: Any, found: Any) -> Any:
    """Four rows, two of them claimed before (attempts 2 on this claim), one round."""
    from textgate.gateway.records import readback

    asked: list[set[str]] = []

    def keys_in_topic(_cfg: Any, _topic: str, _since: float, wanted: Any, **_: Any) -> Any:
        asked.append(set(wanted))
        return found(set(wanted))

    monkeypatch.setattr(readback, "keys_in_topic", keys_in_topic)
    producer = OkProducer()

    async def scenario() -> Publisher:
        with Outbox(tmp_path / "o.sqlite3") as outbox:
            for i in range(4):
                await outbox.put(_event(i))
            await outbox.release([r.id for r in await outbox.claim(2)])  # e-0, e-1 tried
            pub = Publisher(outbox, kafka, producer_factory=lambda _c: producer)
            assert await pub.publish_once() == 0
            assert outbox.depth() == 0
            return pub

    pub = asyncio.run(scenario())
    return pub, producer.keys, asked


def test_reclaimed_rows_found_in_the_topic_are_acked_not_sent(
    tmp_path: Path, monkeypatch: Any
) -> None:
    kafka = KafkaConfig(bootstrap_servers=("127.0.0.1:9",))
    pub, sent, asked = _reclaimed(tmp_path, kafka, monkeypatch, lambda w: {"e-0"})
    assert asked == [{"e-0", "e-1"}]  # only the re-claimed rows are looked for
    assert sent == ["e-1", "e-2", "e-3"]
    assert (pub.stats.readback_skipped, pub.stats.published) == (1, 4)


def test_a_failed_readback_sends_anyway_and_counts_it(tmp_path: Path, monkeypatch: Any) -> None:
    from textgate.gateway.records import readback

    def fail(_w: Any) -> Any:
        raise readback.ReadbackError("no read access")

    kafka = KafkaConfig(bootstrap_servers=("127.0.0.1:9",))
    pub, sent, _ = _reclaimed(tmp_path, kafka, monkeypatch, fail)
    assert sorted(sent) == ["e-0", "e-1", "e-2", "e-3"]
    assert pub.stats.readback_failures == 1 and pub.stats.readback_skipped == 0


def test_verify_resends_off_never_reads_back(tmp_path: Path, monkeypatch: Any) -> None:
    kafka = KafkaConfig(bootstrap_servers=("127.0.0.1:9",), verify_resends=False)
    _, sent, asked = _reclaimed(tmp_path, kafka, monkeypatch, lambda w: w)
    assert asked == [] and sorted(sent) == ["e-0", "e-1", "e-2", "e-3"]


def test_delivered_rows_whose_ack_failed_are_acked_next_round_not_orphaned(
    tmp_path: Path,
) -> None:
    """A full disk fails the ack of rows the broker has: they stay claimed, so without a
    retry no later round would claim them and the outbox would never drain (until a
    restart, which would send them again)."""
    from textgate.errors import OutboxError

    kafka = KafkaConfig(bootstrap_servers=("127.0.0.1:9",))
    producer = OkProducer()

    async def scenario() -> tuple[int, int, int]:
        with Outbox(tmp_path / "o.sqlite3") as outbox:
            for i in range(2):
                await outbox.put(_event(i))
            real_ack, failures = outbox.ack, [1]

            async def ack(ids: Any) -> None:
                if failures:
                    failures.pop()
                    raise OutboxError("has no room left on its disk", path=outbox.path)
                await real_ack(ids)

            outbox.ack = ack  # type: ignore[method-assign]
            pub = Publisher(outbox, kafka, producer_factory=lambda _c: producer)
            with pytest.raises(OutboxError):  # the round fails while the disk is full
                await pub.publish_once()
            depth_while_full = outbox.depth()
            await pub.publish_once()  # the disk has room again
            return depth_while_full, outbox.depth(), len(producer.keys)

    full, after, sends = asyncio.run(scenario())
    assert (full, after) == (2, 0)
    assert sends == 2  # acked, not sent again

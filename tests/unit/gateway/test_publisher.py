"""The publisher drops a failed round's producer off the event loop (librdkafka's flush and
destroy block for seconds on a dead broker, and the gateway's requests share the loop)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from textgate.config import KafkaConfig
from textgate.gateway.events import Event
from textgate.gateway.outbox import Outbox
from textgate.gateway.publisher import Publisher

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

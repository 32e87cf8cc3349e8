"""The publisher: a background asyncio task that drains the outbox to Kafka.

One round: claim up to ``batch_size`` rows, produce each (key = request id, value = the
event's JSON) with confluent-kafka's idempotent producer, wait for the broker's delivery
reports, ack the delivered rows and release the rest. Nothing here is on the response path:
the gateway only awaits ``Outbox.put``.

Why confluent-kafka and not aiokafka: the idempotent producer must get a producer id from
the broker; aiokafka only sends InitProducerId v0, which the Tansu broker used in tests
rejects, while librdkafka's newer request works. Idempotence is what makes the producer's
own retries (same producer id and sequence numbers) land exactly once.

Guarantees, as tested against a real broker:

* at least once from the outbox: a row is marked published only after the broker acked it;
* while the broker is down or frozen, librdkafka retries the same batches (exponential
  reconnect backoff with jitter, bounded by ``retry_backoff_max_s``) and the idempotent
  producer makes those retries land once, so after the outage every event is in the topic
  exactly once;
* a round whose deliveries fail (``delivery_timeout_s`` passed, a fatal producer error)
  releases its rows, drops the producer and backs off (exponential, full jitter, bounded);
  the next round produces them again with a new producer id;
* rows the broker acked whose ack in the outbox failed (its disk full) stay claimed and are
  acked before the next claim, so they are neither orphaned nor sent again.

* a row claimed again (the process died after the broker acked it and before the outbox
  recorded it; a delivery timed out locally although the broker wrote it) is first looked
  for in the topic (``readback``) and acked without a re-send when it is there.

Where a duplicate can still appear (consumers dedupe by the key, the request id): the read-
back could not finish (no read access to the topic, ``kafka.verify_resends: false``, a broker
that does not answer) and the re-send lands next to the first copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from textgate.config import KafkaConfig
from textgate.errors import OutboxError, require
from textgate.gateway.records import readback
from textgate.gateway.records.outbox import Outbox, OutboxRow

log = logging.getLogger("textgate.events")


class Producer(Protocol):
    """The part of ``confluent_kafka.Producer`` the publisher uses."""

    def produce(self, topic: str, *, value: bytes, key: bytes, on_delivery: Any) -> None: ...
    def poll(self, timeout: float) -> int: ...
    def purge(self) -> None: ...
    def flush(self, timeout: float) -> int: ...


@dataclass
class PublisherStats:
    published: int = 0
    failures: int = 0  # events whose delivery failed (they stay in the outbox)
    rounds: int = 0
    producers: int = 0  # producers created (a new one after each failed round)
    broker_up: bool = False
    last_error: str | None = None
    readback_skipped: int = 0  # re-sends avoided: the topic already held the event
    readback_failures: int = 0  # read-backs that could not finish (the rows were sent)


def producer_config(kafka: KafkaConfig) -> dict[str, Any]:
    """librdkafka settings for ``kafka``: idempotent, keyed, bounded retry backoff."""
    idempotent = kafka.acks == "all"
    min_ms = max(1, int(kafka.retry_backoff_min_s * 1000))
    max_ms = max(min_ms, int(kafka.retry_backoff_max_s * 1000))
    return {
        "bootstrap.servers": ",".join(kafka.bootstrap_servers),
        "client.id": kafka.client_id,
        "enable.idempotence": idempotent,
        "acks": "all" if idempotent else "1",
        "linger.ms": kafka.linger_ms,
        "message.timeout.ms": int(kafka.delivery_timeout_s * 1000),
        "retry.backoff.ms": min_ms,
        "retry.backoff.max.ms": max_ms,
        "reconnect.backoff.ms": min_ms,
        "reconnect.backoff.max.ms": max_ms,
        # A hung request is abandoned and retried (same sequence numbers) well before the
        # delivery timeout gives up on its messages.
        "socket.timeout.ms": max(1000, min(30000, int(kafka.delivery_timeout_s * 250))),
    }


def backoff_s(attempt: int, low: float, high: float, rand: Callable[[], float]) -> float:
    """Exponential backoff with full jitter: uniform in [low, min(high, low * 2**attempt)]."""
    cap = min(high, low * (2 ** min(attempt, 30)))
    return low + (cap - low) * rand()


class Publisher:
    """Drains an ``Outbox`` to one Kafka topic until ``stop()``."""

    def __init__(
        self,
        outbox: Outbox,
        kafka: KafkaConfig,
        *,
        producer_factory: Callable[[dict[str, Any]], Producer] | None = None,
        consumer_factory: Callable[[dict[str, Any]], Any] | None = None,
        idle_s: float = 0.05,
        rand: Callable[[], float] = random.random,
    ) -> None:
        if not kafka.bootstrap_servers:
            raise ValueError("no events.kafka.bootstrap_servers: the outbox is the only sink")
        self.outbox = outbox
        self.kafka = kafka
        self.stats = PublisherStats()
        self._factory = producer_factory or _confluent_producer
        self._consumer_factory = consumer_factory  # None: confluent_kafka's (readback)
        self._idle_s = idle_s
        self._rand = rand
        self._producer: Producer | None = None
        self._fatal: str | None = None
        self._unacked: list[int] = []  # delivered rows whose ack did not commit yet
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    def start(self) -> asyncio.Task[None]:
        """Run in the background of the current event loop."""
        self._task = asyncio.create_task(self.run(), name="textgate-event-publisher")
        return self._task

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Finish the current round (its rows are acked or released), then close."""
        self._stopping.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, timeout_s)
            except TimeoutError:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
        await self._drop_producer()

    async def run(self) -> None:
        attempt = 0
        while not self._stopping.is_set():
            try:
                failed = await self.publish_once()
            except OutboxError as exc:  # the disk, not the broker: log, back off, go on
                log.error("event outbox: %s", exc)
                failed = -1
            except Exception as exc:  # e.g. KafkaException from the factory
                # A dead background task would leave the outbox filling up in silence.
                log.exception("event publisher round failed")
                await self._record_failure(0, [f"{type(exc).__name__}: {exc}"])
                failed = -1
            if failed:
                attempt += 1
                await self._pause(backoff_s(attempt, *self._backoff_range(), self._rand))
            else:
                attempt = 0

    async def publish_once(self) -> int:
        """One round; returns how many claimed events failed (0: all sent, or none waited)."""
        if self._unacked:  # delivered, but their ack failed (a full disk): ack them first
            await self.outbox.ack(self._unacked)
            self._unacked = []
        rows = await self.outbox.claim(self.kafka.batch_size)
        if not rows:
            await self._pause(self._idle_s)
            return 0
        self.stats.rounds += 1
        try:
            rows = await self._skip_already_sent(rows)
            delivered, errors = await self._send(rows)
        except Exception:
            await self.outbox.release(r.id for r in rows)  # claimed rows stay sendable
            raise
        self._unacked = delivered  # kept until an ack commits: claimed rows are never orphaned
        await self.outbox.ack(delivered)
        self._unacked = []
        sent = set(delivered)
        failed = [r.id for r in rows if r.id not in sent]
        await self.outbox.release(failed)
        self.stats.published += len(delivered)
        if failed:
            await self._record_failure(len(failed), errors)
        else:
            self.stats.broker_up = True
        return len(failed)

    # --- internals -----------------------------------------------------------------------

    async def _skip_already_sent(self, rows: list[OutboxRow]) -> list[OutboxRow]:
        """Ack the re-claimed rows the topic already holds (``readback``); the rest to send."""
        again = [r for r in rows if r.attempts > 1]
        if not again or not self.kafka.verify_resends:
            return rows
        try:
            found = await asyncio.to_thread(
                readback.keys_in_topic,
                producer_config(self.kafka),
                self.kafka.topic,
                min(r.created_at for r in again),
                {r.key for r in again},
                timeout_s=min(self.kafka.delivery_timeout_s, readback.TIMEOUT_S),
                consumer_factory=self._consumer_factory,
            )
        except readback.ReadbackError as exc:
            self.stats.readback_failures += 1
            log.warning("read-back before re-sending %d events failed: %s", len(again), exc)
            return rows
        there = [r.id for r in again if r.key in found]
        if there:
            await self.outbox.ack(there)
            self.stats.readback_skipped += len(there)
            self.stats.published += len(there)
            log.info("%d events were already in the topic: acked, not sent again", len(there))
        return [r for r in rows if r.key not in found]

    async def _send(self, rows: Sequence[OutboxRow]) -> tuple[list[int], list[str]]:
        producer = self._ensure_producer()
        reports: dict[int, str | None] = {}
        for row in rows:
            try:
                producer.produce(
                    self.kafka.topic,
                    value=row.payload.encode("utf-8"),
                    key=row.key.encode("utf-8"),
                    on_delivery=_reporter(reports, row.id),
                )
            except Exception as exc:  # BufferError (local queue full), a closed producer
                reports[row.id] = f"produce: {exc}"
        # librdkafka reports every message by message.timeout.ms; the margin is a guard only.
        deadline = time.monotonic() + self.kafka.delivery_timeout_s + 10
        while len(reports) < len(rows) and time.monotonic() < deadline and not self._fatal:
            await asyncio.to_thread(producer.poll, 0.1)
        delivered = [i for i, err in reports.items() if err is None]
        errors = sorted({err for err in reports.values() if err is not None})
        if self._fatal:
            errors.append(self._fatal)
        return delivered, errors

    async def _record_failure(self, count: int, errors: list[str]) -> None:
        self.stats.failures += count
        self.stats.broker_up = False
        self.stats.last_error = "; ".join(errors[:3]) or "delivery not confirmed in time"
        log.warning("%d events not published yet: %s", count, self.stats.last_error)
        # A fresh producer (new producer id) after a failed round: a broker that lost its
        # state (restarted empty) rejects the old id forever.
        await self._drop_producer()

    def _ensure_producer(self) -> Producer:
        if self._producer is None:
            self._fatal = None
            config = producer_config(self.kafka) | {"error_cb": self._on_error}
            self._producer = self._factory(config)
            self.stats.producers += 1
        return self._producer

    async def _drop_producer(self) -> None:
        """Purge, flush and destroy the producer in a worker thread, off the event loop.

        librdkafka's flush and rd_kafka_destroy (run when the last reference goes) can
        block for seconds on a dead broker; the gateway's requests share this loop.
        """
        if self._producer is None:
            return
        # Handed over in a list that the thread empties: the last reference, and with it
        # the destroy, dies in the thread rather than in this coroutine's frame.
        box, self._producer = [self._producer], None
        await asyncio.to_thread(_dispose, box)

    def _on_error(self, err: Any) -> None:
        """librdkafka's error callback (in poll's thread); only fatal errors end a round."""
        fatal = bool(getattr(err, "fatal", lambda: False)())
        if fatal:
            self._fatal = f"fatal producer error: {err}"
        else:
            log.debug("kafka: %s", err)

    def _backoff_range(self) -> tuple[float, float]:
        return self.kafka.retry_backoff_min_s, self.kafka.retry_backoff_max_s

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)


def _dispose(box: list[Producer]) -> None:
    producer = box.pop()
    with contextlib.suppress(Exception):
        producer.purge()
        producer.flush(0)
    del producer  # the last reference: librdkafka's destroy runs here, in this thread


def _reporter(reports: dict[int, str | None], row_id: int) -> Callable[[Any, Any], None]:
    def report(err: Any, _msg: Any) -> None:
        reports[row_id] = None if err is None else str(err)

    return report


def _confluent_producer(config: dict[str, Any]) -> Producer:
    require("confluent_kafka", "serve")
    import confluent_kafka

    # librdkafka logs through this logger instead of printing to stderr.
    config = config | {"logger": logging.getLogger("textgate.events.kafka")}
    producer: Producer = confluent_kafka.Producer(config)
    return producer


# --- metrics ------------------------------------------------------------------------------


class EventCollector(Collector):
    """Prometheus view of the outbox and publisher, read at scrape time (nothing on the hot
    path)."""

    def __init__(self, outbox: Outbox, publisher: Publisher | None = None) -> None:
        self.outbox = outbox
        self.publisher = publisher

    def collect(self) -> Iterator[Metric]:
        ob, stats = self.outbox, self.outbox.stats
        yield _gauge("textgate_outbox_depth", "Unpublished events in the outbox", ob.depth())
        yield _gauge("textgate_outbox_max_depth", "Bound of unpublished events", ob.max_depth)
        yield _gauge(
            "textgate_outbox_oldest_unpublished_age_seconds",
            "Age of the oldest unpublished event (0: none waits)",
            ob.oldest_age_s(),
        )
        yield _counter("textgate_events_written", "Events stored in the outbox", stats.written)
        yield _counter(
            "textgate_events_rejected", "Classifications refused: outbox full", stats.rejected
        )
        pub = self.publisher.stats if self.publisher else PublisherStats()
        yield _counter("textgate_events_published", "Events acked by Kafka", pub.published)
        yield _counter(
            "textgate_events_publish_failures", "Event deliveries that failed", pub.failures
        )
        yield _gauge(
            "textgate_events_broker_up", "1 when the last publish round succeeded", pub.broker_up
        )
        yield _counter(
            "textgate_events_readback_skipped",
            "Re-sends avoided: the topic already held the event (after a crash or a timeout)",
            pub.readback_skipped,
        )
        yield _counter(
            "textgate_events_readback_failures",
            "Read-backs that could not finish; their events were sent again (at least once)",
            pub.readback_failures,
        )


def register_metrics(
    registry: CollectorRegistry, outbox: Outbox, publisher: Publisher | None = None
) -> EventCollector:
    collector = EventCollector(outbox, publisher)
    registry.register(collector)
    return collector


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=float(value))


def _counter(name: str, doc: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, doc, value=float(value))

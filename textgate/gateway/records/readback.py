"""Reading the topic back before a re-send: exactly once across a crash.

An event whose earlier send was never confirmed (the gateway died between the broker's ack
and the outbox's record of it; a delivery timed out locally although the broker wrote it)
would be produced again by a new producer id, which the broker cannot deduplicate. The
outbox knows which rows those are: every claim increments ``attempts`` durably, so a row
claimed again has ``attempts > 1``. Before such rows are sent, the publisher reads the topic
from just before the oldest one was created (``offsets_for_times``, every partition) to its
current end and acks the rows whose key it finds, without sending them.

Availability first: the read is bounded (``MAX_MESSAGES``, ``timeout_s``); when it cannot
finish (no read permission on the topic, a broker that does not answer) the rows are sent
anyway, as before (at least once; consumers dedupe by key), and the miss is counted
(``textgate_events_readback_failures_total``).
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Any

SLACK_S = 60.0  # clock skew between the row's creation and the message's timestamp
MAX_MESSAGES = 500_000  # read at most this many messages in one read-back
TIMEOUT_S = 10.0  # a round waits at most this long (a broker that is down fails it sooner)


class ReadbackError(Exception):
    """The topic could not be read back in time (the caller sends the rows anyway)."""


def keys_in_topic(
    config: dict[str, Any],
    topic: str,
    since: float,
    wanted: Collection[str],
    *,
    timeout_s: float,
    consumer_factory: Any = None,
) -> set[str]:
    """Which of ``wanted`` keys the topic holds in messages stamped at or after ``since``."""
    if not wanted:
        return set()
    consumer = (consumer_factory or _consumer)(config)
    try:
        return _scan(consumer, topic, since, set(wanted), time.monotonic() + timeout_s)
    except ReadbackError:
        raise
    except Exception as exc:  # KafkaException: no access, unknown topic, broker gone
        raise ReadbackError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        consumer.close()


def _scan(consumer: Any, topic: str, since: float, wanted: set[str], deadline: float) -> set[str]:
    from confluent_kafka import TopicPartition

    meta = consumer.list_topics(topic, timeout=_left(deadline)).topics.get(topic)
    if meta is None or meta.error is not None:
        return set()  # no topic yet: nothing was written to it
    stamp = int((since - SLACK_S) * 1000)
    starts = consumer.offsets_for_times(
        [TopicPartition(topic, p, stamp) for p in meta.partitions], timeout=_left(deadline)
    )
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=_left(deadline))[1]
        for p in meta.partitions
    }
    todo = {s.partition: s.offset for s in starts if 0 <= s.offset < ends[s.partition]}
    if not todo:
        return set()
    consumer.assign([TopicPartition(topic, p, o) for p, o in todo.items()])
    found: set[str] = set()
    read = 0
    while todo and found != wanted:
        if time.monotonic() > deadline or read > MAX_MESSAGES:
            raise ReadbackError(f"read {read} messages without reaching the topic's end")
        for msg in consumer.consume(1000, 0.2):
            if msg.error() is not None:
                continue
            read += 1
            key = (msg.key() or b"").decode("utf-8", "replace")
            if key in wanted:
                found.add(key)
            if msg.offset() + 1 >= ends[msg.partition()]:
                todo.pop(msg.partition(), None)
    return found


def _left(deadline: float) -> float:
    return max(0.1, deadline - time.monotonic())


def _consumer(config: dict[str, Any]) -> Any:
    import confluent_kafka

    return confluent_kafka.Consumer(
        {
            "bootstrap.servers": config["bootstrap.servers"],
            "client.id": f"{config.get('client.id', 'textgate')}-readback",
            "group.id": f"textgate-readback-{time.monotonic_ns()}",  # never committed
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "log_level": 0,
        }
    )

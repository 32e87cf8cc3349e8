"""Events end to end against a real Kafka-protocol broker (Tansu, started per test).

The claim under test (issue: "Events: none lost, none blocking"): after a broker outage
during a burst, every event is in the topic exactly once by request id, and writers never
wait for the broker.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from tests.helpers.kafka_fixtures import TansuBroker, tansu_broker  # noqa: F401  (the fixture)
from textgate import cli
from textgate.config import KafkaConfig
from textgate.gateway.records.events import EVENT_SCHEMA, Event
from textgate.gateway.records.outbox import Outbox
from textgate.gateway.records.publisher import Publisher, register_metrics

TOPIC = "textgate.events"


def event(i: int, prefix: str = "req") -> Event:
    return Event.of(
        text=f"message {i}",
        event_id=f"{prefix}-{i:05d}",  # the Kafka key; fixed here to check exactly-once
        request_id=f"{prefix}-{i:05d}",
        task="spam",
        model="spam",
        model_version="3",
        variant="int8",
        label="ham",
        score=0.01 * (i % 100),
        action="allow",
        timings_ms={"triton": 1.5, "total": 2.0},
    )


def kafka(broker: TansuBroker, **over: float) -> KafkaConfig:
    base: dict = {"retry_backoff_min_s": 0.05, "retry_backoff_max_s": 0.5, "batch_size": 100}
    return KafkaConfig(bootstrap_servers=(broker.bootstrap,), **(base | over))


@asynccontextmanager
async def pipeline(tmp: Path, cfg: KafkaConfig) -> AsyncIterator[tuple[Outbox, Publisher]]:
    outbox = Outbox(tmp / "outbox.sqlite3", max_depth=50_000)
    publisher = Publisher(outbox, cfg)
    publisher.start()
    try:
        yield outbox, publisher
    finally:
        await publisher.stop()
        outbox.close()


async def burst(outbox: Outbox, ids: range, *, writers: int, rate_per_s: float) -> list[float]:
    """Write events from concurrent writers at about ``rate_per_s``; returns put latencies."""
    latencies: list[float] = []
    pending = list(ids)

    async def writer() -> None:
        while pending:
            i = pending.pop(0)
            t0 = time.perf_counter()
            assert await outbox.put(event(i))
            latencies.append(time.perf_counter() - t0)
            await asyncio.sleep(writers / rate_per_s)

    await asyncio.gather(*(writer() for _ in range(writers)))
    return latencies


async def until(cond: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


def assert_exactly_once(keys: Counter[str], ids: range, prefix: str = "req") -> None:
    want = {f"{prefix}-{i:05d}" for i in ids}
    missing = sorted(want - set(keys))
    dups = sorted(k for k, n in keys.items() if n > 1)
    extra = sorted(set(keys) - want)
    assert (missing, dups, extra) == ([], [], []), (len(missing), len(dups), len(extra))


@pytest.mark.slow
@pytest.mark.kafka
def test_events_reach_kafka_once_with_metrics(
    tansu_broker: TansuBroker,  # noqa: F811
    tmp_path: Path,
) -> None:
    registry = CollectorRegistry()

    async def scenario() -> None:
        async with pipeline(tmp_path, kafka(tansu_broker)) as (outbox, publisher):
            register_metrics(registry, outbox, publisher)
            await burst(outbox, range(200), writers=8, rate_per_s=2000)
            await until(lambda: outbox.depth() == 0, 30, "the outbox to drain")

    asyncio.run(scenario())
    assert_exactly_once(tansu_broker.keys(TOPIC), range(200))
    assert registry.get_sample_value("textgate_events_published_total") == 200
    assert registry.get_sample_value("textgate_outbox_depth") == 0
    assert registry.get_sample_value("textgate_events_broker_up") == 1


@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.timeout(120)
def test_broker_stopped_during_burst_then_resumed_every_event_once(
    tansu_broker: TansuBroker,  # noqa: F811
    tmp_path: Path,
) -> None:
    """SIGSTOP mid-burst (in-flight produce requests hang and time out), SIGCONT later: the
    broker keeps its log, so retries that already landed would show up as duplicates."""
    n = 1200
    cfg = kafka(tansu_broker, delivery_timeout_s=12)  # requests time out after 3 s

    async def scenario() -> tuple[list[float], int]:
        async with pipeline(tmp_path, cfg) as (outbox, publisher):
            writing = asyncio.create_task(burst(outbox, range(n), writers=16, rate_per_s=300))
            await until(lambda: publisher.stats.published >= 150, 20, "publishing to start")
            tansu_broker.freeze()
            await asyncio.sleep(4.0)  # longer than the 3 s request timeout: retries
            backlog = outbox.depth()
            tansu_broker.thaw()
            latencies = await writing
            await until(lambda: outbox.depth() == 0, 60, "the outbox to drain")
            return latencies, backlog

    latencies, backlog = asyncio.run(scenario())
    assert backlog > 100  # the outage really held events back
    assert_exactly_once(tansu_broker.keys(TOPIC), range(n))
    # Writers never waited for the broker: a put is a local group commit.
    assert sorted(latencies)[int(0.99 * len(latencies))] < 0.25


@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.timeout(120)
def test_broker_killed_during_burst_and_restarted_every_event_once(
    tansu_broker: TansuBroker,  # noqa: F811
    tmp_path: Path,
) -> None:
    """A real stop: SIGKILL, then a new broker on the same port. Tansu's in-memory storage
    restarts empty, so the topic's first life is read before the kill (after a drain) and
    the second life after the restart; together they must hold every event exactly once."""
    cfg = kafka(tansu_broker, delivery_timeout_s=3)

    async def scenario() -> tuple[Counter[str], Publisher, list[float]]:
        async with pipeline(tmp_path, cfg) as (outbox, publisher):
            await burst(outbox, range(300), writers=8, rate_per_s=1000)
            await until(lambda: outbox.depth() == 0, 30, "the first drain")
            first = await asyncio.to_thread(tansu_broker.keys, TOPIC)
            tansu_broker.kill()
            latencies = await burst(outbox, range(300, 700), writers=8, rate_per_s=400)
            assert outbox.depth() > 300  # accepted and kept while the broker is gone
            await asyncio.to_thread(tansu_broker.start)
            latencies += await burst(outbox, range(700, 900), writers=8, rate_per_s=400)
            await until(lambda: outbox.depth() == 0, 60, "the drain after the restart")
            return first, publisher, latencies

    first, publisher, latencies = asyncio.run(scenario())
    second = tansu_broker.keys(TOPIC)
    assert not set(first) & set(second)  # nothing published before the outage was re-sent
    assert_exactly_once(first + second, range(900))
    assert publisher.stats.failures > 0 and publisher.stats.producers >= 2
    assert max(latencies) < 0.5


def test_events_tail_shows_outbox_events(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "outbox.sqlite3"
    with Outbox(path, publishing=False) as outbox:
        for i in range(12):
            outbox.put_sync(event(i))
    assert cli.main(["events", "tail", "--outbox", str(path), "-n", "5", "--json"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["request_id"] for r in rows] == [f"req-{i:05d}" for i in range(7, 12)]
    assert set(rows[0]) - {"published_at", "attempts"} <= set(EVENT_SCHEMA["properties"])
    assert cli.main(["events", "tail", "--outbox", str(path), "-n", "3"]) == 0
    text = capsys.readouterr().out
    assert "req-00011" in text and "allow" in text and "req-00008" not in text


def _sent_but_not_recorded(tmp: Path, broker: TansuBroker, ids: range) -> None:
    """What a gateway killed between the broker's ack and the outbox's record leaves: rows
    claimed once (attempts = 1), in the topic, still unpublished in the file."""
    from confluent_kafka import Producer

    async def scenario() -> None:
        with Outbox(tmp / "outbox.sqlite3", max_depth=50_000) as outbox:
            for i in ids:
                assert await outbox.put(event(i))
            rows = await outbox.claim(len(ids))
            assert len(rows) == len(ids)
            producer = Producer({"bootstrap.servers": broker.bootstrap, "log_level": 0})
            for r in rows:
                producer.produce(TOPIC, value=r.payload.encode(), key=r.key.encode())
            assert producer.flush(20) == 0
            # no ack: the process "dies" here

    asyncio.run(scenario())


@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.timeout(120)
@pytest.mark.parametrize("verify", [True, False], ids=["verified", "at-least-once"])
def test_events_sent_before_a_crash_are_not_sent_again(
    tansu_broker: TansuBroker,  # noqa: F811
    tmp_path: Path,
    verify: bool,
) -> None:
    """The restarted publisher reads the topic back for re-claimed rows: none is sent twice.
    With ``verify_resends: false`` the same run duplicates every one (the old behaviour)."""
    owed = range(40)
    _sent_but_not_recorded(tmp_path, tansu_broker, owed)
    fresh = range(40, 60)  # written after the restart: sent once, never read back

    async def restart() -> Publisher:
        async with pipeline(tmp_path, kafka(tansu_broker, verify_resends=verify)) as (ob, pub):
            await burst(ob, fresh, writers=4, rate_per_s=1000)
            await until(lambda: ob.depth() == 0, 30, "the outbox to drain")
            return pub

    publisher = asyncio.run(restart())
    keys = tansu_broker.keys(TOPIC)
    if verify:
        assert_exactly_once(keys, range(60))
        assert publisher.stats.readback_skipped == len(owed)
        assert publisher.stats.readback_failures == 0
    else:
        assert sorted(k for k, n in keys.items() if n == 2) == [f"req-{i:05d}" for i in owed]


@pytest.mark.slow
@pytest.mark.kafka
@pytest.mark.timeout(60)
def test_a_readback_that_cannot_reach_the_broker_sends_anyway(tmp_path: Path) -> None:
    from textgate.gateway.records import readback

    with pytest.raises(readback.ReadbackError):
        readback.keys_in_topic(
            {"bootstrap.servers": "127.0.0.1:9"}, TOPIC, time.time(), {"x"}, timeout_s=2
        )

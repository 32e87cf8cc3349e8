"""The gateway's door to the durable outbox: one event per classified text, release and
review events, and the Kafka publisher that drains it.

``EventSink(None)`` records nothing (a gateway built without an events section, as in unit
tests); with a section every ``put*`` is durable before it returns.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from textgate.config import EventsConfig
from textgate.gateway.records import publisher
from textgate.gateway.records.events import Event, ReleaseEvent, ReviewEvent
from textgate.gateway.records.outbox import Outbox, RequestRecord


class EventSink:
    """The outbox of one gateway and, when Kafka is configured, its publisher."""

    def __init__(self, events_config: EventsConfig | None = None) -> None:
        self.config = events_config
        self.outbox: Outbox | None = None
        self.publisher: publisher.Publisher | None = None
        if events_config is not None:
            self.outbox = Outbox.from_config(events_config)

    @property
    def enabled(self) -> bool:
        return self.outbox is not None

    @property
    def _store_text(self) -> bool:
        return bool(self.config is not None and self.config.store_text)

    async def put(self, *, text: str, **fields: Any) -> None:
        """Durable before it returns; raises OutboxFull (503) at the outbox's bound."""
        if self.outbox is not None:
            await self.outbox.put(Event.of(text=text, store_text=self._store_text, **fields))

    async def put_batch(
        self, items: list[dict[str, Any]], record: RequestRecord | None = None
    ) -> str | None:
        """A request's events (one per text) in one transaction, with its idempotency
        record; returns the stored answer when the record repeats an earlier request."""
        if self.outbox is None:
            return None
        events = [Event.of(store_text=self._store_text, **fields) for fields in items]
        return await self.outbox.put_batch(events, record)

    async def lookup(self, tenant: str | None, client_id: str) -> tuple[str, str] | None:
        """(payload hash, stored answer) of an earlier request with this client id."""
        if self.outbox is None:
            return None
        return await self.outbox.lookup(tenant, client_id)

    async def put_release(self, **fields: Any) -> None:
        """A release switch (``textgate.release-event/1``) into the same outbox."""
        if self.outbox is not None:
            await self.outbox.put(ReleaseEvent(**fields))

    async def put_review(self, **fields: Any) -> bool:
        """A console decision (``textgate.review-event/1``); False: its key was there."""
        if self.outbox is None:
            return False
        return await self.outbox.put(ReviewEvent(**fields))

    def depth(self) -> int:
        return int(self.outbox.depth()) if self.outbox is not None else 0

    async def start(self, registry: CollectorRegistry) -> None:
        """Start the Kafka publisher (when brokers are configured); expose outbox metrics."""
        if self.outbox is None or self.config is None:
            return
        if self.config.kafka.bootstrap_servers:
            self.publisher = publisher.Publisher(self.outbox, self.config.kafka)
            self.publisher.start()
        publisher.register_metrics(registry, self.outbox, self.publisher)

    async def stop(self) -> None:
        if self.publisher is not None:
            await self.publisher.stop()
            self.publisher = None
        if self.outbox is not None:
            self.outbox.close()
            self.outbox = None

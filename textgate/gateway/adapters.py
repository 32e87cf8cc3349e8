"""Normalization and the event outbox behind two small interfaces.

Both come from other modules (``textgate.normalize``; ``events.py`` + ``outbox/``). The gateway
talks only to ``Preparer`` and ``EventSink`` so that it keeps working, in a reduced form
(plain text and a best-effort MIME walk; no events), where those modules are absent.
"""

from __future__ import annotations

import dataclasses
import email
import email.policy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from textgate.errors import InvalidInput

try:
    from textgate import normalize as _normalize
except ImportError:  # pragma: no cover - the normalization module ships with the gateway
    _normalize = None  # type: ignore[assignment]

try:
    from textgate.gateway.events import Event as _Event
    from textgate.gateway.events import ReleaseEvent as _ReleaseEvent
    from textgate.gateway.events import ReviewEvent as _ReviewEvent
    from textgate.gateway.outbox import Outbox as _Outbox
except ImportError:  # pragma: no cover - the events modules ship with the gateway
    _Event = None  # type: ignore[assignment,misc]
    _ReleaseEvent = None  # type: ignore[assignment,misc]
    _ReviewEvent = None  # type: ignore[assignment,misc]
    _Outbox = None  # type: ignore[assignment,misc]


@dataclass(frozen=True)
class Prepared:
    """One input ready to score: the normalized text and the pieces to score."""

    text: str
    pieces: tuple[str, ...]
    notes: dict[str, Any] = field(default_factory=dict)


class Preparer:
    """Text or raw e-mail -> ``Prepared``, under the configured normalization settings."""

    def __init__(self, settings: Any = None, *, max_body_bytes: int = 1_048_576) -> None:
        if _normalize is None:
            self.settings: Any = None
        elif settings is None:
            self.settings = _normalize.NormalizeSettings(max_body_bytes=max_body_bytes)
        elif isinstance(settings, _normalize.NormalizeSettings):
            self.settings = settings
        else:  # the config's section, whose body limit is the gateway's
            plain = {"max_body_bytes": max_body_bytes, **_plain(settings)}
            self.settings = _normalize.NormalizeSettings.from_dict(plain)

    def settings_dict(self) -> dict[str, Any]:
        return _plain(self.settings) if self.settings is not None else {"normalize": "minimal"}

    def text(self, text: str, field_name: str = "text") -> Prepared:
        if _normalize is None:
            return _minimal(text, field_name)
        n = _normalize.normalize_text(text, self.settings, field=field_name)
        return Prepared(n.text, tuple(n.pieces), _notes(n.notes))

    async def email_off_loop(self, raw: bytes, pool: Any) -> Prepared:
        """``email`` in the parse pool (time budget, killable); in-process without one."""
        if pool is None or _normalize is None:
            return self.email(raw)
        n = await pool.email(raw, self.settings)
        return Prepared(n.text, tuple(n.pieces), _notes(n.notes))

    def email(self, raw: bytes) -> Prepared:
        if _normalize is None:
            message = email.message_from_bytes(raw, policy=email.policy.default)
            subject = str(message.get("subject", ""))
            body = message.get_body(("plain", "html"))
            text = f"{subject}\n{body.get_content() if body is not None else ''}"  # type: ignore[attr-defined]
            return _minimal(text, "message")
        n = _normalize.normalize_email(raw, self.settings)
        return Prepared(n.text, tuple(n.pieces), _notes(n.notes))


def _minimal(text: str, field_name: str) -> Prepared:
    cleaned = " ".join(text.split())
    if not cleaned:
        raise InvalidInput("no text to classify", field=field_name)
    return Prepared(cleaned, (cleaned,), {"chunks": 1, "truncated": False})


def _notes(notes: Any) -> dict[str, Any]:
    return dict(notes.as_dict()) if hasattr(notes, "as_dict") else _plain(notes)


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


class EventSink:
    """The durable outbox (one event per classified text), or nothing where it is absent."""

    def __init__(self, events_config: Any = None) -> None:
        self.config = events_config
        self.outbox: Any = None
        self.publisher: Any = None
        if events_config is not None and _Outbox is not None:
            self.outbox = _Outbox.from_config(events_config)

    @property
    def enabled(self) -> bool:
        return self.outbox is not None

    async def put(self, *, text: str, **fields: Any) -> None:
        """Durable before it returns; raises OutboxFull (503) at the outbox's bound."""
        if self.outbox is None or _Event is None:
            return
        store = bool(getattr(self.config, "store_text", False))
        await self.outbox.put(_Event.of(text=text, store_text=store, **fields))

    async def put_batch(self, items: list[dict[str, Any]], record: Any = None) -> str | None:
        """A request's events (one per text) in one transaction, with its idempotency
        record; returns the stored answer when the record repeats an earlier request."""
        if self.outbox is None or _Event is None:
            return None
        store = bool(getattr(self.config, "store_text", False))
        events = [_Event.of(store_text=store, **fields) for fields in items]
        result: str | None = await self.outbox.put_batch(events, record)
        return result

    async def lookup(self, tenant: str | None, client_id: str) -> tuple[str, str] | None:
        """(payload hash, stored answer) of an earlier request with this client id."""
        if self.outbox is None:
            return None
        found: tuple[str, str] | None = await self.outbox.lookup(tenant, client_id)
        return found

    async def put_release(self, **fields: Any) -> None:
        """A release switch (``textgate.release-event/1``) into the same outbox."""
        if self.outbox is None or _ReleaseEvent is None:
            return
        await self.outbox.put(_ReleaseEvent(**fields))

    async def put_review(self, **fields: Any) -> bool:
        """A console decision (``textgate.review-event/1``); False: its key was there."""
        if self.outbox is None or _ReviewEvent is None:
            return False
        added: bool = await self.outbox.put(_ReviewEvent(**fields))
        return added

    def depth(self) -> int:
        return int(self.outbox.depth()) if self.outbox is not None else 0

    async def start(self, registry: Any) -> None:
        """Start the Kafka publisher (when brokers are configured); expose outbox metrics."""
        if self.outbox is None:
            return
        from textgate.gateway import publisher

        kafka = getattr(self.config, "kafka", None)
        if kafka is not None and kafka.bootstrap_servers:
            self.publisher = publisher.Publisher(self.outbox, kafka)
            self.publisher.start()
        publisher.register_metrics(registry, self.outbox, self.publisher)

    async def stop(self) -> None:
        if self.publisher is not None:
            await self.publisher.stop()
            self.publisher = None
        if self.outbox is not None:
            self.outbox.close()
            self.outbox = None

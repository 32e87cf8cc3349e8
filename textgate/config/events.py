"""Section ``events``: the on-disk outbox and its Kafka publisher."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from textgate.config.checks import require


@dataclass(frozen=True, kw_only=True)
class KafkaConfig:
    """Where the publisher sends events; no bootstrap servers: the outbox is the only sink."""

    bootstrap_servers: tuple[str, ...] = ()  # host:port, ...; empty: outbox only
    topic: str = "textgate.events"
    client_id: str = "textgate"
    acks: Literal["all", "leader"] = "all"  # all: idempotent producer; leader: no idempotence
    batch_size: int = 500  # events claimed from the outbox per round
    linger_ms: int = 5
    delivery_timeout_s: float = 120.0  # an event not acked by then is retried in a later round
    retry_backoff_min_s: float = 0.1  # backoff while the broker is down: exponential, jittered
    retry_backoff_max_s: float = 10.0
    # Before re-sending an event whose first send was not confirmed (a crash, a timeout), read
    # the topic back and skip it when it is there: exactly once across a crash. Needs read
    # access to the topic; false: at least once (consumers dedupe by key).
    verify_resends: bool = True

    def __post_init__(self) -> None:
        require(
            all(":" in s for s in self.bootstrap_servers),
            "bootstrap_servers",
            "entries are host:port",
        )
        require(bool(self.topic), "topic", "must not be empty")
        require(self.batch_size >= 1, "batch_size", "must be >= 1")
        require(self.linger_ms >= 0, "linger_ms", "must be >= 0")
        require(self.delivery_timeout_s >= 1, "delivery_timeout_s", "must be >= 1")
        require(self.retry_backoff_min_s > 0, "retry_backoff_min_s", "must be > 0")
        require(
            self.retry_backoff_max_s >= self.retry_backoff_min_s,
            "retry_backoff_max_s",
            "must be >= retry_backoff_min_s",
        )


def default_outbox_path() -> Path:
    """``$TEXTGATE_CACHE_DIR/events.sqlite3``, default ``~/.cache/textgate/events.sqlite3``
    (the cache root ``textgate.build`` uses, computed here: config sits below build)."""
    root = os.environ.get("TEXTGATE_CACHE_DIR")
    if root:
        return Path(root).resolve() / "events.sqlite3"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).resolve() / "textgate" / "events.sqlite3"


@dataclass(frozen=True, kw_only=True)
class EventsConfig:
    """The classification events: the on-disk outbox and its publisher (docs/configuration.md)."""

    # Absolute by default (the cache dir): a relative default followed the working directory,
    # so two gateways started from one directory shared a file, and one started elsewhere
    # lost sight of its unpublished events.
    outbox_path: Path = field(default_factory=lambda: default_outbox_path())
    synchronous: Literal["full", "normal"] = "full"  # full: survives power loss; normal: crashes
    max_depth: int = 100_000  # unpublished events held at most
    overflow: Literal["reject", "block"] = "reject"  # at max_depth: 503, or wait for room first
    block_timeout_s: float = 1.0  # overflow: block waits this long for room, then rejects
    retry_after_s: int = 5  # the Retry-After of a 503 for a full outbox
    retain_published: int = 10_000  # published events kept for `textgate events tail`
    store_text: bool = False  # events carry the text's SHA-256; the text itself only if true
    kafka: KafkaConfig = field(default_factory=KafkaConfig)

    def __post_init__(self) -> None:
        require(self.max_depth >= 1, "max_depth", "must be >= 1")
        require(self.block_timeout_s > 0, "block_timeout_s", "must be > 0")
        require(self.retry_after_s >= 1, "retry_after_s", "must be >= 1")
        require(self.retain_published >= 0, "retain_published", "must be >= 0")

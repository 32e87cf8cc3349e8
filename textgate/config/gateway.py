"""Section ``gateway``: the HTTP gateway's address, limits, admin access, replay store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from textgate.config.checks import check_port, require


@dataclass(frozen=True, kw_only=True)
class GatewayConfig:
    """The HTTP gateway: limits, admin access, replay store."""

    host: str = "127.0.0.1"
    port: int = 8080
    tasks: tuple[str, ...] = ()  # tasks to serve (and wait for in /readyz); empty: all found
    max_body_bytes: int = 1_048_576
    max_batch: int = 64  # texts per request
    max_in_flight: int = 32  # requests talking to Triton at once
    max_queue: int = 64  # requests waiting for a slot; beyond: 429
    # Coalescing (textgate/gateway/scoring/coalesce.py): concurrent requests' texts share one
    # Triton call per model; sent at once while fewer than coalesce_max_inflight calls are
    # out, else queued until one returns or the oldest has waited coalesce_max_wait_ms.
    coalesce: bool = True
    coalesce_max_batch: int = 64  # texts per Triton call (clipped to the model's max batch)
    coalesce_max_wait_ms: float = 5.0
    # Triton calls per model at once before requests queue: 2 (one computing, one on the
    # wire) was the steadier of 1 and 2 over two side-by-side runs (docs/benchmarks.md).
    coalesce_max_inflight: int = 2
    queue_timeout_s: float = 2.0  # a request waiting longer for a slot gets 429
    retry_after_s: int = 1  # the Retry-After of 429 and 503 answers
    admin_token: str | None = None  # bearer token of POST /admin/reload; null: endpoint off
    rescore: bool = True  # re-score with the fp32 ensemble inside the band (when deployed)
    replay_dir: Path | None = None  # where anomalous requests are saved; null: not saved
    # Where the served tokenizer.json files are (a model repository, bundles), for the
    # unk_ratio of tasks that set policy unk_note_above; release.repository is added.
    tokenizer_dirs: tuple[Path, ...] = ()
    replay_disagreement: float = 0.1  # |fast - fp32| score difference that counts as anomalous
    # Campaign memory (textgate/gateway/scoring/campaign.py): the model's answer to an identical
    # message (same tenant, route, policy) reused for campaign_ttl_s; 0 entries: off.
    campaign_entries: int = 0
    campaign_ttl_s: float = 600.0
    log_format: Literal["json", "text"] = "json"
    # E-mail parsing runs in this many worker processes (0: in the request's own thread,
    # for tools and tests); a message not parsed within the budget is read best-effort.
    parse_workers: int = 2
    parse_budget_s: float = 1.0
    # The front door (textgate/gateway/http/frontdoor.py): per connection, before the app.
    max_request_header_bytes: int = 65_536  # request line + headers; beyond: 431
    header_timeout_s: float = 10.0  # the request head must arrive within this; else 408
    body_timeout_s: float = 30.0  # the body must arrive within this of its head; else 408
    idle_timeout_s: float = 5.0  # a kept-alive connection with no request is closed
    max_connections: int = 256  # connections and requests at once; beyond: 503

    def __post_init__(self) -> None:
        check_port(self.port, "port")
        require(self.parse_workers >= 0, "parse_workers", "must be >= 0")
        require(self.campaign_entries >= 0, "campaign_entries", "must be >= 0 (0: off)")
        require(self.campaign_ttl_s > 0, "campaign_ttl_s", "must be > 0")
        require(self.parse_budget_s > 0, "parse_budget_s", "must be > 0")
        require(
            self.max_request_header_bytes >= 1024, "max_request_header_bytes", "must be >= 1024"
        )
        for key in ("header_timeout_s", "body_timeout_s", "idle_timeout_s"):
            require(getattr(self, key) > 0, key, "must be > 0")
        require(self.max_connections >= 1, "max_connections", "must be >= 1")
        require(bool(self.host), "host", "must not be empty")
        require(self.max_body_bytes >= 1024, "max_body_bytes", "must be >= 1024")
        require(self.max_batch >= 1, "max_batch", "must be >= 1")
        require(self.max_in_flight >= 1, "max_in_flight", "must be >= 1")
        require(self.max_queue >= 0, "max_queue", "must be >= 0")
        require(self.coalesce_max_batch >= 1, "coalesce_max_batch", "must be >= 1")
        require(0 <= self.coalesce_max_wait_ms <= 1000, "coalesce_max_wait_ms", "0..1000")
        require(self.coalesce_max_inflight >= 1, "coalesce_max_inflight", "must be >= 1")
        require(self.queue_timeout_s > 0, "queue_timeout_s", "must be > 0")
        require(self.retry_after_s >= 1, "retry_after_s", "must be >= 1")
        require(
            self.admin_token is None or len(self.admin_token) >= 16,
            "admin_token",
            "must be at least 16 characters (or null to disable the admin endpoint)",
        )
        require(0 < self.replay_disagreement <= 1, "replay_disagreement", "must be within (0, 1]")

"""What every step of a request is handed: the runtime it started with, and its context.

``Runtime`` is everything a config reload replaces; a request takes the runtime current at
its start and keeps it to the end, so a reload never changes a request half-way. ``Context``
is one request's own: its id, tenant, idempotency keys, timings and deadline.

Their own module, below the service and the desk that both take them (no import cycle).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from textgate.config import Config
from textgate.gateway.records.replay import ReplayStore
from textgate.gateway.scoring.campaign import Campaigns
from textgate.gateway.scoring.coalesce import Coalescer
from textgate.gateway.scoring.limiter import Limiter
from textgate.gateway.scoring.policy import Policy
from textgate.gateway.scoring.prepare import Preparer
from textgate.gateway.scoring.routing import Router
from textgate.gateway.scoring.unk import UnkCounter
from textgate.triton_client import TritonClient


@dataclass
class Runtime:
    config: Config
    policy: Policy
    limiter: Limiter
    router: Router
    client: TritonClient
    preparer: Preparer
    replay: ReplayStore | None = None
    parse_pool: Any = None  # ParsePool; None: e-mail is parsed in-process
    coalescer: Coalescer | None = None  # None: one Triton call per request (coalesce: false)
    unk: UnkCounter | None = None  # None: no unk_ratio (no tokenizer files to read)
    campaigns: Campaigns | None = None  # None: every item goes to Triton (campaign.py)


@dataclass
class Context:
    request_id: str
    tenant: str | None = None
    # A canary key: a raw e-mail's From address, else the X-Sender header (tenant and
    # request id are the other keys).
    sender: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # passed on to Triton
    # Idempotency: the client's own X-Request-ID (None when it sent none) and a hash of
    # task + media type + body; a repeat of both (same tenant) gets the earlier answer.
    client_id: str | None = None
    payload_sha256: str | None = None
    repeated: bool = False  # set when the answer is the stored one
    timings_ms: dict[str, float] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)  # the normalized texts (the review store)
    queue_id: str | None = None  # the MTA's for a milter scan: a held message is released by it
    started: float = field(default_factory=time.perf_counter)
    # One Triton deadline per request (monotonic), shared by the fast pass and the re-score:
    # a fresh deadline per call let a re-score run past the client's timeout.
    deadline: float | None = None

"""Prometheus metrics of the gateway, in a registry of their own (one per app).

The events module adds its outbox and publisher metrics (depth, publish failures) to this
registry; ``/metrics`` also serves the default registry (process metrics).
"""

from __future__ import annotations

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

STAGES = ("normalize", "queue", "triton", "policy", "total")
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "textgate_requests",
            "Classified items and failed requests by task, action and HTTP status",
            ["task", "action", "status"],
            registry=r,
        )
        self.stage = Histogram(
            "textgate_stage_seconds",
            "Latency per request stage",
            ["stage"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.rescores = Counter(
            "textgate_rescores",
            "Items re-scored with the fp32 variant inside the band",
            ["task", "changed"],
            registry=r,
        )
        self.in_flight = Gauge("textgate_in_flight", "Requests being handled", registry=r)
        self.rejected = Counter(
            "textgate_overloaded", "Requests refused with 429 (in-flight bound)", registry=r
        )
        self.endpoint_healthy = Gauge(
            "textgate_triton_endpoint_healthy",
            "1 while a Triton endpoint is in rotation",
            ["endpoint"],
            registry=r,
        )
        self.retries = Gauge(
            "textgate_triton_retries", "Attempts beyond the first (UNAVAILABLE)", registry=r
        )
        self.replays = Counter(
            "textgate_replay_saved", "Anomalous outputs saved to the replay store", registry=r
        )
        self.best_effort = Counter(
            "textgate_best_effort",
            "E-mails read best-effort (guard tripped, unreadable MIME, parse time budget)",
            ["reason"],
            registry=r,
        )
        self.repeated_ids = Counter(
            "textgate_repeated_request_ids",
            "Requests whose X-Request-ID was seen before (same tenant): replayed = same "
            "payload, answered from the record; new_payload = scored as a new request",
            ["outcome"],
            registry=r,
        )
        self.reloads = Counter(
            "textgate_config_reloads", "Config reloads by result", ["result"], registry=r
        )

    def observe_stages(self, timings_ms: dict[str, float]) -> None:
        for stage in STAGES:
            if stage in timings_ms:
                self.stage.labels(stage).observe(timings_ms[stage] / 1000.0)

    def render(self) -> bytes:
        return generate_latest(self.registry) + generate_latest(REGISTRY)

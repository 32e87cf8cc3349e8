"""Prometheus metrics of the gateway, in a registry of their own (one per app).

The events module adds its outbox and publisher metrics (depth, publish failures) to this
registry; ``/metrics`` also serves the default registry (process metrics). The recording
and alert rules in ``deploy/prometheus/`` and the dashboards in ``deploy/grafana/`` read
these names: renaming one is a breaking change for operators (their tests catch it).

Cardinality is bounded by construction: ``task`` is a served task or ``unknown`` (a path
segment is client input), ``tenant`` is a configured tenant or ``none``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from textgate.errors import Kind, kind_of

STAGES = ("normalize", "queue", "triton", "policy", "total")
# Chosen for the SLO (docs/deploy.md: 99 % of requests within 500 ms): fine steps where the
# objective and the usual P50..P99 lie, nothing below 5 ms (no stage is that precise) and
# nothing past 2 s (the request deadline; beyond it only +Inf matters).
STAGE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0)
UNKNOWN_TASK = "unknown"
NO_TENANT = "none"
# The requests counter's ``status`` label speaks HTTP's numbers for every front end (the
# dashboards and alert rules read them): a spamd or milter scan that failed counts here under
# the status an HTTP client would have seen. The metrics' own table, by kind.
STATUS_LABEL: dict[Kind, int] = {Kind.INVALID: 422, Kind.TOO_LARGE: 413, Kind.UNSUPPORTED: 415}
STATUS_LABEL |= {Kind.NOT_FOUND: 404, Kind.UNAUTHENTICATED: 401, Kind.FORBIDDEN: 403}
STATUS_LABEL |= {Kind.CONFLICT: 409, Kind.OVERLOADED: 429, Kind.UNAVAILABLE: 503}
STATUS_LABEL |= {Kind.TIMEOUT: 504, Kind.UPSTREAM: 502, Kind.INTERNAL: 500, Kind.BUG: 500}


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "textgate_requests",
            "Classified items (status 200) and failed requests by task, tenant, action, status",
            ["task", "tenant", "action", "status"],
            registry=r,
        )
        self.stage = Histogram(
            "textgate_stage_seconds",
            "Latency per request stage (total: the whole classify request)",
            ["task", "stage"],
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        self.served = Counter(
            "textgate_served",
            "Classified items by task and the model version and variant that answered",
            ["task", "version", "variant"],
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
        self.listed = Counter(
            "textgate_sender_listed", "Messages a tenant's sender list decided", ["task", "list"],
            registry=r,
        )  # fmt: skip
        self.languages = Counter(
            "textgate_language_unwanted", "Items in a language their task's policy does not read",
            ["task", "language"], registry=r,
        )  # fmt: skip
        self.learned = Counter(
            "textgate_tenant_learning_changed", "Items whose action a tenant's learning changed",
            ["task", "action"], registry=r,
        )  # fmt: skip
        self.campaigns = Counter(
            "textgate_campaign_memory", "Items looked up in the campaign memory by result",
            ["task", "result"], registry=r,
        )  # fmt: skip
        self.cascade = Counter(
            "textgate_cascade", "Items scored, by the cascade's path (cheap: n-grams alone)",
            ["task", "path"], registry=r,
        )  # fmt: skip
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
        # Children of the per-request series, looked up once: ``labels()`` validates and
        # locks on every call, seven times a single-text request (docs/benchmarks.md, "The
        # gateway's CPU per request"). Label values are
        # bounded (module docstring), so is this cache; no series is ever removed.
        self._children: dict[tuple[Any, ...], Any] = {}

    def _child(self, metric: Any, *values: str) -> Any:
        key = (id(metric), *values)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*values)
        return child

    def classified(
        self, task: str, tenant: str | None, results: Iterable[Mapping[str, Any]]
    ) -> None:
        """One answered request: its items by action, and which model answered each."""
        for r in results:
            self._child(self.requests, task, tenant or NO_TENANT, r["action"], "200").inc()
            model = r.get("model") or {}
            version = str(model.get("version", ""))
            self._child(self.served, task, version, r.get("precision_path") or "").inc()

    def failed(self, task: str, known: Collection[str], tenant: str | None, status: int) -> None:
        self.requests.labels(
            task_label(task, known), tenant or NO_TENANT, "none", str(status)
        ).inc()

    def failed_with(
        self, task: str, known: Collection[str], tenant: str | None, exc: BaseException
    ) -> None:
        """A request of a front end without statuses of its own (spamd, milter) failed."""
        self.failed(task, known, tenant, STATUS_LABEL[kind_of(exc)])

    def observe_stages(self, timings_ms: Mapping[str, float], task: str = UNKNOWN_TASK) -> None:
        for stage in STAGES:
            if stage in timings_ms:
                self._child(self.stage, task, stage).observe(timings_ms[stage] / 1000.0)

    def render(self) -> bytes:
        return generate_latest(self.registry) + generate_latest(REGISTRY)


def task_label(task: str, known: Collection[str]) -> str:
    """The task as a label value: a served one, else ``unknown`` (bounded cardinality)."""
    return task if task in known else UNKNOWN_TASK

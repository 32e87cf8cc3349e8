"""textgate's configuration: frozen keyword-only dataclasses, one per section.

A configuration is read from a YAML file (``Config.from_file``) or a dict
(``Config.from_dict``), then environment overrides ``TEXTGATE_<SECTION>__<KEY>`` (nested
keys joined by ``__``, e.g. ``TEXTGATE_REPOSITORY__DYNAMIC_BATCHING__MAX_QUEUE_DELAY_MICROSECONDS``)
are applied on top. Every problem is a ``ConfigError`` that names the dotted key.

To add a section: write a frozen keyword-only dataclass whose ``__post_init__`` validates
with ``_require`` (naming keys relative to the section), then add it as a field of
``Config``. The loader walks the type hints; no other code changes.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from textgate.errors import ConfigError

ENV_PREFIX = "TEXTGATE_"


def _require(ok: bool, key: str, problem: str, hint: str | None = None) -> None:
    if not ok:
        raise ConfigError(key, problem, hint=hint)


def _check_port(value: int, key: str) -> None:
    _require(0 <= value <= 65535, key, f"port {value} is outside 0..65535 (0 picks a free port)")


# --- triton -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class TritonConfig:
    """How to find and run ``tritonserver``."""

    binary: Path | None = None  # default: env TEXTGATE_TRITONSERVER, then the pytriton wheel
    backend_dir: Path | None = None  # an install's backends; default: prepared from the wheel
    address: str = "127.0.0.1"  # bind address of all three endpoints
    http_port: int = 8000
    grpc_port: int = 8001
    metrics_port: int = 8002
    log_file: Path | None = None  # default: a file in the server's temporary work directory
    log_verbose: int = 0
    startup_timeout_s: float = 120.0
    exit_timeout_s: int = 10

    def __post_init__(self) -> None:
        for key in ("http_port", "grpc_port", "metrics_port"):
            _check_port(getattr(self, key), key)
        _require(self.log_verbose >= 0, "log_verbose", "must be >= 0")
        _require(self.startup_timeout_s > 0, "startup_timeout_s", "must be > 0")
        _require(self.exit_timeout_s >= 0, "exit_timeout_s", "must be >= 0")
        _require(bool(self.address), "address", "must not be empty")


# --- repository ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DynamicBatchingConfig:
    enabled: bool = True
    preferred_batch_sizes: tuple[int, ...] = ()
    max_queue_delay_microseconds: int = 2000

    def __post_init__(self) -> None:
        _require(
            all(n > 0 for n in self.preferred_batch_sizes),
            "preferred_batch_sizes",
            "sizes must be > 0",
        )
        _require(self.max_queue_delay_microseconds >= 0, "max_queue_delay_microseconds", ">= 0")


@dataclass(frozen=True, kw_only=True)
class InstanceGroupConfig:
    count: int = 1
    kind: Literal["cpu", "gpu"] = "cpu"
    gpus: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        _require(self.count >= 1, "count", "must be >= 1")
        _require(not (self.gpus and self.kind == "cpu"), "gpus", "only valid with kind: gpu")


@dataclass(frozen=True, kw_only=True)
class VersionPolicyConfig:
    policy: Literal["latest", "all", "specific"] = "latest"
    latest: int = 1  # how many of the newest versions to serve (policy: latest)
    versions: tuple[int, ...] = ()  # which versions to serve (policy: specific)

    def __post_init__(self) -> None:
        _require(self.latest >= 1, "latest", "must be >= 1")
        _require(
            self.policy != "specific" or bool(self.versions),
            "versions",
            "policy 'specific' needs at least one version",
        )
        _require(all(v >= 1 for v in self.versions), "versions", "versions are integers >= 1")


VARIANTS = ("auto", "fp32", "fp32-opt", "fp16", "int8")


@dataclass(frozen=True, kw_only=True)
class RepositoryConfig:
    """What the repository builder generates (see docs/configuration.md)."""

    target: Literal["embedded", "triton-container"] = "embedded"
    # auto: fused on the embedded target (one Python step, no ensemble hops: measured
    # fastest), bucket on the container target (native ORT needs the three-step ensemble).
    shape_strategy: Literal["auto", "bucket", "fixed", "fused"] = "auto"
    bucket_lengths: tuple[int, ...] = (16, 32, 64, 128, 256)
    max_batch_size: int = 64
    dynamic_batching: DynamicBatchingConfig = field(default_factory=DynamicBatchingConfig)
    instance_group: InstanceGroupConfig = field(default_factory=InstanceGroupConfig)
    helper_instances: int = 1  # instances of the tokenize and postprocess models
    version_policy: VersionPolicyConfig = field(default_factory=VersionPolicyConfig)
    variant: str = "auto"  # auto: the bundle's default_variant for the instance kind
    ort_intra_op_threads: int = 0  # 0: ONNX Runtime's default (one per core)
    ort_inter_op_threads: int = 1
    accelerator: Literal["none", "cuda", "tensorrt"] = "none"  # triton-container, GPU only
    tensorrt_precision: Literal["fp32", "fp16"] = "fp16"
    tensorrt_max_workspace_bytes: int = 1 << 30
    # Also serve <task>_fp32 (this fp32 file) for the gateway's re-score; none: off
    rescore_variant: Literal["none", "fp32", "fp32-opt"] = "none"

    @property
    def strategy(self) -> Literal["bucket", "fixed", "fused"]:
        """The shape strategy in effect (``auto`` resolved for the target)."""
        if self.shape_strategy == "auto":
            return "fused" if self.target == "embedded" else "bucket"
        return self.shape_strategy

    def __post_init__(self) -> None:
        _require(bool(self.bucket_lengths), "bucket_lengths", "needs at least one length")
        _require(all(n > 0 for n in self.bucket_lengths), "bucket_lengths", "lengths must be > 0")
        _require(
            list(self.bucket_lengths) == sorted(set(self.bucket_lengths)),
            "bucket_lengths",
            "lengths must be strictly increasing",
        )
        _require(self.max_batch_size >= 1, "max_batch_size", "must be >= 1")
        bad = [n for n in self.dynamic_batching.preferred_batch_sizes if n > self.max_batch_size]
        _require(
            not bad,
            "dynamic_batching.preferred_batch_sizes",
            f"{bad} exceed max_batch_size {self.max_batch_size}",
        )
        _require(self.helper_instances >= 1, "helper_instances", "must be >= 1")
        _require(self.variant in VARIANTS, "variant", f"must be one of {', '.join(VARIANTS)}")
        _require(self.ort_intra_op_threads >= 0, "ort_intra_op_threads", "must be >= 0")
        _require(self.ort_inter_op_threads >= 0, "ort_inter_op_threads", "must be >= 0")
        _require(
            not (self.shape_strategy == "fused" and self.target == "triton-container"),
            "shape_strategy",
            "'fused' runs tokenizer and ONNX Runtime in one Python model; "
            "it exists only for target 'embedded'",
        )
        _require(
            self.accelerator == "none" or self.target == "triton-container",
            "accelerator",
            "execution accelerators apply to target 'triton-container' only",
        )


# --- client (gateway -> Triton) ----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ClientConfig:
    """How the gateway talks to Triton over gRPC (see docs/configuration.md)."""

    endpoints: tuple[str, ...] = ()  # host:port of Triton gRPC; empty: the embedded server
    timeout_s: float = 5.0  # per-request deadline, retries included
    retries: int = 1  # extra attempts, only after UNAVAILABLE, each on another endpoint
    health_interval_s: float = 1.0  # how often every endpoint's readiness is probed
    eject_after_failures: int = 1  # consecutive connection failures that eject an endpoint
    reconnect_backoff_ms: int = 500  # gRPC's reconnect backoff cap: quick recovery after a restart

    def __post_init__(self) -> None:
        _require(self.timeout_s > 0, "timeout_s", "must be > 0")
        _require(0 <= self.retries <= 5, "retries", "must be within 0..5")
        _require(self.health_interval_s > 0, "health_interval_s", "must be > 0")
        _require(self.eject_after_failures >= 1, "eject_after_failures", "must be >= 1")
        _require(self.reconnect_backoff_ms >= 100, "reconnect_backoff_ms", "must be >= 100")
        for i, url in enumerate(self.endpoints):
            host, _, port = url.rpartition(":")
            _require(bool(host) and port.isdigit(), f"endpoints[{i}]", f"{url!r} is not host:port")


# --- gateway ------------------------------------------------------------------------------


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
    # Coalescing (textgate/gateway/coalesce.py): concurrent requests' texts share one
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
    replay_disagreement: float = 0.1  # |fast - fp32| score difference that counts as anomalous
    log_format: Literal["json", "text"] = "json"
    # E-mail parsing runs in this many worker processes (0: in the request's own thread,
    # for tools and tests); a message not parsed within the budget is read best-effort.
    parse_workers: int = 2
    parse_budget_s: float = 1.0
    # The front door (textgate/gateway/frontdoor.py): per connection, before the app.
    max_request_header_bytes: int = 65_536  # request line + headers; beyond: 431
    header_timeout_s: float = 10.0  # the request head must arrive within this; else 408
    body_timeout_s: float = 30.0  # the body must arrive within this of its head; else 408
    idle_timeout_s: float = 5.0  # a kept-alive connection with no request is closed
    max_connections: int = 256  # connections and requests at once; beyond: 503

    def __post_init__(self) -> None:
        _check_port(self.port, "port")
        _require(self.parse_workers >= 0, "parse_workers", "must be >= 0")
        _require(self.parse_budget_s > 0, "parse_budget_s", "must be > 0")
        _require(
            self.max_request_header_bytes >= 1024, "max_request_header_bytes", "must be >= 1024"
        )
        for key in ("header_timeout_s", "body_timeout_s", "idle_timeout_s"):
            _require(getattr(self, key) > 0, key, "must be > 0")
        _require(self.max_connections >= 1, "max_connections", "must be >= 1")
        _require(bool(self.host), "host", "must not be empty")
        _require(self.max_body_bytes >= 1024, "max_body_bytes", "must be >= 1024")
        _require(self.max_batch >= 1, "max_batch", "must be >= 1")
        _require(self.max_in_flight >= 1, "max_in_flight", "must be >= 1")
        _require(self.max_queue >= 0, "max_queue", "must be >= 0")
        _require(self.coalesce_max_batch >= 1, "coalesce_max_batch", "must be >= 1")
        _require(0 <= self.coalesce_max_wait_ms <= 1000, "coalesce_max_wait_ms", "0..1000")
        _require(self.coalesce_max_inflight >= 1, "coalesce_max_inflight", "must be >= 1")
        _require(self.queue_timeout_s > 0, "queue_timeout_s", "must be > 0")
        _require(self.retry_after_s >= 1, "retry_after_s", "must be >= 1")
        _require(
            self.admin_token is None or len(self.admin_token) >= 16,
            "admin_token",
            "must be at least 16 characters (or null to disable the admin endpoint)",
        )
        _require(0 < self.replay_disagreement <= 1, "replay_disagreement", "must be within (0, 1]")


# --- policy -------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class LabelRule:
    """A label with thresholds of its own (phish: act on a lower probability than spam)."""

    label: str
    review_at: float
    quarantine_at: float

    def __post_init__(self) -> None:
        _require(bool(self.label), "label", "must not be empty")
        for key in ("quarantine_at", "review_at"):
            _require(0.0 <= getattr(self, key) <= 1.0, key, "must be within 0..1")
        _require(
            self.review_at <= self.quarantine_at,
            "review_at",
            f"{self.review_at} is above quarantine_at {self.quarantine_at}",
        )


@dataclass(frozen=True, kw_only=True)
class TaskPolicyConfig:
    """Scores -> actions for one task.

    ``threshold``: score = P(positive_label), or 1 - P(negative_label) when that is set (ham
    vs spam + phish); >= quarantine_at -> quarantine, >= review_at -> review, else allow; each
    of ``label_rules`` can raise the action on its own label's probability. ``label``: the
    top label, or ``uncertain`` while the top probability is below 0.5 + uncertain_band.
    """

    task: str
    kind: Literal["threshold", "label"] = "threshold"
    positive_label: str | None = None  # threshold kind; null: the task's last label
    negative_label: str | None = None  # threshold kind: score = 1 - P(this label)
    label_rules: tuple[LabelRule, ...] = ()
    quarantine_at: float = 0.95
    review_at: float = 0.85
    uncertain_band: float = 0.1
    rescore_band: float = 0.05  # re-score within +-band of a decision threshold; 0: never
    # threshold kind: the least action for a message read best-effort (MIME not trusted)
    malformed_action: Literal["allow", "review", "quarantine"] = "review"

    def __post_init__(self) -> None:
        _require(bool(self.task), "task", "must not be empty")
        _require(
            self.malformed_action in ("allow", "review", "quarantine"),
            "malformed_action",
            f"'{self.malformed_action}' is not allow, review or quarantine",
        )
        for key in ("quarantine_at", "review_at"):
            _require(0.0 <= getattr(self, key) <= 1.0, key, "must be within 0..1")
        _require(
            self.review_at <= self.quarantine_at,
            "review_at",
            f"{self.review_at} is above quarantine_at {self.quarantine_at}",
        )
        _require(0.0 <= self.uncertain_band < 0.5, "uncertain_band", "must be within 0..0.5")
        _require(0.0 <= self.rescore_band < 0.5, "rescore_band", "must be within 0..0.5")
        _require(
            not (self.positive_label and self.negative_label),
            "negative_label",
            "set positive_label or negative_label, not both",
        )

    def thresholds(self) -> tuple[float, ...]:
        """Scores where the action changes: the re-score band lies around these."""
        if self.kind == "threshold":
            return (self.review_at, self.quarantine_at)
        band = self.uncertain_band
        return (0.5 - band, 0.5 + band) if band else (0.5,)


@dataclass(frozen=True, kw_only=True)
class TenantConfig:
    """A tenant picked by API key (``X-API-Key``) or by name in the tenant header."""

    name: str
    api_key: str | None = None
    tasks: tuple[TaskPolicyConfig, ...] = ()  # replace the default policy of these tasks

    def __post_init__(self) -> None:
        _require(bool(self.name), "name", "must not be empty")
        _require(
            self.api_key is None or len(self.api_key) >= 8,
            "api_key",
            "must be at least 8 characters",
        )
        names = [t.task for t in self.tasks]
        dup = sorted({n for n in names if names.count(n) > 1})
        _require(not dup, "tasks", f"task {dup[0] if dup else ''!r} appears twice")


def _default_policies() -> tuple[TaskPolicyConfig, ...]:
    return (
        # Seed 000's actions on calibrated P(spam or phish); phishing, the costly miss, is
        # sent to review from P(phish) 0.5 and quarantined from 0.85.
        TaskPolicyConfig(
            task="spam",
            kind="threshold",
            negative_label="ham",
            label_rules=(LabelRule(label="phish", review_at=0.5, quarantine_at=0.85),),
        ),
        TaskPolicyConfig(task="sentiment", kind="label"),
    )


@dataclass(frozen=True, kw_only=True)
class PolicyConfig:
    """Per-task policies plus per-tenant overrides; a task with no entry gets ``label``."""

    tasks: tuple[TaskPolicyConfig, ...] = field(default_factory=_default_policies)
    tenants: tuple[TenantConfig, ...] = ()
    tenant_header: str = "X-Tenant"  # names a tenant; tenants with an api_key need the key

    def __post_init__(self) -> None:
        names = [t.task for t in self.tasks]
        dup = sorted({n for n in names if names.count(n) > 1})
        _require(not dup, "tasks", f"task {dup[0] if dup else ''!r} appears twice")
        tenants = [t.name for t in self.tenants]
        dup = sorted({n for n in tenants if tenants.count(n) > 1})
        _require(not dup, "tenants", f"tenant {dup[0] if dup else ''!r} appears twice")
        keys = [t.api_key for t in self.tenants if t.api_key]
        _require(len(keys) == len(set(keys)), "tenants", "two tenants share an api_key")
        _require(bool(self.tenant_header), "tenant_header", "must not be empty")

    def for_task(self, task: str, tenant: str | None = None) -> TaskPolicyConfig:
        """The tenant's override, else the task's policy, else the ``label`` default."""
        for t in self.tenants:
            if t.name == tenant:
                hit = next((p for p in t.tasks if p.task == task), None)
                if hit is not None:
                    return hit
        hit = next((p for p in self.tasks if p.task == task), None)
        return hit or TaskPolicyConfig(task=task, kind="label")


# --- events -------------------------------------------------------------------------------


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

    def __post_init__(self) -> None:
        _require(
            all(":" in s for s in self.bootstrap_servers),
            "bootstrap_servers",
            "entries are host:port",
        )
        _require(bool(self.topic), "topic", "must not be empty")
        _require(self.batch_size >= 1, "batch_size", "must be >= 1")
        _require(self.linger_ms >= 0, "linger_ms", "must be >= 0")
        _require(self.delivery_timeout_s >= 1, "delivery_timeout_s", "must be >= 1")
        _require(self.retry_backoff_min_s > 0, "retry_backoff_min_s", "must be > 0")
        _require(
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
        _require(self.max_depth >= 1, "max_depth", "must be >= 1")
        _require(self.block_timeout_s > 0, "block_timeout_s", "must be > 0")
        _require(self.retry_after_s >= 1, "retry_after_s", "must be >= 1")
        _require(self.retain_published >= 0, "retain_published", "must be >= 0")


# --- release ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ReleaseConfig:
    """Model versions: gate, canary, automatic rollback (docs/lifecycle.md)."""

    repository: Path | None = None  # a release-managed model repository; null: no releases
    triton_http: str = ""  # host:port of Triton's HTTP endpoint for model control
    triton_api_key: str | None = None  # Triton's restricted model-repository API key, if set
    keep_loadable: int = 3  # versions kept loaded; older ones are retired (files until gc)
    agreement_min: float = 0.995  # compare gate: argmax agreement candidate vs serving
    f1_tolerance: float = 0.01  # compare gate: candidate F1 >= serving F1 - tolerance
    min_compare_texts: int = 50  # fewer texts than this: the gate fails (no evidence)
    # compare shares Triton with live traffic: at 70 % load an unpaced compare pushed P99 from
    # ~200 ms to ~960 ms on 2 cores. 0 = unpaced (an idle server, an offline repository).
    compare_texts_per_s: float = 20.0
    canary_key: Literal["tenant", "sender", "request_id"] = "request_id"
    shadow_log_max: int = 10_000  # shadowed texts kept for compare (the log then rotates)
    watch_interval_s: float = 5.0  # how often a running canary is checked
    watch_min_requests: int = 50  # per version, before the canary is judged at all
    max_error_rate_delta: float = 0.01  # canary error rate - serving error rate
    max_p99_ratio: float = 2.0  # canary P99 / serving P99
    max_positive_rate_delta: float = 0.1  # |canary - serving| share of positive (spam) verdicts
    max_psi: float = 0.25  # population stability index of the score distributions

    def __post_init__(self) -> None:
        _require(self.keep_loadable >= 2, "keep_loadable", "must be >= 2 (serving + one back)")
        _require(0 < self.agreement_min <= 1, "agreement_min", "must be within (0, 1]")
        _require(0 <= self.f1_tolerance < 1, "f1_tolerance", "must be within [0, 1)")
        _require(self.min_compare_texts >= 1, "min_compare_texts", "must be >= 1")
        _require(self.compare_texts_per_s >= 0, "compare_texts_per_s", "must be >= 0")
        _require(self.shadow_log_max >= 1, "shadow_log_max", "must be >= 1")
        _require(self.watch_interval_s > 0, "watch_interval_s", "must be > 0")
        _require(self.watch_min_requests >= 1, "watch_min_requests", "must be >= 1")
        _require(self.max_p99_ratio >= 1, "max_p99_ratio", "must be >= 1")
        _require(self.max_psi > 0, "max_psi", "must be > 0")


# --- mail (spamd, milter, feedback) -------------------------------------------------------

MilterReply = Literal["accept", "headers", "quarantine", "reject", "discard", "tempfail"]


@dataclass(frozen=True, kw_only=True)
class MailConfig:
    """The spamd and milter listeners (docs/mail.md); both off unless a port is set."""

    host: str = "127.0.0.1"
    spamd_port: int | None = None  # SpamAssassin's spamc protocol (spamd's port is 783)
    milter_port: int | None = None  # Postfix/Sendmail milter protocol
    task: str = "spam"
    required_points: float = 5.0  # spamd's "required": the policy's review_at maps here
    max_points: float = 10.0  # a score of 1.0 maps here (linear on both sides of review_at)
    max_connections: int = 32  # concurrent connections per listener; beyond: busy answer
    read_timeout_s: float = 30.0  # a client silent this long mid-request is dropped
    explain: int = 0  # spans in REPORT/SYMBOLS (0: no explanation, one Triton request less)
    milter_allow: MilterReply = "headers"
    milter_review: MilterReply = "headers"
    milter_quarantine: MilterReply = "quarantine"
    milter_error: MilterReply = "tempfail"  # Triton down, overload: the MTA retries later

    def __post_init__(self) -> None:
        for key in ("spamd_port", "milter_port"):
            value = getattr(self, key)
            if value is not None:
                _check_port(value, key)
        _require(bool(self.task), "task", "must not be empty")
        _require(self.required_points > 0, "required_points", "must be > 0")
        _require(self.max_points > self.required_points, "max_points", "must be > required_points")
        _require(self.max_connections >= 1, "max_connections", "must be >= 1")
        _require(self.read_timeout_s > 0, "read_timeout_s", "must be > 0")
        _require(0 <= self.explain <= 20, "explain", "must be within 0..20")


@dataclass(frozen=True, kw_only=True)
class FeedbackConfig:
    """Operator corrections (spamc -L, POST /v1/feedback) in an SQLite store."""

    path: Path = Path("textgate-feedback.sqlite3")
    max_per_tenant_per_hour: int = 1000  # beyond: 429, so one tenant cannot flood the store
    recent_requests: int = 10_000  # verdicts kept in memory so a request id can be corrected
    recent_bytes: int = 64 * 1024 * 1024  # ... and at most this many bytes of their input

    def __post_init__(self) -> None:
        _require(self.max_per_tenant_per_hour >= 1, "max_per_tenant_per_hour", "must be >= 1")
        _require(self.recent_requests >= 0, "recent_requests", "must be >= 0")
        _require(self.recent_bytes >= 0, "recent_bytes", "must be >= 0")


@dataclass(frozen=True, kw_only=True)
class ReviewConfig:
    """The review/quarantine store behind the console (docs/console.md); off unless a path."""

    path: Path | None = None  # SQLite file; null: review and quarantine verdicts are not kept
    actions: tuple[str, ...] = ("review", "quarantine")  # the actions whose mail is kept
    max_age_days: float = 30.0  # older messages are dropped (counted in a metric)
    max_messages: int = 100_000  # beyond: the oldest are dropped (counted)
    max_bytes: int = 1_073_741_824  # raw + text bytes held at most; beyond: the oldest go
    explain: int = 5  # trigger words computed when a message without them is first opened
    session_ttl_s: float = 8 * 3600.0  # a console login lasts this long

    def __post_init__(self) -> None:
        _require(bool(self.actions), "actions", "must name at least one action")
        _require(self.max_age_days > 0, "max_age_days", "must be > 0")
        _require(self.max_messages >= 1, "max_messages", "must be >= 1")
        _require(self.max_bytes >= 1024, "max_bytes", "must be >= 1024")
        _require(0 <= self.explain <= 20, "explain", "must be within 0..20")
        _require(self.session_ttl_s > 0, "session_ttl_s", "must be > 0")


# --- the whole file -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Config:
    """All sections. Add a section by adding a field here."""

    triton: TritonConfig = field(default_factory=TritonConfig)
    repository: RepositoryConfig = field(default_factory=RepositoryConfig)
    client: ClientConfig = field(default_factory=ClientConfig)
    gateway: GatewayConfig = field(default_factory=GatewayConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    events: EventsConfig = field(default_factory=EventsConfig)
    release: ReleaseConfig = field(default_factory=ReleaseConfig)
    mail: MailConfig = field(default_factory=MailConfig)
    feedback: FeedbackConfig = field(default_factory=FeedbackConfig)
    review: ReviewConfig = field(default_factory=ReviewConfig)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any] | None, *, env: Mapping[str, str] | None = None
    ) -> Config:
        """Build from a plain dict, then apply ``env`` overrides (pass ``os.environ``)."""
        merged = _merge(dict(data or {}), _env_tree(env or {}))
        return _build(cls, merged, "")

    @classmethod
    def from_file(cls, path: Path | str, *, env: Mapping[str, str] | None = None) -> Config:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError("<file>", f"cannot read {path}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(
                "<file>",
                f"{path} is not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
                hint="save the config file as UTF-8",
            ) from None
        except (yaml.YAMLError, RecursionError, ValueError) as exc:
            raise ConfigError("<file>", f"{path} is not valid YAML: {exc}") from exc
        if data is not None and not isinstance(data, dict):
            raise ConfigError("<file>", f"{path} must hold a mapping of sections")
        return cls.from_dict(data, env=env)

    @classmethod
    def load(cls, path: Path | str | None = None) -> Config:
        """The usual entry point: an optional file plus the process environment."""
        if path is None:
            return cls.from_dict(None, env=os.environ)
        return cls.from_file(path, env=os.environ)

    def to_dict(self) -> dict[str, Any]:
        return _plain(dataclasses.asdict(self))


def _plain(value: Any) -> Any:
    """asdict() output with Paths and tuples turned into YAML-friendly values."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _env_tree(env: Mapping[str, str]) -> dict[str, Any]:
    """TEXTGATE_A__B__C=v -> {"a": {"b": {"c": "v"}}}; other variables are ignored."""
    tree: dict[str, Any] = {}
    for name, value in env.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        node = tree
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(".".join(parts), f"environment variable {name} conflicts")
        node[parts[-1]] = _EnvValue(value)
    return tree


class _EnvValue(str):
    """A raw string from the environment: parsed as YAML unless the field is a string."""


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _build(cls: type[Any], data: Any, prefix: str) -> Any:
    where = prefix.rstrip(".") or "<root>"
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(where, f"must be a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(
            f"{prefix}{unknown[0]}", "unknown key", hint=f"known keys: {', '.join(sorted(names))}"
        )
    kwargs = {key: _coerce(value, hints[key], f"{prefix}{key}") for key, value in data.items()}
    try:
        return cls(**kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{prefix}{exc.key}", _problem(exc), hint=exc.hint) from None


def _problem(exc: ConfigError) -> str:
    return exc.message.split(": ", 1)[1] if ": " in exc.message else exc.message


def _coerce(value: Any, tp: Any, key: str) -> Any:
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _build(tp, value, f"{key}.")
    if isinstance(value, _EnvValue) and tp is not str and not _accepts_str(tp):
        value = _parse_env(value, key)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(value, inner[0], key)
    if origin is Literal:
        if value not in args:
            raise ConfigError(key, f"{value!r} is not one of {', '.join(map(repr, args))}")
        return value
    if origin is tuple:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list | tuple):
            raise ConfigError(key, f"expected a list, got {value!r}")
        return tuple(_coerce(v, args[0], f"{key}[{i}]") for i, v in enumerate(value))
    return _scalar(value, tp, key)


def _accepts_str(tp: Any) -> bool:
    return tp is Path or Path in typing.get_args(tp) or str in typing.get_args(tp)


def _parse_env(value: str, key: str) -> Any:
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError as exc:
        raise ConfigError(key, f"cannot parse environment value {value!r}") from exc


def _scalar(value: Any, tp: Any, key: str) -> Any:
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(key, f"expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ConfigError(key, f"expected an integer, got {value!r}")
        try:
            return int(value)
        except ValueError:
            raise ConfigError(key, f"expected an integer, got {value!r}") from None
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ConfigError(key, f"expected a number, got {value!r}")
        try:
            return float(value)
        except ValueError:
            raise ConfigError(key, f"expected a number, got {value!r}") from None
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(key, f"expected a string, got {value!r}")
        return str(value)
    if tp is Path:
        if not isinstance(value, str | Path):
            raise ConfigError(key, f"expected a path, got {value!r}")
        return Path(value).expanduser()
    raise ConfigError(key, f"unsupported type {tp!r}")  # a programming error in a section

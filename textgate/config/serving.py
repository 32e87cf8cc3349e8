"""Sections ``triton``, ``repository`` and ``client``: running Triton, the model
repository it serves, and the gateway's client of it."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from textgate.config.checks import check_port, require

# numpy's OpenBLAS starts a thread per core and hands every product to them. Serving
# processes do small products only (the language model, the n-gram half): on two cores busy
# serving, those hand-offs cost an e-mail parse worker 15 ms of CPU a message instead of
# 4 ms, half the gateway's throughput (docs/benchmarks.md, "Serial BLAS"). So the gateway,
# its parse workers and tritonserver's stubs run it on one thread unless the environment
# already says otherwise.
SERIAL_BLAS = {"OPENBLAS_NUM_THREADS": "1"}


def serial_blas(env: MutableMapping[str, str]) -> None:
    """Set ``SERIAL_BLAS`` in ``env`` where it is not set (before numpy is imported)."""
    for key, value in SERIAL_BLAS.items():
        env.setdefault(key, value)


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
    # Triton's own request tracing (docs/serving.md): "triton" writes JSON traces naming the
    # gateway's request id to trace_file; "opentelemetry" exports spans (OTLP/HTTP) to
    # trace_url, joined to the caller's W3C traceparent that the gateway forwards.
    trace_mode: Literal["off", "triton", "opentelemetry"] = "off"
    trace_rate: int = 1000  # one request in trace_rate is traced
    trace_file: Path | None = None  # trace_mode triton; default: beside the server's log
    trace_url: str | None = None  # trace_mode opentelemetry: http://collector:4318/v1/traces

    def __post_init__(self) -> None:
        for key in ("http_port", "grpc_port", "metrics_port"):
            check_port(getattr(self, key), key)
        require(self.trace_rate >= 1, "trace_rate", "must be >= 1")
        require(
            self.trace_mode != "opentelemetry" or bool(self.trace_url),
            "trace_url",
            "trace_mode opentelemetry needs the collector's OTLP/HTTP url",
            hint="e.g. http://otel-collector:4318/v1/traces",
        )
        require(self.log_verbose >= 0, "log_verbose", "must be >= 0")
        require(self.startup_timeout_s > 0, "startup_timeout_s", "must be > 0")
        require(self.exit_timeout_s >= 0, "exit_timeout_s", "must be >= 0")
        require(bool(self.address), "address", "must not be empty")


# --- repository ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class DynamicBatchingConfig:
    enabled: bool = True
    preferred_batch_sizes: tuple[int, ...] = ()
    max_queue_delay_microseconds: int = 2000

    def __post_init__(self) -> None:
        require(
            all(n > 0 for n in self.preferred_batch_sizes),
            "preferred_batch_sizes",
            "sizes must be > 0",
        )
        require(self.max_queue_delay_microseconds >= 0, "max_queue_delay_microseconds", ">= 0")


@dataclass(frozen=True, kw_only=True)
class InstanceGroupConfig:
    # 0: auto (RepositoryConfig.model_instances): several single-threaded instances on CPU
    count: int = 0
    kind: Literal["cpu", "gpu"] = "cpu"
    gpus: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        require(self.count >= 0, "count", "must be >= 0 (0: auto)")
        require(not (self.gpus and self.kind == "cpu"), "gpus", "only valid with kind: gpu")


@dataclass(frozen=True, kw_only=True)
class VersionPolicyConfig:
    policy: Literal["latest", "all", "specific"] = "latest"
    latest: int = 1  # how many of the newest versions to serve (policy: latest)
    versions: tuple[int, ...] = ()  # which versions to serve (policy: specific)

    def __post_init__(self) -> None:
        require(self.latest >= 1, "latest", "must be >= 1")
        require(
            self.policy != "specific" or bool(self.versions),
            "versions",
            "policy 'specific' needs at least one version",
        )
        require(all(v >= 1 for v in self.versions), "versions", "versions are integers >= 1")


def available_cores() -> int:
    """The cores this process may run on (a container's CPU set, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


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
    # Idle ONNX Runtime workers busy-wait for the next op by default; beside a gateway on
    # the same cores that burns CPU the gateway needs (docs/benchmarks.md: engine knobs).
    ort_allow_spinning: bool = True
    accelerator: Literal["none", "cuda", "tensorrt"] = "none"  # triton-container, GPU only
    tensorrt_precision: Literal["fp32", "fp16"] = "fp16"
    tensorrt_max_workspace_bytes: int = 1 << 30
    # Also serve <task>_fp32 (this fp32 file) for the gateway's re-score; none: off
    rescore_variant: Literal["none", "fp32", "fp32-opt"] = "none"

    @property
    def _embedded_cpu(self) -> bool:
        return self.instance_group.kind == "cpu" and self.target == "embedded"

    def model_instances(self, cores: int | None = None) -> int:
        """Instances of the model step; ``count: 0`` resolved for this machine.

        On CPU, batches in parallel beat one batch spread over the cores: ONNX Runtime's
        intra-op threads wait on each other for the small matrices of a short batch, and
        spin while they wait. Two single-threaded instances served 1.21x the texts/s of one
        two-threaded instance through the gateway on 2 cores (docs/benchmarks.md, engine
        knobs). Capped at 4: each instance is a Python stub with its own session.
        """
        if self.instance_group.count:
            return self.instance_group.count
        if not self._embedded_cpu:
            return 1  # unmeasured there: one instance, as Triton's own default
        return max(1, min(cores or available_cores(), 4))

    def intra_op_threads(self, cores: int | None = None) -> int:
        """ONNX Runtime's intra-op threads per instance (0: its default, one per core).

        With ``ort_intra_op_threads: 0`` on the embedded CPU target the cores are split
        between the instances: two instances of two threads each on two cores were
        measured slower than one (docs/benchmarks.md, tuning).
        """
        if self.ort_intra_op_threads or not self._embedded_cpu:
            return self.ort_intra_op_threads
        n = cores or available_cores()
        return max(1, n // self.model_instances(n))

    @property
    def strategy(self) -> Literal["bucket", "fixed", "fused"]:
        """The shape strategy in effect (``auto`` resolved for the target)."""
        if self.shape_strategy == "auto":
            return "fused" if self.target == "embedded" else "bucket"
        return self.shape_strategy

    def __post_init__(self) -> None:
        require(bool(self.bucket_lengths), "bucket_lengths", "needs at least one length")
        require(all(n > 0 for n in self.bucket_lengths), "bucket_lengths", "lengths must be > 0")
        require(
            list(self.bucket_lengths) == sorted(set(self.bucket_lengths)),
            "bucket_lengths",
            "lengths must be strictly increasing",
        )
        require(self.max_batch_size >= 1, "max_batch_size", "must be >= 1")
        bad = [n for n in self.dynamic_batching.preferred_batch_sizes if n > self.max_batch_size]
        require(
            not bad,
            "dynamic_batching.preferred_batch_sizes",
            f"{bad} exceed max_batch_size {self.max_batch_size}",
        )
        require(self.helper_instances >= 1, "helper_instances", "must be >= 1")
        require(self.variant in VARIANTS, "variant", f"must be one of {', '.join(VARIANTS)}")
        require(self.ort_intra_op_threads >= 0, "ort_intra_op_threads", "must be >= 0")
        require(self.ort_inter_op_threads >= 0, "ort_inter_op_threads", "must be >= 0")
        require(
            not (self.shape_strategy == "fused" and self.target == "triton-container"),
            "shape_strategy",
            "'fused' runs tokenizer and ONNX Runtime in one Python model; "
            "it exists only for target 'embedded'",
        )
        require(
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
        require(self.timeout_s > 0, "timeout_s", "must be > 0")
        require(0 <= self.retries <= 5, "retries", "must be within 0..5")
        require(self.health_interval_s > 0, "health_interval_s", "must be > 0")
        require(self.eject_after_failures >= 1, "eject_after_failures", "must be >= 1")
        require(self.reconnect_backoff_ms >= 100, "reconnect_backoff_ms", "must be >= 100")
        for i, url in enumerate(self.endpoints):
            host, _, port = url.rpartition(":")
            require(bool(host) and port.isdigit(), f"endpoints[{i}]", f"{url!r} is not host:port")

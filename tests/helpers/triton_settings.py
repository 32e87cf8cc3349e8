"""Settings for test servers, importable by any test module (a conftest is not)."""

from __future__ import annotations

from textgate.config import RepositoryConfig, TritonConfig

MAX_BATCH = 16


def server_config(**overrides: object) -> TritonConfig:
    base: dict[str, object] = {
        "http_port": 0,
        "grpc_port": 0,
        "metrics_port": 0,
        "exit_timeout_s": 2,
        "startup_timeout_s": 120.0,
    }
    return TritonConfig(**{**base, **overrides})  # type: ignore[arg-type]


def repo_settings(**overrides: object) -> RepositoryConfig:
    return RepositoryConfig(max_batch_size=MAX_BATCH, **overrides)  # type: ignore[arg-type]

"""release.triton_http with several replicas: one HTTP endpoint per gRPC endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from textgate import replicas
from textgate.config import Config
from textgate.errors import ConfigError
from textgate.gateway.runtime import Gateway


def config(tmp_path: Path, http: str, grpc: list[str]) -> Config:
    return Config.from_dict({
        "client": {"endpoints": grpc},
        "release": {"repository": str(tmp_path / "repo"), "triton_http": http},
        "events": {"outbox_path": str(tmp_path / "ev.sqlite3")},
    })  # fmt: skip


def test_one_http_endpoint_per_grpc_endpoint_fans_out(tmp_path: Path) -> None:
    gw = Gateway(config(tmp_path, "h1:8000, h2:8000", ["g1:8001", "g2:8001"]))
    assert gw.releases is not None
    control = gw.releases.manager.control
    assert isinstance(control, replicas.Replicas)
    assert list(control.controls) == ["h1:8000", "h2:8000"]


def test_a_count_mismatch_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"release\.triton_http.*2 HTTP endpoints for 1"):
        Gateway(config(tmp_path, "h1:8000,h2:8000", ["g1:8001"]))

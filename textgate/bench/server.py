"""A repository built from a bundle and served by tritonserver, for one measurement.

with serve(bundle, settings) as served:     # temporary repository, free ports
    served.server.grpc_url, served.task.ensemble
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from textgate.config import RepositoryConfig, TritonConfig
from textgate.repository import build
from textgate.repository.spec import TaskSpec
from textgate.triton import TritonServer


@dataclass(frozen=True)
class Served:
    server: TritonServer
    repository: Path
    task: TaskSpec
    settings: RepositoryConfig

    @property
    def models(self) -> list[str]:
        t = self.task
        steps = (
            [t.model, t.postprocess]
            if self.settings.strategy == "fused"
            else [t.tokenize, t.model, t.postprocess]
        )
        return [t.ensemble, *steps]


def free_ports(config: TritonConfig | None) -> TritonConfig:
    base = config or TritonConfig()
    return dataclasses.replace(base, http_port=0, grpc_port=0, metrics_port=0, exit_timeout_s=2)


@contextmanager
def serve(
    bundle: Path, settings: RepositoryConfig, triton: TritonConfig | None = None
) -> Iterator[Served]:
    """Build a temporary repository for ``bundle`` and run tritonserver on free ports."""
    tmp = Path(tempfile.mkdtemp(prefix=f"textgate-bench-{settings.strategy}-"))
    try:
        result = build([bundle], tmp / "repo", settings)
        with TritonServer(result.repository, config=free_ports(triton)) as server:
            yield Served(server, result.repository, result.spec.tasks[0], settings)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

"""Fixtures for tests that run a real tritonserver.

Bundles come from ``textgate.export.export_bundle`` on tiny randomly initialised BERT
checkpoints (the packaged MiniLM tokenizer, no network). Servers start on free ports and are
always stopped by their fixture's finalizer; the session shares one server to keep startups
(and the 2-core CI box) cheap.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.fixtures_models import bert_checkpoint as tiny_checkpoint
from tests.helpers.servers import triton
from tests.helpers.triton_settings import repo_settings
from textgate.repository import build
from textgate.triton import TritonServer

MAX_LENGTH = 64
TASKS = {"spam": ("ham", "spam"), "sentiment": ("negative", "positive")}


@pytest.fixture(scope="session")
def tiny_bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from textgate.export import export_bundle

    root = tmp_path_factory.mktemp("bundles")
    out = {}
    for seed, (task, labels) in enumerate(TASKS.items()):
        ckpt = tiny_checkpoint(root / f"{task}-ckpt", task=task, labels=labels, seed=seed)
        export_bundle(ckpt, root / task, variants=())
        out[task] = root / task
    return out


@pytest.fixture(scope="session")
def embedded_repo(tiny_bundles: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("repo") / "embedded"
    build(list(tiny_bundles.values()), out, repo_settings())
    return out


@pytest.fixture(scope="session")
def triton_server(embedded_repo: Path) -> Iterator[TritonServer]:
    with triton(embedded_repo) as server:
        yield server

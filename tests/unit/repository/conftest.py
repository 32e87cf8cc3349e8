from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from textgate import bundle


@pytest.fixture
def fake_bundle(tmp_path: Path) -> Callable[..., Path]:
    """A bundle whose files are placeholders: enough for the builder, never for inference."""

    def make(
        task: str = "spam", labels: tuple[str, ...] = ("ham", "spam"), **extra: object
    ) -> Path:
        out = tmp_path / task
        out.mkdir()
        for name in ("model.onnx", "model.int8.onnx", "model.fp16.onnx"):
            (out / name).write_bytes(name.encode())
        (out / "tokenizer.json").write_text("{}", encoding="utf-8")
        (out / "labels.json").write_text(json.dumps(list(labels)), encoding="utf-8")
        variants = {
            "fp32": {"file": "model.onnx", "status": "accepted"},
            "int8": {"file": "model.int8.onnx", "status": "accepted"},
            "fp16": {"file": "model.fp16.onnx", "status": "rejected", "reason": "agreement"},
        }
        manifest = {
            "task": task,
            "labels": list(labels),
            "max_length": 128,
            "metrics": {"test": {}},
            "parity": {"passed": True},
            "tokenizer": {"file": "tokenizer.json"},
            "variants": variants,
            "default_variant": {"cpu": "int8", "gpu": "fp32"},
            **extra,
        }
        bundle.write_manifest(out, manifest)
        return out

    return make

"""Anomaly capture end to end (issue 41 §5): a fast variant that disagrees with fp32, served by
a real tritonserver; the gateway saves the request to its replay store as it answers, and
``textgate replay`` re-runs that record against the same server and gets the same outputs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from tests.helpers.gateway_fixtures import run_gateway
from tests.helpers.servers import triton
from textgate import bundle
from textgate.config import RepositoryConfig
from textgate.repository import build

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.timeout(300)]


def skewed_bundle(src: Path, out: Path) -> Path:
    """``src`` plus an "int8" variant whose classifier bias is shifted: it disagrees."""
    shutil.copytree(src, out)
    model = onnx.load(str(out / "model.onnx"))
    labels = len(bundle.read_manifest(out)["labels"])
    biases = [
        t for t in model.graph.initializer
        if "bias" in t.name and list(t.dims) == [labels] and "classifier" in t.name
    ]  # fmt: skip
    assert len(biases) == 1, [t.name for t in model.graph.initializer][-8:]
    shifted = numpy_helper.to_array(biases[0]) + np.array([3.0] + [-3.0] * (labels - 1))
    biases[0].CopyFrom(numpy_helper.from_array(shifted.astype(np.float32), biases[0].name))
    onnx.save(model, str(out / "model.int8.onnx"))
    manifest = bundle.read_manifest(out)
    manifest["variants"]["int8"] = {**manifest["variants"]["fp32"], "file": "model.int8.onnx"}
    manifest["default_variant"] = {"cpu": "int8", "gpu": "fp32"}
    bundle.write_manifest(out, manifest)
    return out


def test_a_disagreeing_answer_is_captured_and_replays(
    tiny_bundles: dict[str, Path], tmp_path: Path
) -> None:
    spam = skewed_bundle(tiny_bundles["spam"], tmp_path / "spam-skewed")
    settings = RepositoryConfig(max_batch_size=16, rescore_variant="fp32")
    repo = build([spam], tmp_path / "repo", settings).repository
    replay_dir = tmp_path / "replay"
    config = {
        "gateway": {"parse_workers": 0, "replay_dir": str(replay_dir)},
        "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
        # every answer re-scored with fp32, so every disagreement is seen
        "policy": {"tasks": [{"task": "spam", "kind": "threshold", "positive_label": "spam",
                              "rescore_range": [0.0, 1.0]}]},
    }  # fmt: skip
    with triton(repo) as server:
        with run_gateway(config, [server.grpc_url]) as gw, gw.client() as c:
            r = c.post("/v1/classify/spam", json={"text": "claim your free prize now"},
                       headers={"X-Request-ID": "odd-1"})  # fmt: skip
            assert r.status_code == 200, r.text
            replays = [
                float(line.rsplit(" ", 1)[1])
                for line in c.get("/metrics").text.splitlines()
                if line.startswith("textgate_replay_saved_total")
            ]
        files = sorted(replay_dir.glob("*.json"))
        assert len(files) == 1 and replays == [1.0]
        record = json.loads(files[0].read_text())
        assert record["request_id"] == "odd-1"
        assert record["reason"].startswith("fast and fp32 variants differ by")
        fast, precise = record["outputs"]["fast"], record["outputs"]["precise"]
        assert max(abs(a - b) for a, b in zip(fast, precise, strict=True)) > 0.1
        answer = r.json()["results"][0]
        assert answer["probabilities"]["spam"] == pytest.approx(precise[1], abs=1e-4)
        cmd = [sys.executable, "-m", "textgate.cli", "replay", str(files[0]), "--json",
               "--triton", server.grpc_url]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    again = json.loads(done.stdout)["outputs"]
    assert again["fast"]["now"] == pytest.approx(fast, abs=1e-5)
    assert again["precise"]["now"] == pytest.approx(precise, abs=1e-5)

"""Release operations over several Triton replicas (fake Triton HTTP model-control servers
on loopback): every reachable replica gets the load, a down one is remembered as missed and
reconciled later, and a replica that cannot match the release state says why."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from textgate import bundle, release, replicas
from textgate.errors import ModelLoadError, TritonError


class FakeTriton:
    """/v2/health/live, /v2/repository/index and .../load|unload, with a set of models."""

    def __init__(self, refuse_loads: bool = False) -> None:
        self.models: set[str] = set()
        self.refuse_loads = refuse_loads
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, code: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer(200 if self.path == "/v2/health/live" else 404, {})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                parts = self.path.strip("/").split("/")
                if self.path == "/v2/repository/index":
                    rows = [{"name": m, "state": "READY"} for m in sorted(fake.models)]
                    return self._answer(200, rows)
                name, action = parts[-2], parts[-1]
                if action == "load" and fake.refuse_loads:
                    return self._answer(400, {"error": f"failed to load '{name}'"})
                (fake.models.add if action == "load" else fake.models.discard)(name)
                return self._answer(200, {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def down(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def tritons() -> Iterator[list[FakeTriton]]:
    fakes = [FakeTriton(), FakeTriton()]
    yield fakes
    for f in fakes:
        if f.thread.is_alive():
            f.down()


def placeholder_bundle(out: Path) -> Path:
    """Enough for the repository builder, never for inference (tests/unit/release/)."""
    out.mkdir(parents=True)
    (out / "model.onnx").write_bytes(b"x")
    (out / "tokenizer.json").write_text("{}", encoding="utf-8")
    (out / "labels.json").write_text('["ham", "spam"]', encoding="utf-8")
    bundle.write_manifest(out, {
        "task": "spam", "labels": ["ham", "spam"], "max_length": 64,
        "metrics": {"test": {"f1": 0.9, "accuracy": 0.9}}, "parity": {"passed": True},
        "tokenizer": {"file": "tokenizer.json"},
        "variants": {"fp32": {"file": "model.onnx", "status": "accepted"}},
        "default_variant": {"cpu": "fp32", "gpu": "fp32"},
    })  # fmt: skip
    return out


def test_an_add_reaches_every_replica(tritons: list[FakeTriton], tmp_path: Path) -> None:
    control = replicas.Replicas([t.url for t in tritons])
    rel = release.Releases(tmp_path / "repo", control=control)
    rel.add(placeholder_bundle(tmp_path / "b1"), "spam")
    names = set(release.version_models(rel.repo, "spam", 1))
    assert names and all(t.models == names for t in tritons)
    assert control.missed == set()
    assert set(control.model_states()) == names


def test_a_down_replica_is_missed_then_reconciled(
    tritons: list[FakeTriton], tmp_path: Path
) -> None:
    a, b = tritons
    control = replicas.Replicas([a.url, b.url])
    rel = release.Releases(tmp_path / "repo", control=control)
    rel.add(placeholder_bundle(tmp_path / "b1"), "spam")
    b.down()
    rel.add(placeholder_bundle(tmp_path / "b2"), "spam")  # succeeds on a alone
    assert control.missed == {b.url}
    v2 = set(release.version_models(rel.repo, "spam", 2))
    assert v2 <= a.models

    back = FakeTriton()  # b returns with only what it had (v1)
    back.models = set(release.version_models(rel.repo, "spam", 1))
    assert replicas.reconcile_replica(rel, release.HttpControl(back.url)) is None
    assert back.models == set(rel.loadable())
    back.down()


def test_a_replica_that_cannot_match_the_state_says_why(tmp_path: Path) -> None:
    good, bad = FakeTriton(), FakeTriton(refuse_loads=True)
    try:
        rel = release.Releases(tmp_path / "repo", control=release.HttpControl(good.url))
        rel.add(placeholder_bundle(tmp_path / "b1"), "spam")
        why = replicas.reconcile_replica(rel, release.HttpControl(bad.url))
        assert why is not None and "not reconciled" in why and "failed to load" in why
        # a load refused on a reachable replica fails the operation (then undone everywhere)
        both = replicas.Replicas([good.url, bad.url])
        with pytest.raises(ModelLoadError):
            both.load_model("spam_v1")
    finally:
        good.down()
        bad.down()


def test_model_states_are_ready_only_where_ready_everywhere(tritons: list[FakeTriton]) -> None:
    a, b = tritons
    a.models, b.models = {"m1", "m2"}, {"m1"}
    states = replicas.Replicas([a.url, b.url]).model_states()
    assert states["m1"].state == "READY"
    assert states["m2"].state != "READY"  # b lacks it: a reconcile loads it there


def test_no_replica_reachable_fails_the_operation(tritons: list[FakeTriton]) -> None:
    for t in tritons:
        t.down()
    control = replicas.Replicas([t.url for t in tritons])
    with pytest.raises(TritonError, match="no Triton replica reachable"):
        control.load_model("spam_v1")

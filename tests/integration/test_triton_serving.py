"""The embedded repository served by a real tritonserver: HTTP, gRPC, batching, bad input."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.triton_settings import MAX_BATCH
from textgate.config import RepositoryConfig, TritonConfig
from textgate.errors import ModelLoadError, TritonStartError
from textgate.repository import build
from textgate.triton import TritonServer

httpclient = pytest.importorskip("tritonclient.http")
grpcclient = pytest.importorskip("tritonclient.grpc")
InferenceServerException = pytest.importorskip("tritonclient.utils").InferenceServerException

MAX_LENGTH = 64  # as the tiny bundles in conftest.py

TASKS = {"spam": ("ham", "spam"), "sentiment": ("negative", "positive")}

pytestmark = [pytest.mark.triton, pytest.mark.slow, pytest.mark.timeout(300)]

TEXTS = [
    "Free entry in 2 a wkly comp to win FA Cup final tkts",
    "ok see you at home",
    "URGENT! You have won a 1 week FREE membership " * 20,
    "Héllo wörld, ça va? 你好，世界 🙂🙃",
    "",
]


def reference(bundle: Path, texts: Sequence[str]) -> np.ndarray:
    """Direct ONNX Runtime, one unpadded text at a time: what the ensemble must equal."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(bundle / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(MAX_LENGTH)
    session = ort.InferenceSession(str(bundle / "model.onnx"), providers=["CPUExecutionProvider"])
    rows = []
    for text in texts:
        ids = np.array([tok.encode(text).ids], dtype=np.int64)
        logits = session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0]
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        rows.append((e / e.sum(axis=1, keepdims=True))[0])
    return np.array(rows, dtype=np.float64)


def text_tensor(module: object, texts: Sequence[str | bytes]) -> object:
    data = np.array([[t if isinstance(t, bytes) else t.encode()] for t in texts], dtype=np.object_)
    tensor = module.InferInput("text", list(data.shape), "BYTES")  # type: ignore[attr-defined]
    tensor.set_data_from_numpy(data)
    return tensor


def infer_http(server: TritonServer, model: str, texts: Sequence[str | bytes]) -> tuple:
    client = httpclient.InferenceServerClient(server.http_url)  # one client per thread
    try:
        result = client.infer(model, [text_tensor(httpclient, texts)])
        return result.as_numpy("label"), result.as_numpy("probabilities")
    finally:
        client.close()


def infer_grpc(server: TritonServer, model: str, texts: Sequence[str | bytes]) -> tuple:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        result = client.infer(model, [text_tensor(grpcclient, texts)])
        return result.as_numpy("label"), result.as_numpy("probabilities")
    finally:
        client.close()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
@pytest.mark.parametrize("task", list(TASKS))
def test_ensemble_equals_direct_onnxruntime(
    triton_server: TritonServer, tiny_bundles: dict[str, Path], protocol: str, task: str
) -> None:
    infer = infer_http if protocol == "http" else infer_grpc
    labels, probs = infer(triton_server, task, TEXTS)
    expected = reference(tiny_bundles[task], TEXTS)
    assert probs.shape == (len(TEXTS), len(TASKS[task]))
    assert np.abs(probs - expected).max() <= 1e-5
    names = [TASKS[task][i].encode() for i in expected.argmax(axis=1)]
    assert labels.reshape(-1).tolist() == names


def test_concurrent_requests_are_batched(
    triton_server: TritonServer, tiny_bundles: dict[str, Path]
) -> None:
    texts = [f"message number {i} " + "word " * (i % 7) for i in range(96)]
    expected = reference(tiny_bundles["spam"], texts)
    before = _stats(triton_server, "spam_model")
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda t: infer_grpc(triton_server, "spam", [t]), texts))
    got = np.array([probs[0] for _labels, probs in results])
    assert np.abs(got - expected).max() <= 1e-5
    after = _stats(triton_server, "spam_model")
    requests = after["inference_count"] - before["inference_count"]
    executions = after["execution_count"] - before["execution_count"]
    assert requests == len(texts)
    assert executions < requests, "the dynamic batcher never merged two requests"


def _stats(server: TritonServer, model: str) -> dict[str, int]:
    client = httpclient.InferenceServerClient(server.http_url)
    try:
        stats = client.get_inference_statistics(model)["model_stats"][0]
    finally:
        client.close()
    return {k: int(stats[k]) for k in ("inference_count", "execution_count")}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "spam " * 20_000,  # 100 KB
        b"caf\xe9 \xff\xfe invalid utf-8",
        "😀😀😀 mixed Ελληνικά 中文 العربية русский",
    ],
    ids=["empty", "100KB", "invalid-utf8", "emoji-mixed-scripts"],
)
def test_odd_texts_get_a_defined_result(triton_server: TritonServer, text: str | bytes) -> None:
    labels, probs = infer_http(triton_server, "spam", [text])
    assert labels.shape == (1, 1) and labels[0, 0] in (b"ham", b"spam")
    assert probs.shape == (1, 2) and abs(float(probs.sum()) - 1.0) < 1e-5
    _assert_healthy(triton_server)


def test_zero_element_request_is_answered_or_refused_clearly(triton_server: TritonServer) -> None:
    client = httpclient.InferenceServerClient(triton_server.http_url)
    try:
        tensor = httpclient.InferInput("text", [0, 1], "BYTES")
        tensor.set_data_from_numpy(np.zeros((0, 1), dtype=np.object_))
        try:
            result = client.infer("spam", [tensor])
        except InferenceServerException as exc:
            # Triton refuses it before any model runs, naming the input and the model.
            assert "'text'" in str(exc) and "'spam'" in str(exc), str(exc)
        else:
            assert result.as_numpy("probabilities").shape == (0, 2)
    finally:
        client.close()
    _assert_healthy(triton_server)


def test_batch_over_max_batch_size_is_a_clear_error(triton_server: TritonServer) -> None:
    with pytest.raises(InferenceServerException, match="batch"):
        infer_http(triton_server, "spam", ["x"] * (MAX_BATCH + 1))
    labels, _ = infer_http(triton_server, "spam", ["x"] * MAX_BATCH)
    assert labels.shape == (MAX_BATCH, 1)
    _assert_healthy(triton_server)


def _assert_healthy(server: TritonServer) -> None:
    server.check()
    states = server.model_states()
    assert all(states[m].state == "READY" for m in server.models), states


# --- failure paths and other repository shapes: own servers, always stopped ---------------


def _config() -> TritonConfig:
    return TritonConfig(http_port=0, grpc_port=0, metrics_port=0, exit_timeout_s=2)


def test_corrupted_model_fails_alone_then_kill_is_reported(
    embedded_repo: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(embedded_repo, repo)
    onnx = repo / "spam_model" / "1" / "model.onnx"
    onnx.write_bytes(onnx.read_bytes()[:-100] + b"\0" * 100)
    server = TritonServer(repo, config=_config())
    server.start()
    try:
        with pytest.raises(ModelLoadError) as info:
            server.wait_ready()
        assert info.value.model in ("spam_model", "spam")
        assert "model.onnx" in str(info.value) and "manifest" in str(info.value)
        states = server.model_states()
        assert states["spam_model"].state == "UNAVAILABLE"
        assert all(states[m].state == "READY" for m in states if m.startswith("sentiment"))
        labels, _ = infer_http(server, "sentiment", ["still serving"])
        assert labels.shape == (1, 1)

        assert server.pid is not None
        os.kill(server.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while server.alive and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not server.alive
        with pytest.raises(TritonStartError, match="killed by signal 9"):
            server.check()
    finally:
        server.stop()
    assert not server.alive


def test_fused_strategy_serves_the_same_results(
    tiny_bundles: dict[str, Path], tmp_path: Path
) -> None:
    repo = tmp_path / "fused"
    settings = RepositoryConfig(max_batch_size=MAX_BATCH, shape_strategy="fused")
    build([tiny_bundles["spam"]], repo, settings)
    assert not (repo / "spam_tokenize").exists()
    with TritonServer(repo, config=_config()) as server:
        _labels, probs = infer_grpc(server, "spam", TEXTS)
    assert np.abs(probs - reference(tiny_bundles["spam"], TEXTS)).max() <= 1e-5


def test_fused_default_and_bucket_give_the_same_probabilities(
    tiny_bundles: dict[str, Path], tmp_path: Path
) -> None:
    # The embedded default became fused; bucket stays the container's shape. Both are
    # served from one repository (bucket under the suffix _b) and must agree on one batch.
    repo = tmp_path / "both"
    fused = build([tiny_bundles["spam"]], repo, RepositoryConfig(max_batch_size=MAX_BATCH))
    assert fused.spec.fused and not (repo / "spam_tokenize").exists()
    bucket = RepositoryConfig(max_batch_size=MAX_BATCH, shape_strategy="bucket")
    build([tiny_bundles["spam"]], repo, bucket, suffix="_b")
    assert (repo / "spam_b_tokenize").is_dir()
    texts = [*TEXTS, *(f"message number {i} " * (i % 7 + 1) for i in range(11))]
    with TritonServer(repo, config=_config()) as server:
        labels_f, probs_f = infer_grpc(server, "spam", texts)
        labels_b, probs_b = infer_grpc(server, "spam_b", texts)
    assert probs_f.shape == (len(texts), 2)
    assert np.abs(probs_f - probs_b).max() <= 1e-5
    assert list(labels_f.reshape(-1)) == list(labels_b.reshape(-1))

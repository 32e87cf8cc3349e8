from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from textgate.config import Config, RepositoryConfig
from textgate.errors import RepositoryError
from textgate.repository import describe, parse, render, to_text
from textgate.repository.render import pb


def _settings(**kw: object) -> RepositoryConfig:
    return Config.from_dict({"repository": kw}).repository


# fused is embedded-only: the container combination is a ConfigError (see test_config).
COMBINATIONS = [
    ("embedded", "bucket"),
    ("embedded", "fixed"),
    ("embedded", "fused"),
    ("triton-container", "bucket"),
    ("triton-container", "fixed"),
]


@pytest.mark.parametrize(("target", "strategy"), COMBINATIONS)
def test_every_config_parses_back_with_tritons_protobuf(
    fake_bundle: Callable[..., Path], target: str, strategy: str
) -> None:
    spec = describe([fake_bundle()], _settings(target=target, shape_strategy=strategy))
    configs = render(spec)
    for name, message in configs.items():
        text = to_text(message)
        assert parse(text) == message, name
        assert f'name: "{name}"' in text


def test_embedded_and_container_differ_only_in_the_model_step(
    fake_bundle: Callable[..., Path],
) -> None:
    b = fake_bundle()
    emb = render(describe([b], _settings(shape_strategy="bucket")))
    gpu = _settings(
        target="triton-container",
        instance_group={"kind": "gpu", "gpus": [0]},
        accelerator="tensorrt",
    )
    con = render(describe([b], gpu))
    assert emb["spam_model"].backend == "python"
    assert con["spam_model"].platform == "onnxruntime_onnx"
    assert con["spam_model"].default_model_filename == "model.onnx"
    acc = con["spam_model"].optimization.execution_accelerators.gpu_execution_accelerator[0]
    assert acc.name == "tensorrt" and acc.parameters["precision_mode"] == "FP16"
    assert con["spam_model"].instance_group[0].kind == pb.ModelInstanceGroup.KIND_GPU
    assert list(con["spam_model"].instance_group[0].gpus) == [0]
    for name in ("spam_tokenize", "spam_postprocess", "spam"):
        assert emb[name] == con[name]


def test_ensemble_wiring_and_io(fake_bundle: Callable[..., Path]) -> None:
    configs = render(
        describe([fake_bundle()], _settings(max_batch_size=32, shape_strategy="bucket"))
    )
    ens = configs["spam"]
    assert ens.platform == "ensemble" and ens.max_batch_size == 32
    assert [s.model_name for s in ens.ensemble_scheduling.step] == [
        "spam_tokenize",
        "spam_model",
        "spam_postprocess",
    ]
    assert [(t.name, pb.DataType.Name(t.data_type), list(t.dims)) for t in ens.output] == [
        ("label", "TYPE_STRING", [1]),
        ("probabilities", "TYPE_FP32", [2]),
    ]
    tok = configs["spam_tokenize"]
    assert tok.parameters["bucket_lengths"].string_value == "16,32,64,128"
    assert tok.dynamic_batching.max_queue_delay_microseconds == 0


def test_batching_instances_and_version_policy_come_from_config(
    fake_bundle: Callable[..., Path],
) -> None:
    s = _settings(
        dynamic_batching={"preferred_batch_sizes": [8, 16], "max_queue_delay_microseconds": 500},
        instance_group={"count": 2},
        version_policy={"policy": "specific", "versions": [1, 2]},
        ort_intra_op_threads=2,
        ort_allow_spinning=False,
    )
    model = render(describe([fake_bundle()], s))["spam_model"]
    assert list(model.dynamic_batching.preferred_batch_size) == [8, 16]
    assert model.dynamic_batching.max_queue_delay_microseconds == 500
    assert model.instance_group[0].count == 2
    assert list(model.version_policy.specific.versions) == [1, 2]
    assert model.parameters["intra_op_threads"].string_value == "2"
    assert model.parameters["allow_spinning"].string_value == "0"
    assert model.parameters["onnx_file"].string_value == "model.int8.onnx"  # default cpu


def test_disabled_batching_has_no_dynamic_batching(fake_bundle: Callable[..., Path]) -> None:
    configs = render(describe([fake_bundle()], _settings(dynamic_batching={"enabled": False})))
    assert not configs["spam_model"].HasField("dynamic_batching")


def test_fixed_strategy_has_one_bucket(fake_bundle: Callable[..., Path]) -> None:
    tok = render(describe([fake_bundle()], _settings(shape_strategy="fixed")))["spam_tokenize"]
    assert tok.parameters["bucket_lengths"].string_value == "128"


def test_accelerator_needs_gpu_instances(fake_bundle: Callable[..., Path]) -> None:
    s = _settings(target="triton-container", accelerator="cuda")
    with pytest.raises(RepositoryError, match="GPU"):
        render(describe([fake_bundle()], s))


def test_parse_rejects_unknown_fields() -> None:
    with pytest.raises(RepositoryError):
        parse('name: "x"\nmax_batch: 3\n')

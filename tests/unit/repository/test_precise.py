"""repository.rescore_variant: <task>_model_fp32 + <task>_fp32 beside the fast variant."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from textgate.config import RepositoryConfig
from textgate.errors import RepositoryError
from textgate.repository import build, describe
from textgate.repository.render import parse, render, to_text


def test_off_by_default_and_with_one_variant(fake_bundle: Callable[..., Path]) -> None:
    b = fake_bundle()
    assert describe([b], RepositoryConfig()).tasks[0].precise_variant is None
    same = RepositoryConfig(variant="fp32", rescore_variant="fp32", shape_strategy="bucket")
    assert describe([b], same).model_names() == [
        "spam_tokenize",
        "spam_model",
        "spam_postprocess",
        "spam",
    ]


def test_fp32_ensemble_served_beside_int8(fake_bundle: Callable[..., Path], tmp_path: Path) -> None:
    spec = describe(
        [fake_bundle()], RepositoryConfig(rescore_variant="fp32", shape_strategy="bucket")
    )
    assert spec.model_names()[-2:] == ["spam_model_fp32", "spam_fp32"]
    configs = render(spec)
    ensemble = configs["spam_fp32"]
    steps = [s.model_name for s in ensemble.ensemble_scheduling.step]
    assert steps == ["spam_tokenize", "spam_model_fp32", "spam_postprocess"]
    precise = configs["spam_model_fp32"]
    assert precise.parameters["onnx_file"].string_value == "model.onnx"
    assert precise.parameters["variant"].string_value == "fp32"
    assert configs["spam_model"].parameters["variant"].string_value == "int8"
    for config in configs.values():
        parse(to_text(config))  # Triton's schema accepts every config
    result = build(
        [fake_bundle("other")], tmp_path / "repo", RepositoryConfig(rescore_variant="fp32")
    )
    files = sorted(p.name for p in (result.repository / "other_model_fp32" / "1").iterdir())
    assert "model.onnx" in files and "model.int8.onnx" not in files


def test_rejected_or_missing_precise_variant(fake_bundle: Callable[..., Path]) -> None:
    b = fake_bundle()
    with pytest.raises(RepositoryError, match="rescore_variant 'fp32-opt'"):
        describe([b], RepositoryConfig(rescore_variant="fp32-opt"))

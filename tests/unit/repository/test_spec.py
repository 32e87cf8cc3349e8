from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from textgate.config import Config
from textgate.errors import BundleError, RepositoryError
from textgate.repository import describe


def _s(**kw: object):  # type: ignore[no-untyped-def]
    return Config.from_dict({"repository": kw}).repository


def test_buckets_clip_to_max_length(fake_bundle: Callable[..., Path]) -> None:
    spec = describe([fake_bundle()], _s(bucket_lengths=[16, 100, 512]))
    assert spec.tasks[0].buckets == (16, 100, 128)


def test_variant_auto_follows_instance_kind(fake_bundle: Callable[..., Path]) -> None:
    b = fake_bundle()
    assert describe([b], _s()).tasks[0].variant == "int8"
    assert describe([b], _s(instance_group={"kind": "gpu"})).tasks[0].variant == "fp32"


def test_rejected_or_missing_variant_is_refused(fake_bundle: Callable[..., Path]) -> None:
    b = fake_bundle()
    with pytest.raises(RepositoryError, match="rejected"):
        describe([b], _s(variant="fp16"))
    with pytest.raises(RepositoryError, match="not in the bundle"):
        describe([b], _s(variant="fp32-opt"))


def test_duplicate_tasks_and_bad_names_are_refused(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    a = fake_bundle("spam")
    with pytest.raises(RepositoryError, match="two bundles"):
        describe([a, a], _s())
    with pytest.raises(RepositoryError, match="cannot name"):
        describe([fake_bundle("bad name")], _s())


def test_corrupted_bundle_is_refused_naming_the_file(fake_bundle: Callable[..., Path]) -> None:
    b = fake_bundle()
    (b / "model.int8.onnx").write_bytes(b"changed")
    with pytest.raises(BundleError) as info:
        describe([b], _s())
    assert info.value.file == "model.int8.onnx"


def test_model_names_in_load_order(fake_bundle: Callable[..., Path]) -> None:
    spec = describe([fake_bundle()], _s(shape_strategy="bucket"))
    assert spec.model_names() == ["spam_tokenize", "spam_model", "spam_postprocess", "spam"]
    fused = describe([fake_bundle("other")], _s(shape_strategy="fused"))
    assert fused.model_names() == ["other_model", "other_postprocess", "other"]


def test_auto_strategy_is_fused_on_embedded_and_bucket_on_the_container(
    fake_bundle: Callable[..., Path],
) -> None:
    # The embedded default is one Python step (no ensemble hops); native ORT in the
    # container needs the three-step ensemble, so its default stays bucket.
    embedded = describe([fake_bundle()], _s())
    assert embedded.settings.shape_strategy == "auto" and embedded.fused
    assert embedded.model_names() == ["spam_model", "spam_postprocess", "spam"]
    container = describe([fake_bundle("other")], _s(target="triton-container"))
    assert not container.fused
    assert container.model_names()[0] == "other_tokenize"

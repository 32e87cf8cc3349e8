from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from textgate.config import Config
from textgate.errors import RepositoryError
from textgate.repository import build, parse


def _s(**kw: object):  # type: ignore[no-untyped-def]
    return Config.from_dict({"repository": kw}).repository


def _tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_embedded_layout(fake_bundle: Callable[..., Path], tmp_path: Path) -> None:
    result = build([fake_bundle()], tmp_path / "repo", _s(shape_strategy="bucket"))
    files = _tree(result.repository)
    assert {
        "spam/config.pbtxt",
        "spam_tokenize/config.pbtxt",
        "spam_tokenize/1/model.py",
        "spam_tokenize/1/textgate_support.py",
        "spam_tokenize/1/tokenizer.json",
        "spam_tokenize/1/manifest.json",
        "spam_model/1/model.py",
        "spam_model/1/model.int8.onnx",
        "spam_postprocess/1/labels.json",
    } <= files
    assert (result.repository / "spam" / "1").is_dir()
    for cfg in result.repository.glob("*/config.pbtxt"):
        assert parse(cfg.read_text(encoding="utf-8")).name == cfg.parent.name


def test_container_layout_renames_the_model(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    b = fake_bundle()
    result = build([b], tmp_path / "repo", _s(target="triton-container"))
    files = _tree(result.repository)
    assert "spam_model/1/model.onnx" in files and "spam_model/1/model.py" not in files
    onnx = (result.repository / "spam_model/1/model.onnx").read_bytes()
    assert onnx == (b / "model.int8.onnx").read_bytes()


def test_existing_version_needs_overwrite_new_version_adds(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    b = fake_bundle()
    out = tmp_path / "repo"
    build([b], out, _s())
    with pytest.raises(RepositoryError, match="already exists"):
        build([b], out, _s())
    build([b], out, _s(), version=2)
    assert (out / "spam_model/1").is_dir() and (out / "spam_model/2").is_dir()
    build([b], out, _s(), overwrite=True)


def test_templates_import_only_the_allowed_modules(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    import ast

    allowed = {"numpy", "tokenizers", "onnxruntime", "triton_python_backend_utils"}
    allowed |= {"textgate_support", "hashlib", "json", "os", "sys", "__future__", "typing"}
    result = build([fake_bundle()], tmp_path / "repo", _s())
    for path in result.repository.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path}: imports {name}"


def test_manifest_copy_matches_bundle(fake_bundle: Callable[..., Path], tmp_path: Path) -> None:
    b = fake_bundle()
    result = build([b], tmp_path / "repo", _s())
    copied = json.loads((result.repository / "spam_model/1/manifest.json").read_text())
    assert copied == json.loads((b / "manifest.json").read_text())


def test_suffix_names_every_model_of_a_version(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    # Release versions live side by side as spam_v2, spam_v2_tokenize, ... (docs/lifecycle.md)
    result = build(
        [fake_bundle()],
        tmp_path / "repo",
        _s(rescore_variant="fp32", shape_strategy="bucket"),
        suffix="_v2",
    )
    names = {p.parent.name for p in result.repository.glob("*/config.pbtxt")}
    assert names == {
        "spam_v2",
        "spam_v2_tokenize",
        "spam_v2_model",
        "spam_v2_postprocess",
        "spam_v2_model_fp32",
        "spam_v2_fp32",
    }
    ensemble = parse((result.repository / "spam_v2" / "config.pbtxt").read_text("utf-8"))
    steps = [s.model_name for s in ensemble.ensemble_scheduling.step]
    assert steps == ["spam_v2_tokenize", "spam_v2_model", "spam_v2_postprocess"]
    precise = parse((result.repository / "spam_v2_fp32" / "config.pbtxt").read_text("utf-8"))
    assert "spam_v2_model_fp32" in [s.model_name for s in precise.ensemble_scheduling.step]
    assert result.spec.tasks[0].task == "spam"

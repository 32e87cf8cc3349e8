"""Bundle integrity: every kind of damage is detected and the bad file is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textgate import bundle
from textgate.errors import BundleError


def _manifest(**over: object) -> dict[str, object]:
    data: dict[str, object] = {
        "task": "spam",
        "labels": ["ham", "spam"],
        "max_length": 64,
        "metrics": {"test": {"accuracy": 0.9, "f1": 0.8, "macro_f1": 0.85}},
        "parity": {"max_abs_diff": 1e-7, "argmax_agreement": 1.0, "n": 500, "passed": True},
        "variants": {
            "fp32": {"file": "model.onnx", "status": "accepted", "agreement": 1.0, "f1_delta": 0.0},
            "int8": {
                "file": "model.int8.onnx",
                "status": "rejected",
                "reason": "agreement 0.9 < 0.995",
                "agreement": 0.9,
                "f1_delta": -0.1,
            },
        },
        "default_variant": {"cpu": "fp32"},
    }
    data.update(over)
    return data


@pytest.fixture
def good(tmp_path: Path) -> Path:
    root = tmp_path / "b"
    (root / "reports").mkdir(parents=True)
    (root / "model.onnx").write_bytes(bytes(range(256)) * 40)
    (root / "model.int8.onnx").write_bytes(b"int8" * 100)
    (root / "tokenizer.json").write_text('{"model": {}}')
    (root / "reports" / "parity.json").write_text("{}")
    bundle.write_manifest(root, _manifest())
    return root


def test_intact_bundle_verifies_and_lists_every_file(good: Path) -> None:
    manifest = bundle.verify(good)
    assert sorted(manifest["files"]) == [
        "model.int8.onnx",
        "model.onnx",
        "reports/parity.json",
        "tokenizer.json",
    ]
    assert manifest["files"]["model.onnx"] == bundle.sha256_file(good / "model.onnx")
    assert manifest["sizes"]["model.int8.onnx"] == 400
    assert bundle.MANIFEST not in manifest["files"]
    assert set(bundle.servable(manifest)) == {"fp32"}


def _bad_file(root: Path) -> tuple[str | None, str]:
    with pytest.raises(BundleError) as info:
        bundle.verify(root)
    return info.value.file, str(info.value)


def test_flipped_byte_is_named(good: Path) -> None:
    path = good / "model.onnx"
    data = bytearray(path.read_bytes())
    data[1000] ^= 0x01
    path.write_bytes(bytes(data))
    file, message = _bad_file(good)
    assert file == "model.onnx"
    assert "changed" in message


def test_truncated_file_is_named(good: Path) -> None:
    path = good / "model.int8.onnx"
    path.write_bytes(path.read_bytes()[:-1])
    file, message = _bad_file(good)
    assert file == "model.int8.onnx"
    assert "truncated" in message


def test_missing_file_is_named(good: Path) -> None:
    (good / "reports" / "parity.json").unlink()
    file, message = _bad_file(good)
    assert file == "reports/parity.json"
    assert "missing" in message


def test_extra_file_is_named(good: Path) -> None:
    (good / "reports" / "notes.txt").write_text("hi")
    file, message = _bad_file(good)
    assert file == "reports/notes.txt"
    assert "extra" in message


def test_every_problem_is_reported_at_once(good: Path) -> None:
    (good / "tokenizer.json").write_text('{"model": {"x": 1}}')
    (good / "model.onnx").unlink()
    (good / "stray.bin").write_bytes(b"\0")
    _file, message = _bad_file(good)
    for name in ("tokenizer.json", "model.onnx", "stray.bin"):
        assert name in message


def test_missing_manifest_is_not_a_bundle(good: Path) -> None:
    (good / bundle.MANIFEST).unlink()
    file, message = _bad_file(good)
    assert file == bundle.MANIFEST
    assert "not a bundle" in message


def test_corrupt_manifest_json(good: Path) -> None:
    path = good / bundle.MANIFEST
    path.write_text(path.read_text()[:-20])
    file, message = _bad_file(good)
    assert file == bundle.MANIFEST
    assert "not valid JSON" in message


@pytest.mark.parametrize("key", ["files", "labels", "max_length", "parity", "variants"])
def test_manifest_without_required_key(good: Path, key: str) -> None:
    path = good / bundle.MANIFEST
    data = json.loads(path.read_text())
    del data[key]
    path.write_text(json.dumps(data))
    file, message = _bad_file(good)
    assert file == bundle.MANIFEST
    assert key in message


def test_variant_pointing_at_unlisted_file_is_refused(good: Path) -> None:
    path = good / bundle.MANIFEST
    data = json.loads(path.read_text())
    data["variants"]["fp16"] = {"file": "model.fp16.onnx", "status": "accepted"}
    path.write_text(json.dumps(data))
    file, _message = _bad_file(good)
    assert file == "model.fp16.onnx"


def test_default_variant_must_be_accepted(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"x")
    (tmp_path / "model.int8.onnx").write_bytes(b"y")
    with pytest.raises(BundleError, match="default_variant.cpu"):
        bundle.write_manifest(tmp_path, _manifest(default_variant={"cpu": "int8"}))


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="not a directory"):
        bundle.verify(tmp_path / "nope")


@pytest.mark.parametrize(
    "text",
    [
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",  # RecursionError in the decoder
        '{"max_length": 1' + "0" * 5000 + "}",  # ValueError: int over 4300 digits
    ],
    ids=["deeply-nested", "huge-int"],
)
def test_hostile_manifest_json_is_a_bundle_error(good: Path, text: str) -> None:
    (good / bundle.MANIFEST).write_text(text)
    file, message = _bad_file(good)
    assert file == bundle.MANIFEST and "not valid JSON" in message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("default_variant", ["fp32"]),
        ("default_variant", {"cpu": ["fp32"]}),
        ("sizes", "model.onnx"),
        ("variants", {"fp32": {"file": ["model.onnx"], "status": "accepted"}}),
        ("files", {"model.onnx": 5}),
        ("labels", "ham,spam"),
        ("max_length", "128"),
        ("metrics", {"test": None}),
    ],
)
def test_wrongly_typed_manifest_key_is_a_bundle_error(good: Path, key: str, value: object) -> None:
    path = good / bundle.MANIFEST
    data = json.loads(path.read_text())
    data[key] = value
    path.write_text(json.dumps(data))
    file, message = _bad_file(good)
    assert file == bundle.MANIFEST and key in message


def test_stale_temporary_manifest_is_not_listed(tmp_path: Path) -> None:
    # A crash between writing manifest.json.tmp and renaming it leaves the temporary file;
    # the next write must not record it (it is renamed away, and verify would then fail).
    (tmp_path / "model.onnx").write_bytes(b"x")
    (tmp_path / "model.int8.onnx").write_bytes(b"y")
    (tmp_path / (bundle.MANIFEST + ".tmp")).write_text("{}")
    manifest = bundle.write_manifest(tmp_path, _manifest())
    assert sorted(manifest["files"]) == ["model.int8.onnx", "model.onnx"]
    bundle.verify(tmp_path)

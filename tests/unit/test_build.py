"""The build cache: same inputs reuse the verified bundle; any change or damage rebuilds.

Training is replaced by writing a tiny random checkpoint (the real fine-tune has its own
test); export and verify are real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures_models import make_checkpoint

from textgate import build, data
from textgate.errors import BundleError


def _table(n: int = 60, extra: str = "") -> data.Table:
    rows = [(i + 1, f"message {i} {extra}", "spam" if i % 3 == 0 else "ham") for i in range(n)]
    return data.build_table(rows, source="mem", labels=("ham", "spam"))


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Path]:
    from textgate import train

    seen: list[Path] = []

    def fake_train(table: Any, base: Any, out: Path, **_: Any) -> dict[str, Any]:
        seen.append(out)
        make_checkpoint(out, "bert")
        return {}

    monkeypatch.setattr(train, "train", fake_train)
    monkeypatch.setenv("TEXTGATE_CACHE_DIR", str(tmp_path / "cache"))
    return seen


@pytest.mark.slow
def test_second_build_reuses_the_cache(
    calls: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = {"parity_n": 500, "variants": ("int8",)}
    first = build.build("spam", tmp_path / "a", table=_table(), export_options=export)
    second = build.build("spam", tmp_path / "b", table=_table(), export_options=export)
    assert len(calls) == 1
    assert first["files"] == second["files"]
    assert (tmp_path / "b" / "manifest.json").is_file()

    # Other data → another training key → a new checkpoint.
    build.build("spam", tmp_path / "c", table=_table(extra="x"), export_options=export)
    assert len(calls) == 2

    # A damaged cached bundle is rebuilt from the cached checkpoint, never copied out.
    bundle_dir = next((calls[0].parent / "bundles").iterdir())
    (bundle_dir / "labels.json").write_text('["tampered"]')
    build.build("spam", tmp_path / "d", table=_table(), export_options=export)
    assert len(calls) == 2
    assert build.bundle.verify(tmp_path / "d")["labels"] == ["ham", "spam"]

    # Changed export code re-exports; the checkpoint is reused.
    real = build.code_hash
    monkeypatch.setattr(
        build, "code_hash", lambda names: "new" if names == build.EXPORT_CODE else real(names)
    )
    build.build("spam", tmp_path / "e", table=_table(), export_options=export)
    assert len(calls) == 2
    assert len(list((calls[0].parent / "bundles").iterdir())) == 2


def test_keys_change_with_data_options_and_code(monkeypatch: pytest.MonkeyPatch) -> None:
    from textgate import train

    opts = train.TrainOptions()
    key = build.train_key("spam", _table(), opts)
    assert key == build.train_key("spam", _table(), opts)
    assert key != build.train_key("spam", _table(extra="y"), opts)
    assert key != build.train_key("spam", _table(), train.TrainOptions(seed=7))
    assert build.export_key(key, {}) != build.export_key(key, {"max_f1_drop": 0.01})
    assert build.export_key(key, {}) != build.export_key("other", {})
    exported = build.export_key(key, {})
    monkeypatch.setattr(build, "code_hash", lambda names: "changed")
    assert key != build.train_key("spam", _table(), opts)
    assert exported != build.export_key(key, {})


def test_refuses_to_replace_a_non_bundle_directory(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.mkdir()
    (target / "thesis.txt").write_text("do not delete")
    with pytest.raises(BundleError, match="not a bundle") as info:
        build.build("spam", target, table=_table())
    assert info.value.hint and "--force" in info.value.hint
    assert (target / "thesis.txt").exists()


def test_base_hash_sees_changed_weights(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "model.safetensors").write_bytes(b"weights-1")
    before = build.base_hash(base)
    (base / "model.safetensors").write_bytes(b"weights-2")
    assert build.base_hash(base) != before

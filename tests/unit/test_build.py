"""The build cache: same inputs reuse the verified bundle; any change or damage rebuilds.

Training is replaced by writing a tiny random checkpoint (the real fine-tune has its own
test); export and verify are real.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fixtures_models import make_checkpoint
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


# --- a run the time budget cut is never the cached default (issue 38) --------------------


def _fake_run(stopped: str, steps_run: int = 256) -> dict[str, Any]:
    return {
        "task": "spam",
        "stopped": stopped,
        "steps_run": steps_run,
        "steps_planned": 256,
        "options": {"recipe": "full", "max_minutes": 60},
    }


@pytest.fixture
def fake_stages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """Training writes only textgate.json with the next queued ending; export writes a
    one-file bundle whose ``training`` block is export's own (``training_record``)."""
    from textgate import export, train

    endings: list[str] = []

    def fake_train(table: Any, base: Any, out: Path, **_: Any) -> dict[str, Any]:
        out.mkdir(parents=True)
        stopped = endings.pop(0)
        run = _fake_run(stopped, 129 if stopped == "time_budget" else 256)
        (out / "textgate.json").write_text(json.dumps(run))
        return {}

    def fake_export(ckpt: Path, target: Path, _options: Any, _log: Any) -> None:
        target.mkdir(parents=True)
        (target / "model.onnx").write_bytes(b"onnx")
        manifest: dict[str, Any] = {
            "labels": ["ham", "spam"],
            "max_length": 8,
            "metrics": {"test": {}},
            "parity": {},
            "variants": {"fp32": {"file": "model.onnx", "status": "accepted"}},
        }
        training = export.training_record(json.loads((ckpt / "textgate.json").read_text()))
        if training is not None:
            manifest["training"] = training
        build.bundle.write_manifest(target, manifest)

    monkeypatch.setattr(train, "train", fake_train)
    monkeypatch.setattr(build, "_export", fake_export)
    monkeypatch.setenv("TEXTGATE_CACHE_DIR", str(tmp_path / "cache"))
    return endings


def test_a_run_the_budget_cut_is_not_cached_as_the_default(
    fake_stages: list[str], tmp_path: Path
) -> None:
    fake_stages += ["time_budget", "completed"]
    cut = build.build("spam", tmp_path / "a", table=_table())
    assert cut["training"]["cut_by_time_budget"] is True
    assert (cut["training"]["steps_run"], cut["training"]["steps_planned"]) == (129, 256)
    key = build.train_key("spam", _table(), _default_options())
    stage = build.builds_dir() / f"spam-{key[:16]}"
    assert not stage.exists()  # nothing under the default's name ...
    kept = stage.with_name(stage.name + build.CUT_SUFFIX)
    assert (kept / "checkpoint" / "textgate.json").is_file()  # ... the cut run set aside

    # the next build trains again, and a completed run is the cached default from then on
    done = build.build("spam", tmp_path / "b", table=_table())
    assert fake_stages == [] and done["training"]["cut_by_time_budget"] is False
    assert (stage / "train.json").is_file()
    again = build.build("spam", tmp_path / "c", table=_table())  # no ending queued: cached
    assert again["files"] == done["files"]


def test_a_cut_checkpoint_that_older_code_cached_is_trained_again(
    fake_stages: list[str], tmp_path: Path
) -> None:
    fake_stages.append("completed")
    build.build("spam", tmp_path / "a", table=_table())
    key = build.train_key("spam", _table(), _default_options())
    stage = build.builds_dir() / f"spam-{key[:16]}"
    # what the 10-minute budget left in a cache before this release: cached, and cut
    (stage / "checkpoint" / "textgate.json").write_text(json.dumps(_fake_run("time_budget", 129)))
    shutil.rmtree(stage / "bundles")
    fake_stages.append("completed")
    rebuilt = build.build("spam", tmp_path / "b", table=_table())
    assert fake_stages == [] and rebuilt["training"]["stopped"] == "completed"


def test_the_safety_net_is_no_input_of_a_model_whose_rate_ignores_the_clock() -> None:
    from textgate import train

    table = _table()
    # spam decays by the steps only: any budget finds the same cached default
    assert build.train_key("spam", table, train.TrainOptions(max_minutes=90)) == build.train_key(
        "spam", table, train.TrainOptions()
    )
    # sentiment anneals by the clock: its budget shapes even a completed run
    assert build.train_key(
        "sentiment", table, train.TrainOptions(max_minutes=90)
    ) != build.train_key("sentiment", table, train.TrainOptions())
    # the small recipe is another model under another key
    assert build.train_key("spam", table, train.TrainOptions(recipe="small")) != build.train_key(
        "spam", table, train.TrainOptions()
    )


def _default_options() -> Any:
    from textgate import train

    return train.TrainOptions()

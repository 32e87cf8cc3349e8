"""export_bundle's argument checks and the export/verify CLI: clear errors, no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from textgate import bundle, cli
from textgate.errors import ConfigError, ExportError
from textgate.export import export_bundle


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"max_f1_drop": -0.1}, "max_f1_drop"),
        ({"max_f1_drop": 1.5}, "max_f1_drop"),
        ({"min_agreement": 0.0}, "min_agreement"),
        ({"parity_n": 100}, "parity_n"),
        ({"opset": 13}, "opset"),
        ({"variants": ("int4",)}, "variants"),
    ],
)
def test_bad_arguments_fail_before_any_work(
    tmp_path: Path, kwargs: dict[str, object], key: str
) -> None:
    out = tmp_path / "bundle"
    with pytest.raises(ConfigError) as info:
        export_bundle(tmp_path / "missing-checkpoint", out, **kwargs)  # type: ignore[arg-type]
    assert info.value.key == key and info.value.hint
    assert not out.exists()


def _fake_checkpoint(root: Path) -> Path:
    root.mkdir()
    cfg = {"model_type": "bert", "num_attention_heads": 2, "hidden_size": 8}
    (root / "config.json").write_text(json.dumps({**cfg, "id2label": {"0": "a", "1": "b"}}))
    (root / "model.safetensors").write_bytes(b"")
    (root / "tokenizer.json").write_text("{}")
    return root


def test_non_empty_output_is_refused_even_with_force(tmp_path: Path) -> None:
    ckpt = _fake_checkpoint(tmp_path / "ckpt")
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious.txt").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(ExportError, match="not empty"):
            export_bundle(ckpt, out, overwrite=overwrite)
    assert (out / "precious.txt").read_text() == "mine"


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    # rich wraps long lines at the (captured) terminal width, even inside a path
    return code, (captured.err + captured.out).replace("\n", "")


def test_cli_export_missing_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _cli(capsys, "export", str(tmp_path / "nope"), "-o", str(tmp_path / "b"))
    assert code == cli.EXIT_CODES[ExportError]
    assert "nope" in text and "fix:" in text and "Traceback" not in text


def test_cli_export_checkpoint_without_tokenizer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ckpt = _fake_checkpoint(tmp_path / "ckpt")
    (ckpt / "tokenizer.json").unlink()
    code, text = _cli(capsys, "export", str(ckpt), "-o", str(tmp_path / "b"))
    assert code == cli.EXIT_CODES[ExportError]
    assert "tokenizer.json" in text and "save_pretrained" in text


@pytest.mark.parametrize("value", ["abc", "-1", "1"])
def test_cli_bad_max_f1_drop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    ckpt = _fake_checkpoint(tmp_path / "ckpt")
    argv = ["export", str(ckpt), "-o", str(tmp_path / "b"), f"--max-f1-drop={value}"]
    code, text = _cli(capsys, *argv)
    assert code == cli.EXIT_CODES[ConfigError]
    assert "max_f1_drop" in text and "fix:" in text and "Traceback" not in text


def _small_bundle(root: Path) -> Path:
    root.mkdir()
    (root / "model.onnx").write_bytes(b"onnx" * 10)
    manifest = {
        "labels": ["a", "b"],
        "max_length": 8,
        "metrics": {"test": {"accuracy": None, "f1": None, "macro_f1": None}},
        "parity": {"max_abs_diff": 0.0, "argmax_agreement": 1.0, "n": 500},
        "variants": {"fp32": {"file": "model.onnx", "status": "accepted", "agreement": 1.0}},
    }
    bundle.write_manifest(root, manifest)
    return root


def test_cli_verify_good_and_bad(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _small_bundle(tmp_path / "b")
    code, text = _cli(capsys, "verify", str(root))
    assert code == 0 and "model.onnx" in text and "accepted" in text
    (root / "model.onnx").write_bytes(b"onnx" * 9)
    code, text = _cli(capsys, "verify", str(root))
    assert code == cli.EXIT_CODES[bundle.BundleError]
    assert "model.onnx" in text and "truncated" in text


def test_verify_needs_neither_torch_nor_transformers(tmp_path: Path) -> None:
    root = _small_bundle(tmp_path / "b")
    code = (
        "import sys; from textgate import cli; import textgate.export; "
        f"rc = cli.main(['verify', {str(root)!r}]); "
        "heavy = [m for m in ('torch', 'transformers') if m in sys.modules]; "
        "print('HEAVY', heavy); sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout


def test_force_replaces_a_previous_bundle_or_failed_export_only(tmp_path: Path) -> None:
    from textgate.export import _prepare

    for leftover in ("bundle", "failed"):
        out = tmp_path / leftover
        (out / "reports").mkdir(parents=True)
        (out / "model.onnx").write_bytes(b"old")
        marker = bundle.MANIFEST if leftover == "bundle" else "labels.json"
        (out / marker).write_text("{}")
        with pytest.raises(ExportError, match="--force"):
            _prepare(out, overwrite=False)
        _prepare(out, overwrite=True)
        assert [p.name for p in out.iterdir()] == ["reports"]
        assert not any((out / "reports").iterdir())


def test_the_manifest_says_when_a_time_budget_cut_training() -> None:
    from textgate.export import training_record

    run = {"stopped": "time_budget", "steps_run": 129, "steps_planned": 256}
    cut = training_record({**run, "options": {"recipe": "full", "max_minutes": 10}})
    assert cut == {
        "recipe": "full",
        "stopped": "time_budget",
        "cut_by_time_budget": True,
        "steps_run": 129,
        "steps_planned": 256,
        "max_minutes": 10,
    }
    done = training_record({**run, "stopped": "early_stopping", "options": {"recipe": "small"}})
    assert done is not None and done["recipe"] == "small" and not done["cut_by_time_budget"]
    assert training_record({}) is None  # a plain Hugging Face checkpoint records no run

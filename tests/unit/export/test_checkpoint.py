"""Checkpoint reading: every unusable input names the file and the fix, without torch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textgate.errors import DataError, ExportError
from textgate.export.checkpoint import DEFAULT_MAX_LENGTH, load_checkpoint


def _fake(root: Path, **config: object) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    cfg = {
        "model_type": "distilbert",
        "n_heads": 2,
        "dim": 32,
        "id2label": {"0": "neg", "1": "pos"},
        **config,
    }
    (root / "config.json").write_text(json.dumps(cfg))
    (root / "model.safetensors").write_bytes(b"")
    (root / "tokenizer.json").write_text("{}")
    return root


def _error(path: Path, kind: type[Exception] = ExportError) -> str:
    with pytest.raises(kind) as info:
        load_checkpoint(path)
    return str(info.value)


def test_plain_hf_checkpoint(tmp_path: Path) -> None:
    ckpt = load_checkpoint(_fake(tmp_path / "c"))
    assert ckpt.labels == ("neg", "pos")
    assert ckpt.max_length == DEFAULT_MAX_LENGTH
    assert (ckpt.num_heads, ckpt.hidden_size) == (2, 32)
    assert not ckpt.has_test_split and ckpt.textgate == {} and ckpt.data_hash is None


def test_textgate_checkpoint_reads_meta_and_splits(tmp_path: Path) -> None:
    root = _fake(tmp_path / "c", model_type="bert", num_attention_heads=4, hidden_size=64)
    meta = {"task": "spam", "labels": ["neg", "pos"], "max_length": 64, "data_hash": "ab"}
    (root / "textgate.json").write_text(json.dumps(meta))
    (root / "data").mkdir()
    rows = [{"text": "good", "label": "pos"}, {"text": "bad", "label": "neg"}]
    (root / "data" / "test.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    ckpt = load_checkpoint(root)
    assert ckpt.task == "spam" and ckpt.max_length == 64 and ckpt.data_hash == "ab"
    assert ckpt.test_texts == ("good", "bad") and ckpt.test_labels == (1, 0)
    assert (ckpt.num_heads, ckpt.hidden_size) == (4, 64)


def test_missing_directory(tmp_path: Path) -> None:
    message = _error(tmp_path / "nope")
    assert "nope" in message and "not found" in message and "fix:" in message


def test_not_a_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    message = _error(tmp_path / "c")
    assert "config.json" in message and "not a Hugging Face checkpoint" in message
    assert "save_pretrained" in message


def test_checkpoint_without_weights(tmp_path: Path) -> None:
    root = _fake(tmp_path / "c")
    (root / "model.safetensors").unlink()
    assert "model.safetensors" in _error(root)


def test_checkpoint_without_tokenizer_json(tmp_path: Path) -> None:
    root = _fake(tmp_path / "c")
    (root / "tokenizer.json").unlink()
    message = _error(root)
    assert "tokenizer.json" in message and "missing" in message
    assert "fix: save a fast tokenizer" in message


def test_unsupported_model_type(tmp_path: Path) -> None:
    message = _error(_fake(tmp_path / "c", model_type="gpt2"))
    assert "config.json" in message and "gpt2" in message


def test_broken_config_json(tmp_path: Path) -> None:
    root = _fake(tmp_path / "c")
    (root / "config.json").write_text("{not json")
    assert "config.json" in _error(root)


def test_labels_must_match_the_model(tmp_path: Path) -> None:
    root = _fake(tmp_path / "c", num_labels=2)
    (root / "textgate.json").write_text(json.dumps({"labels": ["a", "b", "c"]}))
    message = _error(root)
    assert "2 outputs" in message and "3 labels" in message


def test_single_label_refused(tmp_path: Path) -> None:
    assert "two or more" in _error(_fake(tmp_path / "c", id2label={"0": "only"}))


def test_bad_max_length_in_textgate_json(tmp_path: Path) -> None:
    root = _fake(tmp_path / "c")
    (root / "textgate.json").write_text(json.dumps({"max_length": "long"}))
    assert "textgate.json" in _error(root) and "max_length" in _error(root)


@pytest.mark.parametrize("tail", [33, -1, "end"])
def test_a_tail_outside_half_the_window_is_refused(tmp_path: Path, tail: object) -> None:
    root = _fake(tmp_path / "c")
    (root / "textgate.json").write_text(json.dumps({"max_length": 64, "tail_tokens": tail}))
    assert "textgate.json" in _error(root) and "tail_tokens" in _error(root)


def test_the_tail_is_read_from_textgate_json(tmp_path: Path) -> None:
    root = _fake(tmp_path / "c")
    (root / "textgate.json").write_text(json.dumps({"max_length": 64, "tail_tokens": 32}))
    assert load_checkpoint(root).tail_tokens == 32


def test_test_split_with_unknown_label_names_file_and_row(tmp_path: Path) -> None:
    root = _fake(tmp_path / "c")
    (root / "data").mkdir()
    (root / "data" / "test.jsonl").write_text(
        '{"text": "a", "label": "pos"}\n{"text": "b", "label": "meh"}\n'
    )
    message = _error(root, DataError)
    assert "test.jsonl" in message and "row 2" in message and "meh" in message


@pytest.mark.parametrize(
    "content",
    [
        b'{"text": "a", "label": "pos"}\n{"text": "caf\xe9", "label": "pos"}\n',  # not UTF-8
        b'{"text": "a", "label": ["pos"]}\n',  # unhashable label
        b'{"text": "a", "label": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",  # too deep
    ],
    ids=["latin1", "list-label", "deeply-nested"],
)
def test_unusable_test_split_is_a_data_error(tmp_path: Path, content: bytes) -> None:
    root = _fake(tmp_path / "c")
    (root / "data").mkdir()
    (root / "data" / "test.jsonl").write_bytes(content)
    assert "test.jsonl" in _error(root, DataError)


def test_deeply_nested_config_json_is_an_export_error(tmp_path: Path) -> None:
    root = _fake(tmp_path / "c")
    (root / "config.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert "config.json" in _error(root)

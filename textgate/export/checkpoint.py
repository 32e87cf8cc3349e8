"""Read a checkpoint directory (textgate's or plain Hugging Face) without importing torch.

Everything the exporter needs to know before the heavy work starts is read here from JSON,
so a wrong path or a missing tokenizer fails in milliseconds with the file and the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textgate import window
from textgate.errors import DataError, ExportError

DEFAULT_MAX_LENGTH = 128
# Encoder families whose ONNX graphs ORT's BERT optimizer fuses (MiniLM is model_type bert).
SUPPORTED = ("bert", "distilbert", "roberta", "xlm-roberta")


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    path: Path
    model_type: str
    labels: tuple[str, ...]
    max_length: int
    tail_tokens: int = 0  # textgate.window: the last tokens a long text keeps (0: head only)
    num_heads: int
    hidden_size: int
    task: str | None = None
    data_hash: str | None = None
    textgate: dict[str, Any] = field(default_factory=dict)  # textgate.json, {} when plain HF
    test_texts: tuple[str, ...] = ()
    test_labels: tuple[int, ...] = ()  # class ids, aligned with test_texts
    extra_texts: tuple[str, ...] = ()  # validation split: real texts for the parity set
    test_symbols: tuple[tuple[str, ...], ...] = ()  # structure symbols, aligned (mail only)
    extra_symbols: tuple[tuple[str, ...], ...] = ()
    extra_labels: tuple[int, ...] = ()  # class ids of the validation split (calibration)

    @property
    def tokenizer_file(self) -> Path:
        return self.path / "tokenizer.json"

    @property
    def combiner_file(self) -> Path | None:
        """The fitted combiner (``textgate.signals.combiner``) that textgate.json names."""
        name = (self.textgate.get("combiner") or {}).get("file")
        return self.path / name if name else None

    @property
    def ngrams_file(self) -> Path | None:
        """The lexical half ``textgate train`` fitted beside the weights, if any."""
        name = (self.textgate.get("ngrams") or {}).get("file")
        return self.path / str(name) if name else None

    @property
    def has_test_split(self) -> bool:
        return bool(self.test_texts)


def _json(path: Path, hint: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: "[[[[..."
        raise ExportError(f"{path}: cannot be read as JSON ({exc})", hint=hint) from None
    if not isinstance(data, dict):
        raise ExportError(f"{path}: must hold a JSON object", hint=hint)
    return data


def load_checkpoint(path: Path | str) -> Checkpoint:
    root = Path(path)
    if not root.is_dir():
        raise ExportError(
            f"{root}: checkpoint directory not found",
            hint="pass the directory written by `textgate train` or `save_pretrained`",
        )
    config_path = root / "config.json"
    if not config_path.is_file():
        raise ExportError(
            f"{config_path}: missing — {root} is not a Hugging Face checkpoint",
            hint="point at a directory holding config.json and model.safetensors "
            "(model.save_pretrained(DIR))",
        )
    config = _json(config_path, "re-save the model with model.save_pretrained(DIR)")
    if not any((root / w).is_file() for w in ("model.safetensors", "pytorch_model.bin")):
        raise ExportError(
            f"{root}: no model.safetensors (or pytorch_model.bin) next to config.json",
            hint="re-save the model with model.save_pretrained(DIR)",
        )
    if not (root / "tokenizer.json").is_file():
        raise ExportError(
            f"{root / 'tokenizer.json'}: missing — the bundle must carry the fast tokenizer",
            hint="save a fast tokenizer next to the model: "
            "AutoTokenizer.from_pretrained(BASE).save_pretrained(CHECKPOINT)",
        )
    model_type = str(config.get("model_type", ""))
    if model_type not in SUPPORTED:
        raise ExportError(
            f"{config_path}: model_type {model_type!r} is not supported",
            hint=f"textgate exports {', '.join(SUPPORTED)} sequence classifiers",
        )
    meta = _textgate_json(root)
    labels = _labels(config, meta, config_path)
    heads = config.get("num_attention_heads", config.get("n_heads"))
    hidden = config.get("hidden_size", config.get("dim"))
    if not isinstance(heads, int) or not isinstance(hidden, int):
        raise ExportError(
            f"{config_path}: cannot tell the number of attention heads and hidden size",
            hint="the config needs num_attention_heads/hidden_size (or n_heads/dim)",
        )
    max_length = int(meta.get("max_length", DEFAULT_MAX_LENGTH))
    test_texts, test_ids = _jsonl(root / "data" / "test.jsonl", labels)
    val_texts, val_ids = _jsonl(root / "data" / "validation.jsonl", labels)
    return Checkpoint(
        path=root,
        model_type=model_type,
        labels=labels,
        max_length=max_length,
        tail_tokens=int(meta.get("tail_tokens", 0)),
        num_heads=heads,
        hidden_size=hidden,
        task=meta.get("task"),
        data_hash=meta.get("data_hash"),
        textgate=meta,
        test_texts=tuple(test_texts),
        test_labels=tuple(test_ids),
        extra_texts=tuple(val_texts),
        extra_labels=tuple(val_ids),
        test_symbols=_symbols(root / "data" / "test.jsonl"),
        extra_symbols=_symbols(root / "data" / "validation.jsonl"),
    )


def _symbols(path: Path) -> tuple[tuple[str, ...], ...]:
    """Each row's structure symbols (in row order; () when the split carries none)."""
    if not path.is_file():
        return ()
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            fired = json.loads(line).get("symbols")
            out.append(tuple(str(x) for x in fired) if isinstance(fired, list) else ())
    return tuple(out) if any(out) else ()


def _textgate_json(root: Path) -> dict[str, Any]:
    path = root / "textgate.json"
    if not path.is_file():
        return {}
    meta = _json(path, "re-run `textgate train`, or delete textgate.json to export as plain HF")
    max_length = meta.get("max_length", DEFAULT_MAX_LENGTH)
    if not isinstance(max_length, int) or not 2 <= max_length <= 8192:
        raise ExportError(
            f"{path}: max_length must be an integer in 2..8192, got {max_length!r}",
            hint="fix max_length in textgate.json",
        )
    tail = meta.get("tail_tokens", 0)
    problem = window.check(max_length, tail) if isinstance(tail, int) else "must be an integer"
    if problem:
        raise ExportError(
            f"{path}: tail_tokens {tail!r}: {problem}", hint="fix it in textgate.json"
        )
    return meta


def _labels(config: dict[str, Any], meta: dict[str, Any], config_path: Path) -> tuple[str, ...]:
    if isinstance(meta.get("labels"), list) and meta["labels"]:
        labels = tuple(str(x) for x in meta["labels"])
    else:
        id2label = config.get("id2label") or {}
        try:
            labels = tuple(str(id2label[k]) for k in sorted(id2label, key=int))
        except (ValueError, TypeError):
            raise ExportError(
                f"{config_path}: id2label keys must be class ids", hint="fix id2label"
            ) from None
    if len(labels) < 2 or len(set(labels)) != len(labels):
        raise ExportError(
            f"{config_path}: need two or more distinct labels, got {list(labels)}",
            hint="set id2label/label2id when creating the model (num_labels >= 2)",
        )
    n = config.get("num_labels", len(config.get("id2label") or labels))
    if n != len(labels):
        raise ExportError(
            f"{config_path}: the model has {n} outputs but {len(labels)} labels are declared",
            hint="make textgate.json labels match the model's id2label",
        )
    return labels


def _jsonl(path: Path, labels: tuple[str, ...]) -> tuple[list[str], list[int]]:
    """Rows of a checkpoint's data split; a label outside the model's labels is an error."""
    if not path.is_file():
        return [], []
    index = {name: i for i, name in enumerate(labels)}
    texts: list[str] = []
    ids: list[int] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise DataError(f"not valid UTF-8 at byte offset {exc.start}", path=path) from None
    for row, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            text, label = item["text"], item["label"]
        except (ValueError, RecursionError, KeyError, TypeError):
            raise DataError(
                'not a {"text": ..., "label": ...} object', path=path, row=row
            ) from None
        if not isinstance(label, str) or label not in index:
            raise DataError(
                f"label {label!r} is not one of the model's labels {list(labels)}",
                path=path,
                row=row,
                column="label",
            )
        texts.append(str(text))
        ids.append(index[label])
    return texts, ids

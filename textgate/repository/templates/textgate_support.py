"""Helpers shared by textgate's generated Python-backend models.

Standard library only: this module is imported *before* the project's site-packages are on
``sys.path`` (Triton's Python stub embeds the system libpython and ignores PYTHONPATH).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

SITE_PACKAGES_ENV = "TEXTGATE_SITE_PACKAGES"
MANIFEST = "manifest.json"


def add_site_packages() -> None:
    """Put the directories the textgate server exported first on sys.path (no-op if unset)."""
    for path in reversed(os.environ.get(SITE_PACKAGES_ENV, "").split(os.pathsep)):
        if path and path not in sys.path:
            sys.path.insert(0, path)


class Settings:
    """What initialize(args) gives a model: its config, parameters and version directory."""

    def __init__(self, args: dict[str, str]) -> None:
        self.name = args["model_name"]
        self.config: dict[str, Any] = json.loads(args["model_config"])
        self.version_dir = os.path.join(args["model_repository"], args["model_version"])
        raw = self.config.get("parameters") or {}
        self.params = {k: v.get("string_value", "") for k, v in raw.items()}

    def get(self, key: str) -> str:
        if key not in self.params:
            raise RuntimeError(f"textgate: model {self.name}: parameter '{key}' is missing")
        return self.params[key]

    def ints(self, key: str) -> list[int]:
        return [int(v) for v in self.get(key).split(",") if v.strip()]

    def path(self, key: str) -> str:
        return os.path.join(self.version_dir, self.get(key))


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_files(version_dir: str, names: dict[str, str]) -> None:
    """Check each local file against the bundle manifest's SHA-256 before loading it.

    ``names`` maps the file in ``version_dir`` to its name in the bundle manifest. A
    mismatch fails initialize(), so Triton marks this version unavailable and never serves
    wrong weights; the message names the file.
    """
    manifest_path = os.path.join(version_dir, MANIFEST)
    try:
        with open(manifest_path, encoding="utf-8") as fh:
            expected = json.load(fh)["files"]
    except (OSError, ValueError, KeyError) as exc:
        raise RuntimeError(f"textgate: cannot read {manifest_path}: {exc}") from None
    for local, bundle_name in names.items():
        path = os.path.join(version_dir, local)
        want = expected.get(bundle_name)
        if want is None:
            raise RuntimeError(f"textgate: {bundle_name} is not listed in {manifest_path}")
        if not os.path.isfile(path):
            raise RuntimeError(f"textgate: {path} is missing")
        got = sha256_file(path)
        if got != want:
            raise RuntimeError(
                f"textgate: {path} does not match the bundle manifest "
                f"(SHA-256 {got[:12]}…, manifest {bundle_name}: {want[:12]}…); "
                "refusing to serve a corrupted or replaced file"
            )


def load_ngrams(settings: Settings) -> Any:
    """The bundle's n-gram half (``ngrams_file``), checked against the manifest first.
    ``ngrams.py`` is copied beside the model: the very featurizer training used."""
    name = settings.get("ngrams_file")
    verify_files(settings.version_dir, {name: name})
    import ngrams

    return ngrams.NgramModel.load(settings.path("ngrams_file"))


def bucket_for(length: int, buckets: list[int]) -> int:
    """The smallest bucket that holds ``length`` tokens (the last one if none does)."""
    for bucket in buckets:
        if length <= bucket:
            return bucket
    return buckets[-1]


def decode(value: object) -> str:
    """A string-tensor element as text; invalid UTF-8 becomes U+FFFD rather than an error."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


# The gateway's frame (textgate/signals/wire.py): "\x00SYM SYM\x00text". Normalized text
# never starts with NUL, so a plain text is never mistaken for one.
FRAME_MARK = "\x00"
MAX_FRAME = 4096


def unframe(value: str) -> tuple[tuple[str, ...], str]:
    """(symbols, text) of a string-tensor element; ((), value) when it carries no frame."""
    if not value.startswith(FRAME_MARK):
        return (), value
    end = value.find(FRAME_MARK, 1, MAX_FRAME)
    if end < 0:
        return (), value
    return tuple(value[1:end].split()), value[end + 1 :]


def text_of(value: object) -> str:
    """The text a tokenizer or n-gram model reads: decoded, any symbol frame removed."""
    return unframe(decode(value))[1]


# Bound the characters handed to the tokenizer: truncation happens after tokenization, so a
# multi-megabyte text would otherwise cost its full length. 64 chars per token is far above
# what WordPiece/BPE produce on real text, so results for real texts are unchanged.
CHARS_PER_TOKEN = 64


class TextEncoder:
    """The bundle's fast tokenizer: one batched call, truncation, padding to a bucket."""

    def __init__(self, settings: Settings) -> None:
        from tokenizers import Tokenizer  # imported late: after add_site_packages()

        name = settings.get("tokenizer_file")
        verify_files(settings.version_dir, {name: name})
        self.tokenizer = Tokenizer.from_file(settings.path("tokenizer_file"))
        self.max_length = int(settings.get("max_length"))
        self.buckets = [b for b in settings.ints("bucket_lengths") if b <= self.max_length]
        self.pad_id = self._pad_id()
        self.tokenizer.no_padding()
        self.tail = int(settings.params.get("tail_tokens", "0"))
        if self.tail:  # head + tail: cut after encoding by the window training used
            self.tokenizer.no_truncation()
        else:
            self.tokenizer.enable_truncation(self.max_length)

    def _pad_id(self) -> int:
        padding = self.tokenizer.padding
        if padding and "pad_id" in padding:
            return int(padding["pad_id"])
        for token in ("[PAD]", "<pad>"):
            found = self.tokenizer.token_to_id(token)
            if found is not None:
                return int(found)
        return 0

    def encode(self, texts: list[str]) -> list[list[int]]:
        if self.tail:
            import window  # textgate/window.py, copied beside model.py

            bounded = [window.bound(t, self.max_length, self.tail) for t in texts]
            encodings = self.tokenizer.encode_batch(bounded) if texts else []
            return [window.fit(e.ids, self.max_length, self.tail) for e in encodings]
        limit = self.max_length * CHARS_PER_TOKEN
        encodings = self.tokenizer.encode_batch([t[:limit] for t in texts]) if texts else []
        return [e.ids for e in encodings]

    def pad(self, ids: list[list[int]], length: int | None = None) -> tuple[Any, Any]:
        """Pad to ``length`` or to the bucket of the longest row: (input_ids, attention_mask)."""
        import numpy as np

        longest = max((len(row) for row in ids), default=1)
        width = length if length is not None else bucket_for(longest, self.buckets)
        input_ids = np.full((len(ids), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        return input_ids, mask


class OnnxClassifier:
    """An ONNX Runtime session on the bundle's model file, verified before loading."""

    def __init__(self, settings: Settings) -> None:
        import onnxruntime as ort  # imported late: after add_site_packages()

        onnx_file = settings.get("onnx_file")
        verify_files(settings.version_dir, {onnx_file: onnx_file})
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(settings.params.get("intra_op_threads", "0"))
        options.inter_op_num_threads = int(settings.params.get("inter_op_threads", "1"))
        spin = settings.params.get("allow_spinning", "1")
        options.add_session_config_entry("session.intra_op.allow_spinning", spin)
        options.add_session_config_entry("session.inter_op.allow_spinning", spin)
        wanted = settings.params.get("providers", "CPUExecutionProvider").split(",")
        providers = [p for p in wanted if p in ort.get_available_providers()]
        self.session = ort.InferenceSession(
            settings.path("onnx_file"), options, providers=providers or ["CPUExecutionProvider"]
        )
        self.input_names = [i.name for i in self.session.get_inputs()]

    def logits(self, input_ids: Any, attention_mask: Any) -> Any:
        import numpy as np

        feed = {}
        for name in self.input_names:
            if name == "input_ids":
                feed[name] = input_ids
            elif name == "attention_mask":
                feed[name] = attention_mask
            else:  # e.g. token_type_ids of a BERT export: all zeros for one segment
                feed[name] = np.zeros_like(input_ids)
        return self.session.run(None, feed)[0].astype(np.float32, copy=False)

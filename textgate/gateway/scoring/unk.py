"""The share of a text's tokens that the serving model's tokenizer maps to ``[UNK]``.

A model trained on one script answers text in another with confidence it has not earned:
an English MiniLM sees a Chinese sentence as mostly ``[UNK]``, a Chinese char-level model
sees Thai the same way. For tasks whose policy sets ``unk_note_above`` the gateway
tokenizes the pieces again with the very ``tokenizer.json`` Triton serves (found by its
SHA-256, which routing reads from the model config) and adds ``unk_ratio`` to the answer,
with a note above the threshold.

Why here and not in Triton: the tokenize step could count ``[UNK]`` for free, but every
ensemble of every task would grow an output, and the client, the coalescer and both shape
strategies with it; the gateway pays one Rust tokenization (its cost: docs/gateway.md,
"Unseen script") and only for tasks that ask for it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

TOKENIZER_FILE = "tokenizer.json"
RESCAN_S = 30.0  # a version added by a release lands new files; look again at most this often


class UnkCounter:
    """``tokenizer.json`` files under ``dirs``, by SHA-256, each loaded on first use."""

    def __init__(self, dirs: Iterable[Path]) -> None:
        self.dirs = [Path(d) for d in dirs]
        self._paths: dict[str, Path] = {}
        self._loaded: dict[str, tuple[Any, int] | None] = {}
        self._scanned = -float("inf")
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Any) -> UnkCounter:
        """``gateway.tokenizer_dirs``, plus the release repository where there is one."""
        release = getattr(config, "release", None)
        repo = getattr(release, "repository", None)
        return cls([*config.gateway.tokenizer_dirs, *([repo] if repo else [])])

    def ratio(self, sha256: str, pieces: Sequence[str]) -> float | None:
        """[UNK] tokens / all tokens of ``pieces``; None when the tokenizer is not found."""
        found = self._tokenizer(sha256) if sha256 else None
        if found is None:
            return None
        tok, unk = found
        total = unknown = 0
        for enc in tok.encode_batch(list(pieces), add_special_tokens=False):
            total += len(enc.ids)
            unknown += enc.ids.count(unk)
        return unknown / total if total else 0.0

    def ready(self, sha256: str) -> bool:
        """Loaded (or known to be missing until the next scan): ``ratio`` will not block."""
        return sha256 in self._loaded or (
            sha256 not in self._paths and time.monotonic() - self._scanned < RESCAN_S
        )

    def prepare(self, sha256: str) -> None:
        """Scan and load now (the gateway runs this in a thread: it hashes and parses
        files, which takes seconds and must not stall the event loop: docs/gateway.md)."""
        with self._lock:  # concurrent first requests load it once
            self._tokenizer(sha256)

    def _tokenizer(self, sha256: str) -> tuple[Any, int] | None:
        if sha256 not in self._loaded:
            path = self._paths.get(sha256) or self._rescan().get(sha256)
            if path is None:
                return None  # not cached: a later scan may find it
            self._loaded[sha256] = load(path)
        return self._loaded[sha256]

    def _rescan(self) -> dict[str, Path]:
        now = time.monotonic()
        if now - self._scanned >= RESCAN_S:
            self._scanned = now
            for d in self.dirs:
                for path in sorted(d.rglob(TOKENIZER_FILE)) if d.is_dir() else ():
                    self._paths.setdefault(_sha256(path), path)
        return self._paths


def load(path: Path) -> tuple[Any, int] | None:
    """The tokenizer without padding or truncation, and its unknown-token id (None: none)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.no_truncation()  # the ratio is over the whole piece, not the model's window
    name = getattr(tok.model, "unk_token", None) or "[UNK]"
    unk = tok.token_to_id(str(name))
    return None if unk is None else (tok, int(unk))


def note(ratio: float) -> str:
    return (
        f"{ratio:.0%} of the tokens are unknown to this model's tokenizer: the text is "
        "probably in a script the model has not seen, so its verdict is unreliable"
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

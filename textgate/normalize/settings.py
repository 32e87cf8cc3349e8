"""The normalizer's settings (limits, long-text strategy) and what it returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, is_dataclass
from typing import Any

from textgate.config.normalize import NormalizeConfig
from textgate.errors import ConfigError

# Counts units of text (characters by default; a tokenizer's token count works too).
CountFn = Callable[[str], int]


def _require(ok: bool, key: str, problem: str) -> None:
    if not ok:
        raise ConfigError(key, problem)


@dataclass(frozen=True, kw_only=True)
class NormalizeSettings(NormalizeConfig):
    """The config's ``normalize`` section (limits, long-text strategy) plus the body limit,
    which the gateway takes from ``gateway.max_body_bytes``. Sizes are in units of the
    count function (characters unless a tokenizer's count is passed)."""

    # spamc's default is 500 kB; beyond 1 MiB a mail is attachments, which are skipped anyway.
    max_body_bytes: int = 1_048_576

    def __post_init__(self) -> None:
        _require(self.max_body_bytes >= 1, "max_body_bytes", "must be at least 1")
        super().__post_init__()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NormalizeSettings:
        known = set(cls.__dataclass_fields__)
        for key in data:
            _require(key in known, key, f"unknown key; known: {', '.join(sorted(known))}")
        return cls(**data)


@dataclass(frozen=True)
class CharsetFallback:
    """A part (or the subject) whose declared charset did not decode it."""

    part: str  # "subject" or "part 3" (the walk order)
    declared: str | None
    used: str
    replaced: bool  # undecodable bytes became U+FFFD


@dataclass(frozen=True, kw_only=True)
class NormalizeNotes:
    """What normalization did, for the response and for replay."""

    charset_fallback: tuple[CharsetFallback, ...] = ()
    html_converted: bool = False
    attachments_skipped: int = 0
    parts: int = 0  # MIME entities walked, containers included; 0 for plain text
    truncated: bool = False  # head+tail cut, or chunks beyond max_chunks dropped
    chunks: int = 1  # pieces to score (the gateway max-pools their scores)
    original_chars: int = 0  # normalized text before truncation or chunking
    link_domains: tuple[str, ...] = ()
    hidden_chars: int = 0  # HTML text a browser hides (display:none, font-size:0...), not read
    controls_removed: int = 0  # NUL and other control characters dropped
    # tolerated MIME defects (stdlib class names) and, on the best-effort path, the guard
    # or error codes that sent the message there
    defects: tuple[str, ...] = ()
    best_effort: bool = False  # the MIME structure was not trusted: text read raw
    sender: str | None = None  # the message's From address (lower case); None for text
    # structure symbols that fired (``textgate.signals``): features the combiner reads,
    # never text the transformer reads; () for plain text and unreadable structure
    symbols: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: tuples become lists (of dicts, for the charset fallbacks). What
        ``asdict`` gives, without its deep copy of every field (a cost on every request:
        docs/benchmarks.md, "The gateway's CPU per request")."""
        out: dict[str, Any] = {}
        for name in _NOTE_FIELDS:
            value = getattr(self, name)
            if isinstance(value, tuple):
                value = [_plain(x) for x in value]
            out[name] = value
        return out


_NOTE_FIELDS = tuple(f.name for f in fields(NormalizeNotes))


def _plain(x: Any) -> Any:
    """A dataclass item of a notes tuple (a charset fallback) as a dict; others as they are."""
    return asdict(x) if is_dataclass(x) and not isinstance(x, type) else x


@dataclass(frozen=True)
class Normalized:
    """``text``: subject + body, NFC, single spaces. ``pieces``: what to score — one
    head+tail text, or the chunks whose scores are max-pooled."""

    text: str
    pieces: tuple[str, ...]
    notes: NormalizeNotes

"""Section ``normalize``: how the gateway turns a message or text into what a model scores.

The same settings drive training (``textgate.normalize.NormalizeSettings`` is this section
plus the body limit), and a bundle records those that shape the text: serving a bundle
under other text-shaping settings is refused as train/serve skew. Sizes are in units of
the count function (characters unless a tokenizer's count is passed). The body limit is
``gateway.max_body_bytes``; this section has no second one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textgate.config.checks import require


@dataclass(frozen=True, kw_only=True)
class NormalizeConfig:
    """Structure limits and the long-text strategy (docs/configuration.md)."""

    max_header_bytes: int = 65_536  # per MIME part (name + value of every field)
    max_parts: int = 100
    max_depth: int = 10  # nested multiparts and message/rfc822
    max_chars: int = 200_000  # normalized text; a longer JSON text is refused, a message cut
    long_text: Literal["truncate", "chunk"] = "truncate"
    # The default models see at most 128 tokens (≈ 500 characters): head + tail fit in that.
    head_chars: int = 384
    tail_chars: int = 128
    chunk_chars: int = 512
    chunk_overlap: int = 64
    max_chunks: int = 16
    keep_link_domains: bool = True
    # Full-width ASCII forms (，！１Ａ) and U+3000 as ASCII: Chinese keyboards send either
    # form for the same character (see ``textgate.normalize.width``).
    fold_width: bool = True

    def __post_init__(self) -> None:
        for key in ("max_header_bytes", "max_parts", "max_depth", "max_chars"):
            require(getattr(self, key) >= 1, key, "must be at least 1")
        for key in ("head_chars", "chunk_chars", "max_chunks"):
            require(getattr(self, key) >= 1, key, "must be at least 1")
        require(self.tail_chars >= 0, "tail_chars", "must be 0 or more")
        require(
            0 <= self.chunk_overlap < self.chunk_chars,
            "chunk_overlap",
            f"must be in 0..chunk_chars-1 ({self.chunk_chars - 1})",
        )
        require(
            self.long_text in ("truncate", "chunk"),
            "long_text",
            f"'{self.long_text}' is not 'truncate' or 'chunk'",
        )

"""How much of a text set the tokenizer cannot represent: the [UNK] guard of export.

An English WordPiece vocabulary turns most Chinese characters into [UNK] (11 of 13 tokens
of 这个手机质量很差，非常失望 with the packaged MiniLM); a model trained on that learns from
almost nothing, and its scores look like any other model's. Export measures the share of
[UNK] among the real tokens (special tokens left out) of the checkpoint's own test split and
refuses the bundle above ``MAX_UNK_RATIO``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from textgate.errors import VocabularyError

MAX_UNK_RATIO = 0.05


def unk_ratio(tokenizer: Any, texts: Sequence[str]) -> tuple[float, int]:
    """([UNK] tokens ÷ real tokens, real tokens) for ``texts``; ``tokenizer``: a
    ``tokenizers.Tokenizer``, used without truncation or padding."""
    unk_id = _unk_id(tokenizer)
    tok = _plain(tokenizer)
    unk = real = 0
    for enc in tok.encode_batch(list(texts)):
        for tid, special in zip(enc.ids, enc.special_tokens_mask, strict=True):
            if not special:
                real += 1
                unk += int(tid == unk_id)
    return (unk / real if real else 0.0), real


def check(tokenizer: Any, texts: Sequence[str], *, where: str, task: str | None) -> dict[str, Any]:
    """The coverage record for the manifest; ``VocabularyError`` above the limit."""
    ratio, real = unk_ratio(tokenizer, texts)
    record = {"unk_ratio": round(ratio, 5), "tokens": real, "texts": len(texts)}
    if texts and ratio > MAX_UNK_RATIO:
        raise VocabularyError(
            f"{where}: the tokenizer maps {ratio:.1%} of the test split's {real:,} tokens "
            f"({len(texts):,} texts{f' of task {task}' if task else ''}) to [UNK]; "
            f"the limit is {MAX_UNK_RATIO:.0%}",
            ratio=ratio,
            hint="train on a base whose vocabulary covers the language (for Chinese: "
            "textgate build sentiment-zh builds one), or pass --base with such a checkpoint",
        )
    return record


def _unk_id(tokenizer: Any) -> int | None:
    # WordPiece and BPE name their unknown token; a Unigram model (SentencePiece) numbers it
    token = getattr(tokenizer.model, "unk_token", None)
    if token:
        return tokenizer.token_to_id(str(token))
    model = json.loads(tokenizer.to_str()).get("model", {})
    if isinstance(model.get("unk_id"), int):
        return int(model["unk_id"])
    return tokenizer.token_to_id("[UNK]")


def _plain(tokenizer: Any) -> Any:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(tokenizer.to_str())
    tok.no_truncation()
    tok.no_padding()
    return tok

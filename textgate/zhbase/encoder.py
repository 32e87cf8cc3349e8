"""A compact character-level BERT for Chinese, made from nothing but a corpus.

No Chinese weights ship in any package textgate may use, so the base model is built here:
a tokenizer counted from the texts (``textgate.zhbase.vocab``) and a small BERT initialised
from a seed, optionally pre-trained by masked-language modelling (``textgate.pretrain``).
The result is an ordinary Hugging Face checkpoint directory (config.json, weights,
tokenizer.json), so fine-tuning, export and serving treat it like any other base.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from textgate.zhbase import vocab


@dataclass(frozen=True, kw_only=True)
class EncoderShape:
    """Sized for a 2-core CPU: ~5 M parameters, an epoch of 14k reviews in minutes."""

    layers: int = 4
    hidden: int = 256
    heads: int = 4
    intermediate: int = 1024
    max_positions: int = 256  # the longest bucket; 99 % of reviews fit in 256 characters
    dropout: float = 0.1

    def config(self, vocab_size: int, pad_id: int) -> Any:
        from transformers import BertConfig

        return BertConfig(
            vocab_size=vocab_size,
            hidden_size=self.hidden,
            num_hidden_layers=self.layers,
            num_attention_heads=self.heads,
            intermediate_size=self.intermediate,
            max_position_embeddings=self.max_positions,
            hidden_dropout_prob=self.dropout,
            attention_probs_dropout_prob=self.dropout,
            pad_token_id=pad_id,
        )

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def init_base(
    texts: Sequence[str], out: Path, *, shape: EncoderShape | None = None, seed: int = 42
) -> tuple[Any, Any]:
    """Tokenizer from ``texts`` and a seeded, untrained masked-LM BERT, saved into ``out``."""
    import torch
    from transformers import BertForMaskedLM

    shape = shape or EncoderShape()
    tok = vocab.build_tokenizer(texts)
    fast = vocab.save_pretrained(tok, out, shape.max_positions)
    torch.manual_seed(seed)
    model = BertForMaskedLM(shape.config(tok.get_vocab_size(), int(fast.pad_token_id)))
    model.save_pretrained(str(out))
    return model, fast

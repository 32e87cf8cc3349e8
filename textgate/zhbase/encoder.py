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

from textgate.errors import TrainError
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


def transplant(texts: Sequence[str], out: Path, body: Path, *, seed: int = 42) -> tuple[Any, Any]:
    """Tokenizer from ``texts`` and the pre-trained transformer of ``body`` under it.

    Every layer of ``body`` (an English BERT) is kept; only the token embeddings are new,
    one row per token of the Chinese vocabulary. A token ``body`` also knows (the specials,
    digits, Latin pieces, the few CJK characters of its vocabulary) keeps its vector; the
    rest are drawn from a normal with the English rows' mean and spread, so the first
    layer sees inputs on the scale it was trained on. Attention and feed-forward weights
    learnt on English carry over to characters (docs/sentiment-zh.md, candidate (c)).
    """
    import torch
    from transformers import AutoTokenizer, BertForMaskedLM, BertModel

    tok = vocab.build_tokenizer(texts)
    source = BertModel.from_pretrained(str(body))
    english = AutoTokenizer.from_pretrained(str(body)).get_vocab()
    config = source.config
    config.vocab_size = tok.get_vocab_size()
    config.pad_token_id = tok.token_to_id("[PAD]")
    fast = vocab.save_pretrained(tok, out, config.max_position_embeddings)
    torch.manual_seed(seed)
    model = BertForMaskedLM(config)
    weights = source.state_dict()
    known = weights.pop("embeddings.word_embeddings.weight")
    loaded = model.bert.load_state_dict(
        {k: v for k, v in weights.items() if not k.startswith("pooler.")}, strict=False
    )
    if loaded.missing_keys != ["embeddings.word_embeddings.weight"] or loaded.unexpected_keys:
        raise TrainError(
            f"'{body}' is not a BERT encoder of the shape it declares",
            hint=f"missing {loaded.missing_keys}, unexpected {loaded.unexpected_keys}",
        )
    rows = model.bert.embeddings.word_embeddings.weight.data
    rows.normal_(0.0, float(known.std())).add_(known.mean(0))
    for token, i in tok.get_vocab().items():
        j = english.get(token)
        if j is not None and token != "[UNK]":
            rows[i] = known[j]
    model.tie_weights()
    model.save_pretrained(str(out))
    return model, fast

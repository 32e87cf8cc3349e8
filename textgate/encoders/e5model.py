"""The package's dequantized tensors as a ``transformers`` BERT checkpoint.

multilingual-e5-small is a BERT (positions from 0, token type 0, exact-erf GELU) over the
XLM-R SentencePiece vocabulary; its pooled sentence vector is the mean over every token,
``<s>`` and ``</s>`` included. Torch and transformers are imported inside functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from textgate.encoders.e5file import E5File

_LAYER = {
    "attention.self.query": "q",
    "attention.self.key": "k",
    "attention.self.value": "v",
    "attention.output.dense": "ao",
    "intermediate.dense": "fi",
    "output.dense": "fo",
}
_NORMS = {"attention.output.LayerNorm": "aln", "output.LayerNorm": "oln"}


def config(f: E5File, vocab_size: int) -> Any:
    from transformers import BertConfig

    h = f.header
    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=h.hidden,
        num_hidden_layers=h.layers,
        num_attention_heads=h.heads,
        intermediate_size=h.intermediate,
        max_position_embeddings=h.max_positions,
        type_vocab_size=h.token_types,
        layer_norm_eps=h.eps,
        hidden_act="gelu",
        pad_token_id=f.vocab.pad,
        bos_token_id=f.vocab.bos,
        eos_token_id=f.vocab.eos,
    )


def state_dict(f: E5File, keep: Sequence[int]) -> dict[str, np.ndarray]:
    """BertModel's weights (no pooler: e5 pools by the mean), word rows ``keep``."""
    h = f.header.hidden
    word = f.matrix("emb.word", h)
    out = {
        "embeddings.word_embeddings.weight": word[np.asarray(keep)],
        "embeddings.position_embeddings.weight": f.matrix("emb.pos", h),
        "embeddings.token_type_embeddings.weight": f.matrix("emb.type", h),
        "embeddings.LayerNorm.weight": f.array("emb.ln.w"),
        "embeddings.LayerNorm.bias": f.array("emb.ln.b"),
    }
    for i in range(f.header.layers):
        for ours, theirs in _LAYER.items():
            bias = f.array(f"l{i}.{theirs}.b")
            out[f"encoder.layer.{i}.{ours}.weight"] = f.array(f"l{i}.{theirs}.w").reshape(
                bias.size, -1
            )
            out[f"encoder.layer.{i}.{ours}.bias"] = bias
        for ours, theirs in _NORMS.items():
            out[f"encoder.layer.{i}.{ours}.weight"] = f.array(f"l{i}.{theirs}.w")
            out[f"encoder.layer.{i}.{ours}.bias"] = f.array(f"l{i}.{theirs}.b")
    return out


def bert(f: E5File, keep: Sequence[int]) -> Any:
    """A ``BertModel`` holding the file's weights (rows ``keep`` of the vocabulary)."""
    import torch
    from transformers import BertModel

    model = BertModel(config(f, len(keep)), add_pooling_layer=False)
    weights = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state_dict(f, keep).items()}
    missing, unexpected = model.load_state_dict(weights, strict=False)
    # position_ids is a buffer transformers fills itself
    if unexpected or [m for m in missing if not m.endswith("position_ids")]:
        raise ValueError(f"weights do not fit BertModel: missing {missing}, extra {unexpected}")
    return model.eval()


def keep_rows(model: Any, keep: Sequence[int]) -> None:
    """Trim the word embedding to rows ``keep`` (new id i = old id ``keep[i]``)."""
    import torch

    old = model.get_input_embeddings().weight.data
    rows = torch.nn.Embedding(len(keep), old.shape[1], padding_idx=model.config.pad_token_id)
    rows.weight.data = old[torch.tensor(list(keep))].clone()
    model.set_input_embeddings(rows)
    model.config.vocab_size = len(keep)


def mean_pooled(model: Any, ids: Sequence[Sequence[int]], pad_id: int) -> np.ndarray:
    """e5's sentence vectors (mean over all tokens, L2-normalized) for token id rows."""
    import torch

    width = max(len(r) for r in ids)
    x = torch.tensor([list(r) + [pad_id] * (width - len(r)) for r in ids])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in ids])
    with torch.no_grad():
        hidden = model(input_ids=x, attention_mask=mask).last_hidden_state
    m = mask.unsqueeze(-1).float()
    pooled = (hidden * m).sum(1) / m.sum(1)
    return torch.nn.functional.normalize(pooled, dim=-1).numpy()


def write(model: Any, out: Path) -> None:
    model.save_pretrained(str(out))

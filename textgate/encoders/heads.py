"""Classifier heads: which summary of the encoder's tokens the classifier reads.

    cls   transformers' own sequence classifier: BERT's pooler (dense + tanh) over the first
          token (<s> / [CLS]) — what every model here had before
    mean  the mean of the last hidden states over the real (unmasked) tokens, e5's own
          pooling (its embeddings were trained that way), then the same dropout and linear
          classifier; BERT-shaped bases only

The choice is stored in the checkpoint's config.json (``textgate_pooling``) and every loader
here goes through ``classifier_class``: transformers' Auto classes ignore the key and would
read the first token, a silently different model. Training, the ONNX export and the parity
check therefore run one head.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

POOLINGS = ("cls", "mean")
CONFIG_KEY = "textgate_pooling"


def stored_pooling(checkpoint: Path | str) -> str:
    """The head a saved checkpoint was trained with ("cls" when config.json names none)."""
    try:
        config = json.loads((Path(checkpoint) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "cls"  # the loader itself reports a missing or broken config
    value = config.get(CONFIG_KEY, "cls") if isinstance(config, dict) else "cls"
    return str(value)


def classifier_class(pooling: str) -> Any:
    """The transformers class to ``from_pretrained`` a classifier with this head."""
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
    if pooling == "mean":
        return _mean_pooled()
    from transformers import AutoModelForSequenceClassification

    return AutoModelForSequenceClassification


def mark(model: Any, pooling: str) -> Any:
    """Record the head in the model's config, so save_pretrained writes it."""
    if pooling != "cls":
        setattr(model.config, CONFIG_KEY, pooling)
    return model


@functools.cache
def _mean_pooled() -> Any:
    import torch
    from transformers import BertForSequenceClassification
    from transformers.modeling_outputs import SequenceClassifierOutput

    class MeanPooledBert(BertForSequenceClassification):  # type: ignore[misc]
        """BERT's classifier over the masked mean of the last hidden states."""

        def forward(  # type: ignore[override]
            self,
            input_ids: Any = None,
            attention_mask: Any = None,
            token_type_ids: Any = None,
            **_: Any,
        ) -> Any:
            out = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            hidden = out.last_hidden_state
            if attention_mask is None:
                mask = torch.ones_like(hidden[..., :1])
            else:
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
            return SequenceClassifierOutput(logits=self.classifier(self.dropout(pooled)))

    return MeanPooledBert

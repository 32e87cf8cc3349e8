"""The base model of ``sentiment-zh``: a character BERT built and pre-trained offline.

    train-split reviews + People's Daily sentences ─ charvocab ─ tokenizer
                                                  └ EncoderShape ─ seeded BERT
                                                  └ pretrain (MLM, time budget) ─ base dir

Only the train split is read (test and validation texts never shape the vocabulary or the
pre-training), so the test split's [UNK] rate is an honest one. The shape and the
fine-tuning settings were chosen on the validation split (``docs/sentiment-zh.md``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from textgate import data, encoder, unlabelled
from textgate.pretrain import PretrainOptions, pretrain
from textgate.width import fold_width

SHAPE = encoder.EncoderShape(layers=3, hidden=256, heads=4, intermediate=768)
# From scratch the encoder needs a larger step than a pre-trained one (5e-5 leaves it
# near chance after an epoch); 3e-4 with 10 % warm-up trained stably in both candidates.
FINE_TUNE: dict[str, Any] = {"epochs": 3, "lr": 3e-4, "max_length": 128, "batch_size": 32}
PRETRAIN = PretrainOptions(minutes=12.0)
BASE_INFO = "textgate-base.json"


def normalize(text: str) -> str:
    return data.normalize(fold_width(text))


def corpus(train_texts: Sequence[str]) -> list[str]:
    """Unlabelled text for the vocabulary and for pre-training: the newspaper, then reviews."""
    return unlabelled.peoples_daily(normalize) + list(train_texts)


def make_base(
    train: data.Table,
    out: Path,
    *,
    pretrain_options: PretrainOptions | None = PRETRAIN,
    shape: encoder.EncoderShape = SHAPE,
    seed: int = 42,
    log: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    """Write the base checkpoint into ``out``; ``pretrain_options=None`` leaves it untrained."""
    texts = corpus(train.texts)
    t0 = time.monotonic()
    model, tok = encoder.init_base(texts, out, shape=shape, seed=seed)
    log(f"tokenizer: {len(tok):,} tokens from {len(texts):,} texts")
    info: dict[str, Any] = {
        "shape": shape.as_dict(),
        "vocab_size": len(tok),
        "corpus_texts": len(texts),
        "seed": seed,
        "pretrain": None,
    }
    if pretrain_options is not None:
        report = pretrain(model, tok, texts, out, pretrain_options, log=log)
        info["pretrain"] = {**asdict(pretrain_options), **report}
    info["seconds"] = round(time.monotonic() - t0, 1)
    (out / BASE_INFO).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info

"""Chinese sentiment, candidate (c): the packaged English MiniLM's layers under a new
character embedding, fine-tuned on the reviews, alone and joined with the n-gram half.

    python benchmarks/sentiment_zh_transplant.py run [--minutes 45] [--work DIR]
    python benchmarks/sentiment_zh_transplant.py join --checkpoint DIR

``run`` builds the base (``zhbase.make_base(body=...)``: the build's tokenizer, MiniLM's six
layers, known tokens' vectors copied), fine-tunes it (3 epochs, lr 2e-4, batch 32,
max_length 128) and then does what ``join`` does: scores validation and test with the
checkpoint and with the served n-gram recipe fitted on the train split, and joins them at
each weight as Triton's postprocess step does (``ngrams.adjust``). The weight is chosen on
validation only. Writes ``benchmarks/results/sentiment_zh_transplant.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sentiment_zh import (  # benchmarks/ is on sys.path when run as a script
    THREADS,
    _torch_rate,
    _unk,
    _write,
    splits,
)

from textgate import data, ngrams

FINE_TUNE: dict[str, Any] = {"epochs": 3, "lr": 2e-4, "max_length": 128, "batch_size": 32}
WEIGHTS = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def run(minutes: float, work: Path) -> None:
    import torch

    from textgate import zhbase
    from textgate.train import TrainOptions, resolve_base, train

    torch.set_num_threads(THREADS)
    s = splits()
    body, body_name = resolve_base(None)
    t0 = time.monotonic()
    zhbase.make_base(s.train, work / "base", body=body, body_name=body_name, log=print)
    opts = TrainOptions(**FINE_TUNE, max_minutes=minutes, patience=3, ngrams=False, force=True)
    train(s, work / "base", work / "checkpoint", task="sentiment-zh", options=opts, log=print)
    join(work / "checkpoint", s, minutes=(time.monotonic() - t0) / 60)


def join(ckpt: Path, s: data.Splits, minutes: float | None = None) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification

    from textgate.train import ngram
    from textgate.train.base import encode, load_tokenizer
    from textgate.train.loop import predict
    from textgate.train.options import TASK_DEFAULTS

    torch.set_num_threads(THREADS)
    recipe = TASK_DEFAULTS["sentiment-zh"].ngram_recipe
    positive = np.array(s.train.label_ids()) != 0
    lexical, _ = ngram.fit(list(s.train.texts), positive, negative=0, recipe=recipe)
    tok = load_tokenizer(ckpt)
    model = AutoModelForSequenceClassification.from_pretrained(str(ckpt))
    info = json.loads((ckpt / "textgate.json").read_text())
    accuracy: dict[str, dict[str, float]] = {}
    correlation = {}
    for name in ("validation", "test"):
        part = getattr(s, name)
        y = np.array(part.label_ids())
        probs = predict(model, encode(tok, list(part.texts), FINE_TUNE["max_length"]), 0)
        logits = np.log(np.clip(probs, 1e-12, 1.0))
        z = lexical.scores(list(part.texts))
        joined = {w: ngrams.adjust(logits, z, 0, w).argmax(1) for w in WEIGHTS}
        accuracy[name] = {str(w): round(float((p == y).mean()), 4) for w, p in joined.items()}
        correlation[name] = round(float(np.corrcoef(logits[:, 1] - logits[:, 0], z)[0, 1]), 3)
        print(name, accuracy[name], "correlation", correlation[name], flush=True)
    _write(
        "transplant",
        {
            "name": "MiniLM's 6 x 384 layers, new character embedding",
            "fine_tune": {**FINE_TUNE, "history": info["history"], "stopped": info["stopped"]},
            "accuracy_by_ngram_weight": accuracy,
            "log_odds_correlation": correlation,
            "train_minutes": None if minutes is None else round(minutes, 1),
            "texts_per_s": _torch_rate(ckpt, list(s.test.texts)),
            "model_mb": round((ckpt / "model.safetensors").stat().st_size / 1e6, 1),
            "unk_ratio_test": round(_unk(ckpt, list(s.test.texts)), 5),
        },
    )


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--minutes", type=float, default=45.0)
    r.add_argument(
        "--work", type=Path, default=Path.home() / ".cache" / "textgate" / "bench-zh" / "transplant"
    )
    j = sub.add_parser("join")
    j.add_argument("--checkpoint", type=Path, required=True)
    args = p.parse_args(argv)
    if args.cmd == "run":
        run(args.minutes, args.work)
    else:
        join(args.checkpoint, splits())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Chinese sentiment: what reading a long review's tail (``textgate.window``) is worth.

    python benchmarks/studies/archive/sentiment_zh_window.py score --checkpoint DIR \
        --label NAME [--tails 0,64]

Scores a ``sentiment-zh`` checkpoint on the build's validation and test splits, with each
window given in ``--tails`` (0: the head only; the checkpoint's own, from its textgate.json,
when omitted): the transformer alone and joined with the n-gram half at the served weight
(the checkpoint's ``ngrams.npz``, as Triton's postprocess step joins it), on every review
and on those longer than the window. Each checkpoint's rows go to
``benchmarks/results/sentiment_zh_window.json`` under ``--label``; choose on validation.

The two checkpoints of docs/sentiment-zh.md ("Long reviews") are ``textgate build
sentiment-zh``'s (tail 64) and the same recipe with the head only: ``textgate train --task
sentiment-zh --base BASE --tail-tokens 0 -o DIR``, BASE being the build's cached
``base-zh-<key>``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from textgate import data, ngrams, window

RESULTS = Path(__file__).resolve().parents[2] / "results" / "sentiment_zh_window.json"
THREADS = 2  # the cores of the box it was measured on (sentiment_zh.py's THREADS)


def score(ckpt: Path, label: str, tails: list[int] | None) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForSequenceClassification

    from textgate.train.base import load_tokenizer
    from textgate.train.loop import predict
    from textgate.train.options import TASK_DEFAULTS

    torch.set_num_threads(THREADS)
    info = json.loads((ckpt / "textgate.json").read_text())
    max_length, trained_tail = int(info["max_length"]), int(info.get("tail_tokens", 0))
    weight = TASK_DEFAULTS["sentiment-zh"].ngram_recipe.weight
    lexical = ngrams.NgramModel.load(ckpt / "ngrams.npz")
    tok = load_tokenizer(ckpt)
    model = AutoModelForSequenceClassification.from_pretrained(str(ckpt)).eval()
    s = data.split(data.load_task("sentiment-zh"))  # the build's table and split
    rows: dict[str, Any] = {}
    for tail in tails if tails is not None else [trained_tail]:
        for name in ("validation", "test"):
            part = getattr(s, name)
            texts, y = list(part.texts), np.array(part.label_ids())
            long = np.array([len(ids) > max_length for ids in tok(texts)["input_ids"]])
            probs = predict(model, window.hf_ids(tok, texts, max_length, tail), tok.pad_token_id)
            logits = np.log(np.clip(probs, 1e-12, 1.0))
            joined = ngrams.adjust(logits, lexical.scores(texts), 0, weight)
            row = {
                "n": len(y),
                "long": int(long.sum()),
                "transformer": _acc(probs, y, long),
                f"joined_{weight}": _acc(joined, y, long),
            }
            rows[f"tail {tail}/{name}"] = row
            print(label, f"tail {tail}", name, row, flush=True)
    result = {
        "checkpoint": str(ckpt),
        "trained_tail": trained_tail,
        "max_length": max_length,
        "history": info.get("history"),
        "rows": rows,
    }
    _write(label, result)
    return result


def _acc(scores: np.ndarray, y: np.ndarray, long: np.ndarray) -> dict[str, float]:
    hit = scores.argmax(1) == y
    return {"all": round(float(hit.mean()), 4), "long": round(float(hit[long].mean()), 4)}


def _write(label: str, result: dict[str, Any]) -> None:
    old = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    RESULTS.write_text(json.dumps({**old, label: result}, indent=2) + "\n")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    sc = sub.add_parser("score")
    sc.add_argument("--checkpoint", type=Path, required=True)
    sc.add_argument("--label", required=True)
    sc.add_argument("--tails", help="comma-separated windows to score (default: the trained one)")
    args = p.parse_args(argv)
    tails = [int(t) for t in args.tails.split(",")] if args.tails else None
    score(args.checkpoint, args.label, tails)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Chinese sentiment: candidate encoders against two anchors, on one test split.

    python benchmarks/sentiment_zh.py all            # anchors, both candidates, report
    python benchmarks/sentiment_zh.py anchors        # snownlp's Bayes model, char TF-IDF + LR
    python benchmarks/sentiment_zh.py candidate scratch|mlm [--minutes M] [--pretrain-minutes P]
    python benchmarks/sentiment_zh.py served --bundle DIR   # the built bundle's ONNX variants
    python benchmarks/sentiment_zh.py report         # table (markdown) + PNG from the JSON

Every system sees the same normalized, de-duplicated reviews and the same content-hash
split as ``textgate build sentiment-zh``. Candidates are compared on the validation split
(the choice) and reported on the test split. Results go to
``benchmarks/results/sentiment_zh_<name>.json``; ``report`` joins them into
``sentiment_zh.json`` and ``sentiment_zh.png``. snownlp is a ``dev`` extra, used here only.
Texts/s are single-process on this shared 2-core machine: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from textgate import data, metrics
from textgate.width import fold_width

RESULTS = Path(__file__).parent / "results"
LABELS = data.TASK_LABELS["sentiment-zh"]
THREADS = 2


def splits() -> data.Splits:
    """The build's table: folding is idempotent, so this equals the build's whether or not
    the loader folds already."""
    table = data.load_task("sentiment-zh")
    rows = [
        (i + 1, fold_width(t), lab)
        for i, (t, lab) in enumerate(zip(table.texts, table.labels, strict=True))
    ]
    return data.split(data.build_table(rows, source=table.source, labels=LABELS))


def _report(y: list[int], probs: np.ndarray) -> dict[str, float]:
    rep = metrics.classification_report(y, probs, list(LABELS))
    return {"accuracy": round(rep["accuracy"], 4), "macro_f1": round(rep["macro_f1"], 4)}


def _write(name: str, result: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"sentiment_zh_{name}.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")


# --- anchors ---------------------------------------------------------------------------------


def anchors() -> None:
    s = splits()
    _write("tfidf", tfidf(s))
    _write("snownlp", snownlp_bayes(s))


def tfidf(s: data.Splits) -> dict[str, Any]:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    t0 = time.monotonic()
    pipe = make_pipeline(
        TfidfVectorizer(analyzer="char", ngram_range=(1, 3), sublinear_tf=True, min_df=2),
        LogisticRegression(C=4.0, max_iter=2000),
    )
    pipe.fit(list(s.train.texts), s.train.label_ids())
    minutes = (time.monotonic() - t0) / 60
    out: dict[str, Any] = {"name": "char 1-3-gram TF-IDF + LR", "train_minutes": round(minutes, 2)}
    for part in ("validation", "test"):
        table = getattr(s, part)
        t1 = time.monotonic()
        probs = pipe.predict_proba(list(table.texts))
        rate = len(table) / (time.monotonic() - t1)
        out[part] = _report(table.label_ids(), probs)
    out["texts_per_s"] = round(rate)
    out["model_mb"] = round(len(_pickled(pipe)) / 1e6, 1)
    return out


def _pickled(obj: Any) -> bytes:
    import pickle

    return pickle.dumps(obj)


def snownlp_bayes(s: data.Splits) -> dict[str, Any]:
    """snownlp's packaged naive Bayes, trained on these very reviews: an optimistic anchor."""
    from snownlp import SnowNLP

    out: dict[str, Any] = {"name": "snownlp 0.12.3 naive Bayes (trained on all reviews)"}
    for part in ("validation", "test"):
        table = getattr(s, part)
        t1 = time.monotonic()
        pos = np.array([SnowNLP(t).sentiments for t in table.texts])
        rate = len(table) / (time.monotonic() - t1)
        out[part] = _report(table.label_ids(), np.stack([1 - pos, pos], axis=1))
    out["texts_per_s"] = round(rate)
    out["train_minutes"] = None
    return out


# --- candidates --------------------------------------------------------------------------------


def candidate(name: str, minutes: float, pretrain_minutes: float, work: Path) -> None:
    import torch

    from textgate import zhbase
    from textgate.pretrain import PretrainOptions
    from textgate.train import TrainOptions, train

    torch.set_num_threads(THREADS // 2)  # the two candidates run side by side
    s = splits()
    base = work / name / "base"
    ckpt = work / name / "checkpoint"
    t0 = time.monotonic()
    pre = PretrainOptions(minutes=pretrain_minutes) if pretrain_minutes else None
    info = zhbase.make_base(s.train, base, pretrain_options=pre, log=print)
    base_minutes = (time.monotonic() - t0) / 60
    opts = TrainOptions(**zhbase.FINE_TUNE, max_minutes=minutes, force=True)
    t1 = time.monotonic()
    test = train(s, base, ckpt, task="sentiment-zh", options=opts, log=print)
    train_minutes = (time.monotonic() - t1) / 60
    textgate_json = json.loads((ckpt / "textgate.json").read_text())
    history = textgate_json["history"]
    best = max(history, key=lambda r: r["val_macro_f1"])
    rate = _torch_rate(ckpt, list(s.test.texts))
    _write(
        name,
        {
            "name": f"char BERT {zhbase.SHAPE.layers}x{zhbase.SHAPE.hidden}"
            + (f", MLM {pretrain_minutes:g} min" if pretrain_minutes else ", from scratch"),
            "validation": {"macro_f1": best["val_macro_f1"]},
            "test": {
                "accuracy": round(test["accuracy"], 4),
                "macro_f1": round(test["macro_f1"], 4),
            },
            "train_minutes": round(train_minutes + base_minutes, 1),
            "pretrain": info.get("pretrain"),
            "fine_tune": {"history": history, "stopped": textgate_json["stopped"]},
            "texts_per_s": rate,
            "model_mb": round((ckpt / "model.safetensors").stat().st_size / 1e6, 1),
            "unk_ratio_test": round(_unk(ckpt, list(s.test.texts)), 5),
        },
    )


def _unk(ckpt: Path, texts: list[str]) -> float:
    from tokenizers import Tokenizer

    from textgate.export.coverage import unk_ratio

    return unk_ratio(Tokenizer.from_file(str(ckpt / "tokenizer.json")), texts)[0]


def _torch_rate(ckpt: Path, texts: list[str]) -> int:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(ckpt))
    model = AutoModelForSequenceClassification.from_pretrained(str(ckpt)).eval()
    texts = sorted(texts, key=len)
    t0 = time.monotonic()
    with torch.inference_mode():
        for i in range(0, len(texts), 32):
            enc = tok(
                texts[i : i + 32],
                truncation=True,
                max_length=128,
                padding=True,
                return_tensors="pt",
            )
            model(**enc)
    return round(len(texts) / (time.monotonic() - t0))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("anchors")
    c = sub.add_parser("candidate")
    c.add_argument("name", choices=("scratch", "mlm"))
    c.add_argument("--minutes", type=float, default=12.0)
    c.add_argument("--pretrain-minutes", type=float, default=None)
    c.add_argument("--work", type=Path, default=Path.home() / ".cache" / "textgate" / "bench-zh")
    args = p.parse_args(argv)
    if args.cmd == "anchors":
        anchors()
    elif args.cmd == "candidate":
        pre = (
            args.pretrain_minutes
            if args.pretrain_minutes is not None
            else (12.0 if args.name == "mlm" else 0.0)
        )
        candidate(args.name, args.minutes, pre, args.work)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

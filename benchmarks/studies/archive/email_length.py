"""How much of a long mail should the model read? max_length and head+tail vs chunking.

For a trained e-mail bundle, score the test split's raw messages under several readings and
report the filter's F1, the false-positive rate on ham at 0.5 and at the quarantine threshold,
and texts/s of the served variant (ONNX Runtime, length-sorted batches of 8, this machine):

- head + tail at 128 / 256 / 384 tokens (head 3/4, tail 1/4 of ~4 characters a token);
- overlapping 512-character chunks at 128 tokens, the message's score the max over chunks.

The model was trained at one reading (the bundle's); the others are applied at inference, so
this measures what the serving-time choice costs or gains for that model, not retraining.

    python benchmarks/studies/archive/email_length.py --bundle artifacts/spam [--limit 800]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from textgate import bundle, data, mail
from textgate.errors import InputError
from textgate.export import calibration, inference
from textgate.normalize import NormalizeSettings, normalize_email

READINGS = {
    "head+tail 128": (128, NormalizeSettings()),
    "head+tail 256": (256, NormalizeSettings(head_chars=768, tail_chars=256)),
    "head+tail 384": (384, NormalizeSettings(head_chars=1152, tail_chars=384)),
    "chunks 128 (max)": (128, NormalizeSettings(long_text="chunk", chunk_chars=512, max_chunks=8)),
}


def test_messages(limit: int) -> list[tuple[bytes, str, bool]]:
    """Raw test-split messages (the split of the default reading) with "not ham"."""
    table = data.load_task("spam")
    test = set(data.split(table).test.texts)
    out = []
    for item in mail.iter_email_corpus():
        try:
            text = mail.scrub(mail.model_text(item.raw, NormalizeSettings()), item.name)
        except InputError:
            continue
        if text in test:
            out.append((item.raw, item.name, item.label != "ham"))
    rng = np.random.default_rng(0)
    keep = sorted(rng.permutation(len(out))[:limit])
    return [out[i] for i in keep]


def score(session: Any, tok: Any, pieces: list[str], length: int) -> tuple[np.ndarray, float]:
    tok.enable_truncation(length)
    order = np.argsort([len(p) for p in pieces])
    t0 = time.perf_counter()
    chunks = [[pieces[i] for i in order[s : s + 8]] for s in range(0, len(order), 8)]
    out = [inference.predict(session, list(inference.encode(tok, c))) for c in chunks]
    seconds = time.perf_counter() - t0
    probs = np.concatenate(out)[np.argsort(order)]
    return probs, len(pieces) / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", type=Path, required=True)
    ap.add_argument("--limit", type=int, default=800, help="test messages scored per reading")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/email_length.json"))
    args = ap.parse_args()
    manifest = bundle.verify(args.bundle)
    labels = tuple(manifest["labels"])
    t = float((manifest.get("calibration") or {}).get("temperature") or 1.0)
    variant = manifest["default_variant"]["cpu"]
    session = inference.session(args.bundle / manifest["variants"][variant]["file"])
    tok = inference.load_tokenizer(args.bundle / "tokenizer.json")
    messages = test_messages(args.limit)
    y = np.array([p for _, _, p in messages])
    rows = []
    for name, (length, settings) in READINGS.items():
        pieces, owner = [], []
        for i, (raw, name_, _) in enumerate(messages):
            for piece in normalize_email(raw, settings).pieces:
                pieces.append(mail.scrub(piece, name_))  # as the training data was
                owner.append(i)
        probs, rate = score(session, tok, pieces, length)
        s = 1.0 - calibration.apply(probs, t)[:, labels.index("ham")]
        per_msg = np.zeros(len(messages))
        np.maximum.at(per_msg, np.array(owner), s)
        pred = per_msg >= 0.5
        tp = (pred & y).sum()
        f1 = 2 * tp / (pred.sum() + y.sum())
        rows.append(
            {
                "reading": name,
                "f1": round(float(f1), 4),
                "fpr@0.5": round(float(pred[~y].mean()), 4),
                "fpr@0.95": round(float((per_msg[~y] >= 0.95).mean()), 4),
                "pieces_per_message": round(len(pieces) / len(messages), 2),
                "texts_per_s": round(rate / (len(pieces) / len(messages)), 1),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {"bundle_variant": variant, "n": len(messages), "rows": rows}
    args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""What the combiner's inputs cost per message: the structure symbols (inside normalization),
the combiner's arithmetic, against what the message costs as a whole (normalization and the
bundle's served ONNX model on its text), on real corpus mail, in one run.

    python benchmarks/studies/email/signals_cost.py --bundle artifacts/spam [--n 1000] \
        [--out FILE.json]

Issue 38's bound: symbols + combiner at most 5 % of a message's CPU. CPU time of this process
(``time.process_time``, every thread of it), so the ratio does not depend on how
busy the other core is.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from email.parser import BytesParser
from email.policy import default
from pathlib import Path
from typing import Any

import numpy as np

from textgate import bundle, mail, signals
from textgate.export import inference
from textgate.normalize import NormalizeSettings, normalize_email
from textgate.signals.combiner import Combiner


def _cpu(fn: Any, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, required=True)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    # every n-th message of the corpus: all sources, not the first archive's
    items = list(itertools.islice(mail.iter_email_corpus(), 0, None, 18))[: args.n]
    raws = [it.raw for it in items]
    settings = NormalizeSettings()
    norm = [normalize_email(r, settings) for r in raws]
    parsed = [BytesParser(policy=default).parsebytes(r) for r in raws]

    def symbols_only() -> None:
        for msg, n in zip(parsed, norm, strict=True):
            signals.from_message(
                msg,
                html=n.notes.html_converted,
                text_chars=len(n.text),
                hidden_chars=n.notes.hidden_chars,
                link_domains=n.notes.link_domains,
                defects=n.notes.defects,
            )

    manifest = bundle.read_manifest(args.bundle)
    comb = Combiner.load(args.bundle / manifest["combiner"]["file"])
    fired = [n.notes.symbols for n in norm]
    content, lexical = np.zeros(len(norm)), np.zeros(len(norm))
    variant = manifest["default_variant"]["cpu"]
    onnx_file = manifest["variants"][variant]["file"]
    tok = inference.load_tokenizer(args.bundle / "tokenizer.json", int(manifest["max_length"]))
    sess = inference.session(args.bundle / onnx_file)
    texts = [n.pieces[0] for n in norm]

    def model() -> None:
        batches, _ = inference.by_length(tok, texts)
        inference.predict(sess, batches)

    seconds = {
        "normalize (symbols included)": _cpu(lambda: [normalize_email(r, settings) for r in raws]),
        "symbols alone": _cpu(symbols_only),
        "combiner z": _cpu(lambda: comb.z(content, lexical, fired)),
        f"model ({variant}, length-sorted batches)": _cpu(model, rounds=1),
    }
    per_msg_ms = {k: round(1000 * v / len(raws), 4) for k, v in seconds.items()}
    whole = seconds["normalize (symbols included)"] + list(seconds.values())[3]
    share = (seconds["symbols alone"] + seconds["combiner z"]) / whole
    report = {
        "messages": len(raws),
        "per_message_ms": per_msg_ms,
        "symbols_and_combiner_share_of_message_cpu": round(share, 4),
        "bound": 0.05,
    }
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

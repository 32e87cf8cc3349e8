"""The e-mail build's test-split targets over several seeds, from the bundles' manifests.

    textgate build spam -o DIR_N --seed N            # one bundle per seed
    python benchmarks/studies/email/email_builds.py DIR_42[,CKPT_42] DIR_1[,CKPT_1] ... [--out FILE]

A bundle's manifest holds the test split's operating metrics (spam + phish vs ham at 0.5,
ham quarantined and at review, phishing caught at review), the calibration and the int8
gate. ``CKPT`` (optional) is the checkpoint the build trained, printed by ``textgate build``
("training spam (key …) into …/checkpoint"): it adds the seed's training history. One seed
is one draw (docs/email-model.md); the targets are judged on the mean.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

KEYS = (
    "f1_not_ham",
    "ham_quarantined",
    "ham_at_review",
    "phish_caught_at_review",
    "top_label_ece",
)


def one(spec: str) -> dict[str, Any]:
    bundle, _, ckpt = spec.partition(",")
    man = json.loads((Path(bundle) / "manifest.json").read_text())
    op = man["metrics"]["operating"]
    row: dict[str, Any] = {
        "test_n": op["n"],
        "f1_not_ham": op["not_ham"]["f1"],
        "precision": op["not_ham"]["precision"],
        "recall": op["not_ham"]["recall"],
        "roc_auc": op["not_ham"]["roc_auc"],
        "ham_quarantined": op["ham_fpr_at_quarantine"],
        "ham_at_review": op["ham_fpr_at_review"],
        "phish_caught_at_review": op["phish_recall_at_review"],
        "top_label_ece": man["calibration"]["ece_after"],
        "int8": {
            "status": man["variants"]["int8"]["status"],
            "agreement": round(man["variants"]["int8"]["agreement"], 4),
        },
        "normalizer": man["normalization"]["version"],
    }
    if ckpt:
        meta = json.loads((Path(ckpt) / "textgate.json").read_text())
        row = {"seed": meta["seed"], "train_seconds": meta["train_seconds"], **row}
        row["history"] = meta["history"]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", help="BUNDLE_DIR[,CHECKPOINT_DIR]")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = [one(spec) for spec in args.builds]
    mean = {k: round(float(np.mean([r[k] for r in rows])), 5) for k in KEYS}
    for r in rows:
        print(r.get("seed", "?"), {k: r[k] for k in KEYS}, r["int8"]["status"])
    print("mean", mean)
    if args.out:
        report = {"builds": rows, "mean": mean}
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

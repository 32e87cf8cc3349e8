"""A person's reading of a spam bundle on hand-written probes: modern legitimate mail the
corpus lacks, and phishing written the way it is sent today.

    python benchmarks/email_probes.py --bundle artifacts/spam [--json out.json]

Prints P(not ham) and P(phish) of the transformer alone, of the n-gram half alone and of the
joined model the bundle serves (temperature applied), and the action the default policy
takes. The probes were written for this script; the "kind" column says whether
``textgate.mail.modern`` or ``textgate.mail.bulk`` generates mail of that kind for training
(then the probe is not an independent test, only a check that the generated rows took), or
not.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from textgate import bundle, ngrams
from textgate.export import calibration, inference, quality

# (text, truth, "generated kind" | "unseen kind")
PROBES = [
    ("Your Amazon order #123-456 has shipped", "ham", "generated kind"),
    ("Your order #4411 has been delivered. Thanks for shopping with us.", "ham", "generated kind"),
    (
        "Your GitHub password was changed. If you did this, you can safely disregard this email.",
        "ham",
        "generated kind",
    ),
    (
        "Weekly newsletter: 5 articles we think you'll like this week. Unsubscribe at any time.",
        "ham",
        "generated kind",
    ),
    (
        "Your electricity bill for November is ready. Amount due EUR 61.20, collected by direct "
        "debit on 12 December. No action is needed.",
        "ham",
        "unseen kind",
    ),
    (
        "Reminder: your dentist appointment is tomorrow at 9:30. Reply C to confirm or call us to "
        "reschedule.",
        "ham",
        "unseen kind",
    ),
    (
        "Thanks for registering for PyCon. Your ticket and the schedule are attached; see you in "
        "Pittsburgh!",
        "ham",
        "unseen kind",
    ),
    (
        "Hi all, the minutes of yesterday's meeting are in the shared folder. Let me know if I "
        "missed anything.",
        "ham",
        "unseen kind",
    ),
    (
        "Re: [python-dev] PEP 8 question - I think the second form is clearer, see the thread "
        "from last week.",
        "ham",
        "unseen kind",
    ),
    (
        "Your account has been suspended. Verify your identity now to restore access: "
        "http://secure-login-verify.example.com",
        "phish",
        "unseen kind",
    ),
    (
        "Your package could not be delivered. Pay the $1.99 redelivery fee here: "
        "http://dhl-redelivery.top/pay",
        "phish",
        "unseen kind",
    ),
    (
        "Unusual sign-in activity on your Microsoft account. Confirm your password within 24 hours "
        "or your mailbox will be closed: http://microsoft-verify.online",
        "phish",
        "unseen kind",
    ),
    (
        "Your mailbox is full. Click here to upgrade your storage or lose incoming messages: "
        "http://webmail-upgrade.xyz",
        "phish",
        "unseen kind",
    ),
    (
        "URGENT: you have WON a cash prize of $1,000,000! Reply with your bank details to claim.",
        "spam",
        "unseen kind",
    ),
    # Subscribed bulk mail (``textgate.mail.bulk`` generates its kinds) and the bulk spam it
    # must not let through: promotions and stock tips that nobody subscribed to.
    (
        "Your weekend forecast for Galway: showers on Saturday, sunny spells on Sunday, highs of "
        "14°C. Manage your alerts in the app.",
        "ham",
        "generated kind",
    ),
    (
        "Members' week at the garden centre: 20% off bulbs and perennials until Sunday. You are "
        "receiving this because you joined our loyalty club. Unsubscribe.",
        "ham",
        "generated kind",
    ),
    (
        "Hot stock alert! GRNX is about to explode, up 300% this week. Buy before Monday's "
        "announcement!",
        "spam",
        "unseen kind",
    ),
    (
        "Cheap Viagra, Cialis and more, no prescription needed, discreet worldwide shipping. "
        "Order now and save 80%.",
        "spam",
        "unseen kind",
    ),
    (
        "Replica watches from $49: Rolex, Omega, Breitling. Limited time offer, click here to "
        "shop. To be removed from our list reply REMOVE.",
        "spam",
        "unseen kind",
    ),
]


def action(score: float, phish: float) -> str:
    # The default spam policy (docs/email-model.md): the stricter of the two rules wins.
    if score >= 0.95 or phish >= 0.85:
        return "quarantine"
    if score >= 0.85 or phish >= 0.5:
        return "review"
    return "allow"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", type=Path, required=True)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    manifest = bundle.verify(args.bundle)
    labels = list(manifest["labels"])
    ham, phish = labels.index("ham"), labels.index("phish")
    temperature = float((manifest.get("calibration") or {}).get("temperature") or 1.0)
    texts = [t for t, _, _ in PROBES]
    tok = inference.load_tokenizer(args.bundle / "tokenizer.json")
    tok.enable_truncation(int(manifest["max_length"]))
    raw = inference.predict(
        inference.session(args.bundle / "model.onnx"), list(inference.encode(tok, texts))
    )
    alone = calibration.apply(raw, temperature)
    rows = []
    ngrams_file = (manifest.get("ngrams") or {}).get("file")
    lexical = ngrams.NgramModel.load(args.bundle / ngrams_file) if ngrams_file else None
    served = (
        calibration.apply(quality.joined(raw, lexical, tuple(texts)), temperature)
        if (lexical)
        else alone
    )
    z = lexical.scores(texts) if lexical else np.full(len(texts), np.nan)
    print("| probe | truth | kind | transformer | n-grams | served | P(phish) | action |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    for i, (text, truth, kind) in enumerate(PROBES):
        row = {
            "text": text,
            "truth": truth,
            "kind": kind,
            "transformer": round(float(1 - alone[i, ham]), 3),
            "ngrams": round(float(1 / (1 + np.exp(-z[i]))), 3) if lexical else None,
            "served": round(float(1 - served[i, ham]), 3),
            "phish": round(float(served[i, phish]), 3),
        }
        row["action"] = action(row["served"], row["phish"])
        rows.append(row)
        short = text if len(text) <= 60 else text[:57] + "..."
        print(
            f"| {short} | {truth} | {kind} | {row['transformer']:.3f} | {row['ngrams']} | "
            f"{row['served']:.3f} | {row['phish']:.3f} | {row['action']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

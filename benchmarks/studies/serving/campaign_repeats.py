"""How often does mail repeat, exactly or nearly, and would a near-duplicate key answer wrongly?

    python benchmarks/studies/serving/campaign_repeats.py [--orders 5] [--out FILE]

Issue 42 asks two things of the packaged e-mail corpus before campaign memory is sized or a
near-duplicate key is turned on: the share of messages whose body was seen before (the
repeat share a realistic mail workload should carry), and, for a near-duplicate key, its hit
rate against how often the earlier message it would answer from has the other label (spam
or phish vs ham: the wrong-verdict rate if the remembered answer were right for the earlier
one). Real source groups only: the generated training mail repeats by construction.

Rows are the corpus as read (``mail.corpus_rows``: the model's text of every message, before
the table's de-duplication). Exact repeats: the same normalized text. Near repeats: a 64-bit
SimHash over word 3-shingles, within Hamming distance k of an earlier message's (found with
eight 8-bit bands, so every pair within 7 is a candidate), for texts of at least
``MIN_WORDS`` words (a short text's SimHash is too coarse to trust). "Earlier" is a seeded
random arrival order, ``--orders`` of them; the near shares are their mean.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from textgate import mail
from textgate.data.table import normalize
from textgate.normalize import NormalizeSettings

MIN_WORDS = 20
DISTANCES = (0, 1, 3, 6)  # 0: the same SimHash without the same text
BANDS, BAND_BITS = 8, 8
OUT = Path("benchmarks/results/campaign_repeats.json")


def simhash(text: str) -> int:
    words = text.lower().split()
    weights = [0] * 64
    for i in range(len(words) - 2):
        h = int.from_bytes(
            hashlib.blake2b(" ".join(words[i : i + 3]).encode(), digest_size=8).digest(), "big"
        )
        for bit in range(64):
            weights[bit] += 1 if h >> bit & 1 else -1
    return sum(1 << bit for bit in range(64) if weights[bit] > 0)


def _bands(h: int) -> list[tuple[int, int]]:
    mask = (1 << BAND_BITS) - 1
    return [(b, h >> (b * BAND_BITS) & mask) for b in range(BANDS)]


def real_rows() -> list[tuple[str, str, str]]:
    """(text, binary label, group) of every real message as read, in reading order."""
    rows, groups, _ = mail.corpus_rows((), NormalizeSettings(), {})
    out = []
    for row, text, label in rows:
        group = groups.get(row, "")
        if group.startswith("synthetic-"):
            continue
        out.append((normalize(text), "ham" if label == "ham" else "spam", group))
    return out


def exact(rows: list[tuple[str, str, str]]) -> dict[str, Any]:
    """Per label and group: rows, and the share whose text appeared before (any order)."""
    seen: dict[str, set[str]] = defaultdict(set)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    first_label: dict[str, str] = {}
    conflicts = 0
    for text, label, group in rows:
        for key in (label, group):
            counts[key][0] += 1
            if text in seen[key]:
                counts[key][1] += 1
            seen[key].add(text)
        if first_label.setdefault(text, label) != label:
            conflicts += 1
    return {
        "by": {k: {"rows": n, "repeat_share": r / n} for k, (n, r) in sorted(counts.items())},
        "label_conflicts": conflicts,
    }


def near(rows: list[tuple[str, str, str]], seed: int) -> dict[int, dict[str, int]]:
    """In one arrival order: per distance k, per label, rows with an earlier near copy of
    another text (hits) and those whose nearest such copy has the other label (wrong)."""
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    hashes: dict[int, int] = {}
    out = {k: {"rows_ham": 0, "rows_spam": 0, "hits_ham": 0, "hits_spam": 0,
               "wrong_ham": 0, "wrong_spam": 0} for k in DISTANCES}  # fmt: skip
    for i in order:
        text, label, _ = rows[i]
        if len(text.split()) < MIN_WORDS:
            continue
        h = hashes[i] = simhash(text)
        best: tuple[int, str] | None = None
        for band in _bands(h):
            for j in buckets[band]:
                if rows[j][0] == text:
                    continue  # an exact repeat: the exact key's business
                d = (h ^ hashes[j]).bit_count()
                if best is None or d < best[0]:
                    best = (d, rows[j][1])
            buckets[band].append(i)
        for k in DISTANCES:
            out[k][f"rows_{label}"] += 1
            if best is not None and best[0] <= k:
                out[k][f"hits_{label}"] += 1
                out[k][f"wrong_{label}"] += best[1] != label
    return out


def summarize(runs: list[dict[int, dict[str, int]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in DISTANCES:
        row: dict[str, float] = {}
        for label in ("ham", "spam"):
            n = sum(r[k][f"rows_{label}"] for r in runs)
            hits = sum(r[k][f"hits_{label}"] for r in runs)
            wrong = sum(r[k][f"wrong_{label}"] for r in runs)
            row[f"hit_rate_{label}"] = hits / n if n else 0.0
            row[f"wrong_of_hits_{label}"] = wrong / hits if hits else 0.0
        out[str(k)] = row
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--orders", type=int, default=5, help="seeded arrival orders to average")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args()
    rows = real_rows()
    report = {
        "rows": len(rows),
        "min_words": MIN_WORDS,
        "exact": exact(rows),
        "near": summarize([near(rows, seed) for seed in range(args.orders)]),
        "orders": args.orders,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for label in ("ham", "spam"):
        share = report["exact"]["by"][label]["repeat_share"]
        print(f"exact repeat share {label}: {share:.4f}")
    for k, row in report["near"].items():
        print(f"near k={k}: " + ", ".join(f"{name} {v:.4f}" for name, v in row.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

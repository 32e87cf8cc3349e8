"""Would a structural header signal help held-out mail? Bulk-mail headers per source group.

    python benchmarks/studies/archive/email_headers.py [--out benchmarks/results/email_headers.json]

Counts, for each label and fine source group of the packaged e-mail corpus (the groups
leave-one-source-out holds out), the messages that carry List-Unsubscribe, List-Id,
Precedence: bulk/list and X-Mailer. A header is worth a feature only if it separates the
labels *within* a source; one that tells the sources apart teaches the model the corpus.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from email.parser import BytesHeaderParser
from pathlib import Path

from textgate.mail.corpus import iter_email_corpus

ROOT = Path(__file__).resolve().parents[3]
HEADERS = ("List-Unsubscribe", "List-Id", "Precedence", "X-Mailer")


def count() -> dict[str, dict[str, int]]:
    parser = BytesHeaderParser()
    totals: Counter[str] = Counter()
    hits: Counter[tuple[str, str]] = Counter()
    for item in iter_email_corpus():
        key = f"{item.label} {item.group}"
        totals[key] += 1
        headers = parser.parsebytes(item.raw[:65536])
        for name in HEADERS:
            if headers.get(name):
                hits[key, name] += 1
    return {
        k: {"messages": n, **{h: hits[k, h] for h in HEADERS}} for k, n in sorted(totals.items())
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/email_headers.json")
    args = p.parse_args()
    table = count()
    print(f"{'label group':44} {'n':>5} " + " ".join(f"{h:>16}" for h in HEADERS))
    for key, row in table.items():
        n = row["messages"]
        cells = " ".join(f"{row[h]:>7} ({row[h] / n:5.1%})" for h in HEADERS)
        print(f"{key:44} {n:>5} {cells}")
    args.out.write_text(json.dumps(table, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Which changed training rows move a leave-one-source-out fold: swap rows between versions.

    # the other version's rows: its checkout first on the path
    PYTHONPATH=OTHER_CHECKOUT python benchmarks/studies/archive/email_rows_swap.py dump ROWS.json
    # here: the rows of GROUP prefixes that differ take the other version's text, then run
    python benchmarks/studies/archive/email_rows_swap.py run ROWS.json --groups phishing-pot -- \\
        evaluate --task spam --by-source --hold-out trec07p/ham-other --seed 42 -o FILE

A normalizer version changes a handful of corpus rows (docs/email-model.md, "One
normalization"); this runs ``textgate`` on this checkout's rows with only some of them put
back, so a fold's move can be traced to the rows that caused it. Measured with it: the 9
honeypot phish rows normalizer 6 reads differently are the whole of the newsletter fold's
move under seeds 42 and 2, and 2 of them most of it under both
(benchmarks/results/email_newsletter_norm5_vs_6.json, docs/email-model.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def dump(path: Path) -> None:
    from textgate import mail
    from textgate.normalize import NormalizeSettings

    rows, groups, _ = mail.corpus_rows((), NormalizeSettings())
    path.write_text(json.dumps({"rows": rows, "groups": {str(k): v for k, v in groups.items()}}))
    print(f"{len(rows)} rows -> {path}")


def run(path: Path, prefixes: list[str], argv: list[str]) -> int:
    import textgate.mail as mail_pkg
    from textgate.cli import main
    from textgate.mail import corpus

    other = {r[0]: tuple(r) for r in json.loads(path.read_text())["rows"]}
    original = corpus.corpus_rows

    def swapped(exclude: Any, settings: Any) -> Any:
        rows, groups, report = original(exclude, settings)
        out, n = [], 0
        for row in rows:
            theirs = other.get(row[0])
            if theirs and theirs != tuple(row) and groups[row[0]].startswith(tuple(prefixes)):
                out.append(theirs)
                n += 1
            else:
                out.append(row)
        print(f"{n} rows of {', '.join(prefixes)} take {path}'s text", file=sys.stderr)
        return out, groups, report

    mail_pkg.corpus_rows = swapped  # type: ignore[assignment]
    corpus.corpus_rows = swapped  # type: ignore[assignment]
    sys.argv = ["textgate", *argv]
    return main()


def cli() -> int:
    args_in = sys.argv[1:]
    cut = args_in.index("--") if "--" in args_in else len(args_in)  # textgate's follow --
    mine, theirs = args_in[:cut], args_in[cut + 1 :]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="write this checkout's corpus rows")
    d.add_argument("rows", type=Path)
    r = sub.add_parser("run", help="run ROWS --groups G -- textgate ARGS")
    r.add_argument("rows", type=Path)
    r.add_argument("--groups", nargs="+", required=True, help="source group prefixes")
    args = ap.parse_args(mine)
    if args.cmd == "dump":
        dump(args.rows)
        return 0
    return run(args.rows, args.groups, theirs)


if __name__ == "__main__":
    sys.exit(cli())

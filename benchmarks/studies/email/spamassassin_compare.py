"""SpamAssassin (Debian's, rules only) vs textgate on the same messages, through the same client.

    S=benchmarks/studies/email/spamassassin_compare.py
    python $S --corpus data/email --write-train mail.jsonl
    textgate train --task spam --data mail.jsonl --labels ham,spam --max-length 128 \\
        --epochs 1 -o ck && textgate export ck -o BUNDLE --variants int8
    python $S --corpus data/email --bundle BUNDLE --per-label 300
    python $S --corpus data/email --textgate-spamd 127.0.0.1:7830 --textgate-pid PID

Both filters run as daemons and are asked by Debian's ``spamc -c`` (exit 1: spam), one
message at a time: SpamAssassin's ``spamd --local`` (no DNS, no network tests, no Bayes, no
auto-whitelist: its shipped rules only) and textgate's spamd listener (``textgate serve
--spamd-port``, started here from ``--bundle`` or already running). Messages are the corpus's
test split by the rule of ``textgate.data.split`` (a hash of the normalized text), a seeded
sample of ``--per-label`` per label; phish counts as spam (positive). CPU is the server
process tree's user+system time (from /proc) over the run, so ``messages per CPU-second``
compares the work each filter does, not the client's.

Writes JSON (``--out``) and prints a Markdown table for docs/mail.md.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

POSITIVE = ("spam", "phish")
ARCHIVES = ("ham.tar.xz", "spam.tar.xz", "phish.tar.xz")


# --- scoring (unit-tested: tests/unit/bench/test_spamassassin_compare.py) -----------------


@dataclass(frozen=True)
class Scores:
    n: int
    tp: int
    fp: int
    tn: int
    fn: int
    errors: int
    precision: float
    recall: float
    f1: float
    fpr: float
    cpu_s: float
    messages_per_cpu_s: float


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def score(truth: Sequence[str], flagged: Sequence[bool | None], cpu_s: float) -> Scores:
    """Binary metrics with spam and phish as positive; ``None``: the filter gave no answer
    (counted as ``errors`` and as not flagged, which is what an MTA does with it)."""
    if len(truth) != len(flagged):
        raise ValueError(f"{len(truth)} labels but {len(flagged)} answers")
    tp = fp = tn = fn = errors = 0
    for label, f in zip(truth, flagged, strict=True):
        errors += f is None
        positive, said = label in POSITIVE, bool(f)
        tp += positive and said
        fn += positive and not said
        fp += not positive and said
        tn += not positive and not said
    precision, recall = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    return Scores(
        n=len(truth),
        tp=tp,
        fp=fp,
        tn=tn,
        fn=fn,
        errors=errors,
        precision=precision,
        recall=recall,
        f1=_ratio(2 * precision * recall, precision + recall),
        fpr=_ratio(fp, fp + tn),
        cpu_s=cpu_s,
        messages_per_cpu_s=_ratio(len(truth), cpu_s),
    )


def spamc_verdict(returncode: int, stdout: bytes) -> bool | None:
    """``spamc -c``: exit 1 and ``score/threshold`` means spam, exit 0 ham; else no answer."""
    text = stdout.decode("ascii", "replace").strip()
    if returncode not in (0, 1) or "/" not in text or text.startswith("0/0"):
        return None  # spamc prints 0/0 when it could not reach the daemon
    return returncode == 1


def table(results: dict[str, Scores]) -> str:
    head = "| filter | n | precision | recall | F1 | FPR | errors | CPU s | msgs / CPU-s |"
    rows = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, s in results.items():
        rows.append(
            f"| {name} | {s.n} | {s.precision:.3f} | {s.recall:.3f} | {s.f1:.3f} | "
            f"{s.fpr:.3f} | {s.errors} | {s.cpu_s:.1f} | {s.messages_per_cpu_s:.1f} |"
        )
    return "\n".join(rows)


# --- the corpus -----------------------------------------------------------------------------


def read_manifest(corpus: Path) -> list[tuple[str, str]]:
    """(file, label) rows of MANIFEST.tsv; a clear error naming the missing file."""
    path = corpus / "MANIFEST.tsv"
    if not path.is_file():
        raise SystemExit(f"{path}: not found (--corpus must hold MANIFEST.tsv and the archives)")
    with path.open(encoding="utf-8", newline="") as f:
        return [(r["file"], r["label"]) for r in csv.DictReader(f, delimiter="\t")]


def load_messages(corpus: Path, wanted: set[str]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for name in ARCHIVES:
        path = corpus / name
        if not path.is_file():
            raise SystemExit(f"{path}: not found")
        with tarfile.open(path, "r:xz") as tar:
            for member in tar:
                base = Path(member.name).name
                if base in wanted and member.isfile():
                    f = tar.extractfile(member)
                    if f is not None:
                        out[base] = f.read()
    return out


def test_split(messages: dict[str, bytes]) -> set[str]:
    """Files in the test split by ``textgate.data.split``'s rule on the normalized text."""
    from textgate import normalize
    from textgate.data import SPLIT_FRACTIONS, text_hash

    cut = SPLIT_FRACTIONS[0] + SPLIT_FRACTIONS[1]
    keep = set()
    settings = normalize.NormalizeSettings()
    for name, raw in messages.items():
        try:
            text = normalize.normalize_email(raw, settings).text
        except Exception:  # an unreadable message is simply not sampled
            continue
        if int(text_hash(text)[:16], 16) / 2**64 >= cut:
            keep.add(name)
    return keep


def sample(corpus: Path, per_label: int, seed: int) -> list[tuple[str, str, bytes]]:
    rows = read_manifest(corpus)
    messages = load_messages(corpus, {f for f, _ in rows})
    test = test_split(messages)
    rng = random.Random(seed)
    out = []
    for label in sorted({lab for _, lab in rows}):
        files = sorted(f for f, lab in rows if lab == label and f in test)
        for f in rng.sample(files, min(per_label, len(files))):
            out.append((f, label, messages[f]))
    rng.shuffle(out)
    return out


def write_train(corpus: Path, counts: dict[str, int], out: Path, seed: int = 1) -> int:
    """A JSONL training file (``text``, ``label``; phish -> spam) for ``textgate train``.

    Rows come from every split: ``textgate train`` splits by the same content hash, so the
    messages this script tests on land in its test split and are never trained on.
    """
    from textgate import normalize

    rows = read_manifest(corpus)
    messages = load_messages(corpus, {f for f, _ in rows})
    settings = normalize.NormalizeSettings()
    by_label: dict[str, list[str]] = {}
    for f, label in rows:
        try:
            text = normalize.normalize_email(messages[f], settings).text
        except Exception:  # an unreadable message is simply not sampled
            continue
        by_label.setdefault(label, []).append(text)
    rng = random.Random(seed)
    n = 0
    with out.open("w", encoding="utf-8") as fh:
        for label, count in counts.items():
            texts = by_label.get(label, [])
            for text in rng.sample(texts, min(count, len(texts))):
                tag = "spam" if label in POSITIVE else "ham"
                fh.write(json.dumps({"text": text, "label": tag}, ensure_ascii=False) + "\n")
                n += 1
    return n


# --- servers and CPU ------------------------------------------------------------------------


def tree_cpu_s(pid: int) -> float:
    """User + system seconds of ``pid`` and its descendants, the exited ones included.

    A process's own times plus those of its reaped children (``cutime``/``cstime``): spamd
    replaces a child after ``--max-conn-per-child`` messages, and that child's work counts.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            parents[int(entry.name)] = int(fields[1])
            times[int(entry.name)] = sum(int(x) for x in fields[11:15]) / ticks
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += times.get(p, 0.0)
        todo += [c for c, parent in parents.items() if parent == p]
    return total


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode} before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.5)
    raise SystemExit(f"nothing listens on {port} after {timeout_s:.0f} s")


@contextlib.contextmanager
def spamassassin(children: int) -> Iterator[tuple[int, int]]:
    """Debian's spamd, local rules only; yields (port, pid)."""
    binary = shutil.which("spamd")
    if binary is None:
        raise SystemExit("spamd not found: apt-get install spamassassin")
    port = free_port()
    cmd = [binary, "--local", "--listen", f"127.0.0.1:{port}", "--max-children", str(children),
           "--min-children", str(children), "--nouser-config", "--syslog", "stderr",
           "--cf", "use_bayes 0", "--cf", "use_auto_whitelist 0",
           "--cf", "skip_rbl_checks 1"]  # fmt: skip
    if os.geteuid() == 0:
        cmd += ["--username", "nobody"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc, 120)
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(30)


@contextlib.contextmanager
def textgate(bundle: Path) -> Iterator[tuple[int, int]]:
    """``textgate serve --bundle`` with its spamd listener; yields (port, pid)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "textgate.yaml"
        config.write_text(
            f"events:\n  outbox_path: {tmp}/events.sqlite3\n"
            f"feedback:\n  path: {tmp}/feedback.sqlite3\n",
            encoding="utf-8",
        )
        cmd = [sys.executable, "-m", "textgate.cli", "serve", "--bundle", str(bundle),
               "--config", str(config), "--port", str(free_port()),
               "--spamd-port", str(port)]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port, proc, 600)
            yield port, proc.pid
        finally:
            proc.terminate()
            proc.wait(60)


def run_filter(
    port: int,
    pid: int | None,
    messages: Sequence[tuple[str, str, bytes]],
    warmup: int,
    host: str = "127.0.0.1",
) -> Scores:
    spamc = shutil.which("spamc") or "spamc"
    for _, _, raw in messages[:warmup]:
        _ask(spamc, host, port, raw)
    start = tree_cpu_s(pid) if pid else 0.0
    flagged = [_ask(spamc, host, port, raw) for _, _, raw in messages]
    cpu = tree_cpu_s(pid) - start if pid else 0.0
    return score([lab for _, lab, _ in messages], flagged, cpu)


def _ask(spamc: str, host: str, port: int, raw: bytes) -> bool | None:
    cmd = [spamc, "-c", "-d", host, "-p", str(port), "-t", "120", "-s", str(1 << 20)]
    out = subprocess.run(cmd, input=raw, capture_output=True, timeout=180, check=False)
    return spamc_verdict(out.returncode, out.stdout)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--corpus", type=Path, required=True, help="MANIFEST.tsv + ham/spam/phish tars")
    p.add_argument("--per-label", type=int, default=300, help="test messages per label")
    p.add_argument("--seed", type=int, default=14)
    p.add_argument("--bundle", type=Path, help="spam bundle to serve with textgate")
    p.add_argument("--textgate-spamd", help="host:port of a running textgate spamd listener")
    p.add_argument("--textgate-pid", type=int, help="its process id (for CPU time)")
    p.add_argument("--sa-children", type=int, default=2, help="spamd children")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--out", type=Path, default=Path("spamassassin_compare.json"))
    p.add_argument("--write-train", type=Path, help="write a training JSONL instead, and stop")
    p.add_argument("--train-counts", default="ham=1500,spam=750,phish=750")
    args = p.parse_args(argv)
    if args.write_train:
        counts = {k: int(v) for k, v in (x.split("=") for x in args.train_counts.split(","))}
        print(f"{write_train(args.corpus, counts, args.write_train)} rows", file=sys.stderr)
        return 0
    if not args.bundle and not args.textgate_spamd:
        p.error("give --bundle or --textgate-spamd")
    messages = sample(args.corpus, args.per_label, args.seed)
    print(f"{len(messages)} test messages", file=sys.stderr)
    results: dict[str, Scores] = {}
    with spamassassin(args.sa_children) as (port, pid):
        results["SpamAssassin 4.0 (local rules)"] = run_filter(port, pid, messages, args.warmup)
    if args.bundle:
        with textgate(args.bundle) as (port, pid):
            results["textgate (spamd listener)"] = run_filter(port, pid, messages, args.warmup)
    else:
        host, _, port_s = args.textgate_spamd.rpartition(":")
        results["textgate (spamd listener)"] = run_filter(
            int(port_s), args.textgate_pid, messages, args.warmup, host or "127.0.0.1"
        )
    args.out.write_text(
        json.dumps({k: asdict(v) for k, v in results.items()}, indent=2), encoding="utf-8"
    )
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

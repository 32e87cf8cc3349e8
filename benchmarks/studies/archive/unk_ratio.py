"""What ``unk_ratio`` costs a request in the gateway (issue 15 §4).

    python benchmarks/studies/archive/unk_ratio.py --tokenizer artifacts/sentiment/tokenizer.json \
        --texts TEST.jsonl [--n 2000]

Times ``UnkCounter.ratio`` (one Rust tokenization of the request's pieces, no padding, and
a count of ``[UNK]`` ids) on real texts, one request of one text at a time as the gateway
runs it; prints the median and P99 in µs per request and the texts' mean length. The first
call (loading ``tokenizer.json``, once per served tokenizer) is reported apart.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from pathlib import Path

from textgate.gateway.scoring.unk import UnkCounter


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", type=Path, required=True, help="a served tokenizer.json")
    ap.add_argument("--texts", type=Path, required=True, help='JSONL with a "text" per row')
    ap.add_argument("--n", type=int, default=2000, help="requests timed")
    args = ap.parse_args()
    lines = args.texts.read_text(encoding="utf-8").splitlines()
    texts = [json.loads(line)["text"] for line in lines if line.strip()]
    sha = hashlib.sha256(args.tokenizer.read_bytes()).hexdigest()
    counter = UnkCounter([args.tokenizer.parent])
    t = time.perf_counter()
    counter.ratio(sha, [texts[0]])
    first_ms = (time.perf_counter() - t) * 1000
    times, ratios = [], []
    for i in range(args.n):
        text = texts[i % len(texts)]
        t = time.perf_counter()
        ratio = counter.ratio(sha, [text])
        times.append((time.perf_counter() - t) * 1e6)
        ratios.append(ratio or 0.0)
    times.sort()
    print(f"texts: {len(texts)}, mean {statistics.mean(len(x) for x in texts):.0f} characters")
    print(f"first call (load): {first_ms:.1f} ms")
    print(f"median_us: {statistics.median(times):.1f}")
    print(f"p99_us: {times[int(len(times) * 0.99) - 1]:.1f}")
    print(f"mean unk_ratio: {statistics.mean(ratios):.4f}")


if __name__ == "__main__":
    main()

"""Gateway texts/s with 1 and 2 gateway processes in front of the same Triton.

    python benchmarks/suite/gateway_workers.py --bundle artifacts/spam --out gateway_workers.json
    python benchmarks/suite/gateway_workers.py --triton 127.0.0.1:8001 --seconds 10

Each worker is a ``textgate serve`` process with its own port and outbox (one process per
outbox file); the load is closed-loop (``--concurrency`` clients, one single-text request
each at a time), spread evenly over the workers, the same total for every worker count.
A front proxy or SO_REUSEPORT would spread it the same way. Prints ``name: value`` lines and
writes the JSON (docs/deploy.md quotes it).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from textgate.repository import build
from textgate.triton import TritonServer, free_port

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "Free entry in 2 a wkly comp to win FA Cup final tkts, text FA to 87121 now",
    "Hey, are we still on for lunch tomorrow? Let me know",
    "URGENT! You have won a 1 week FREE membership in our prize jackpot",
    "Ok lar... joking wif u oni, see you at home later tonight",
]


@contextlib.contextmanager
def workers(n: int, triton: str, tmp: Path) -> Iterator[list[str]]:
    procs, urls = [], []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        for i in range(n):
            port = free_port()
            cfg = {"gateway": {"port": port, "max_in_flight": 64, "max_queue": 512},
                   "events": {"outbox_path": str(tmp / f"w{n}-{i}.sqlite3"),
                              "synchronous": "normal"}}  # fmt: skip
            path = tmp / f"w{n}-{i}.yaml"
            path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
            log = (tmp / f"w{n}-{i}.log").open("wb")
            procs.append(subprocess.Popen(
                [sys.executable, "-c", "from textgate.cli import main; raise SystemExit(main())",
                 "serve", "--config", str(path), "--triton", triton],
                stdout=log, stderr=subprocess.STDOUT, env=env,
            ))  # fmt: skip
            urls.append(f"http://127.0.0.1:{port}")
        for url in urls:
            wait_ready(url)
        yield urls
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def wait_ready(url: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready")


def closed_loop(urls: Sequence[str], seconds: float, concurrency: int) -> dict[str, Any]:
    stop = time.monotonic() + 1.0 + seconds  # the first second warms up, not counted
    count_from = time.monotonic() + 1.0
    lat: list[float] = []
    failed = 0

    def client(k: int) -> tuple[list[float], int]:
        mine, bad = [], 0
        with httpx.Client(base_url=urls[k % len(urls)], timeout=30) as c:
            i = 0
            while (now := time.monotonic()) < stop:
                r = c.post("/v1/classify/spam", json={"text": TEXTS[(k + i) % len(TEXTS)]})
                i += 1
                if now >= count_from:
                    if r.status_code == 200:
                        mine.append(time.monotonic() - now)
                    else:
                        bad += 1
        return mine, bad

    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        for mine, bad in pool.map(client, range(concurrency)):
            lat += mine
            failed += bad
    lat.sort()
    return {
        "texts_per_s": round(len(lat) / seconds, 1),
        "p50_ms": round(1000 * lat[len(lat) // 2], 1) if lat else None,
        "p95_ms": round(1000 * lat[int(0.95 * (len(lat) - 1))], 1) if lat else None,
        "failed": failed,
    }


@contextlib.contextmanager
def triton_for(args: argparse.Namespace, tmp: Path) -> Iterator[str]:
    if args.triton:
        yield args.triton
        return
    repo = build([args.bundle], tmp / "repo").repository
    with TritonServer(repo) as server:
        server.wait_ready()
        yield server.grpc_url


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--bundle", type=Path, help="serve this bundle on a private tritonserver")
    where.add_argument("--triton", help="a running Triton's gRPC host:port")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=2, help="1, 2, 1, 2, ... workers")
    ap.add_argument("--out", type=Path, default=Path("gateway_workers.json"))
    args = ap.parse_args(argv)
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="textgate-workers-") as tmp, \
            triton_for(args, Path(tmp)) as triton:  # fmt: skip
        for r in range(args.rounds):
            for n in (1, 2):
                with workers(n, triton, Path(tmp)) as urls:
                    m = closed_loop(urls, args.seconds, args.concurrency)
                rounds.append({"round": r, "workers": n, **m})
                print(f"round {r} workers {n}: " + ", ".join(f"{k} {v}" for k, v in m.items()))
    result = {"concurrency": args.concurrency, "seconds": args.seconds, "rounds": rounds,
              "cpus": os.cpu_count()}  # fmt: skip
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for n in (1, 2):
        tps = [x["texts_per_s"] for x in rounds if x["workers"] == n]
        print(f"workers_{n}_texts_per_s: {min(tps)}-{max(tps)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

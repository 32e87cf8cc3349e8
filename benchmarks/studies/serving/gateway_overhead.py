"""Gateway overhead per request: POST /v1/classify/<task> vs the same ensemble over gRPC.

    S=benchmarks/studies/serving/gateway_overhead.py
    python $S --bundle artifacts/spam --n 500 --out overhead.json
    python $S --triton 127.0.0.1:8001 --task spam

One request at a time, interleaved (direct, gateway, direct, ...) so drift hits both alike.
The overhead is the gateway's latency minus the direct call's, per percentile. Prints
``name: value`` lines and writes the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from textgate.config import Config, TritonConfig
from textgate.gateway.app import create_app
from textgate.repository import build
from textgate.triton import TritonServer, free_port
from textgate.triton_client import TritonClient

SYNC = ["full"]  # events.synchronous of the measured gateway (--outbox-sync)
TEXTS = [
    "Free entry in 2 a wkly comp to win FA Cup final tkts, text FA to 87121 now",
    "Hey, are we still on for lunch tomorrow? Let me know",
    "URGENT! You have won a 1 week FREE membership in our prize jackpot",
    "Ok lar... joking wif u oni, see you at home later tonight",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(ms: list[float]) -> dict[str, float]:
    return {
        "median_ms": statistics.median(ms),
        "p90_ms": pct(ms, 0.90),
        "p99_ms": pct(ms, 0.99),
        "mean_ms": statistics.fmean(ms),
    }


async def measure(grpc_url: str, http_url: str, task: str, n: int) -> dict[str, list[float]]:
    client = TritonClient([grpc_url])
    direct: list[float] = []
    gateway: list[float] = []
    async with httpx.AsyncClient(base_url=http_url, timeout=30) as http:
        for i in range(n + 20):  # the first 20 warm both paths up
            text = TEXTS[i % len(TEXTS)]
            t = time.perf_counter()
            await client.infer(task, [text])
            d = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            r = await http.post(f"/v1/classify/{task}", json={"text": text})
            g = (time.perf_counter() - t) * 1000
            r.raise_for_status()
            if i >= 20:
                direct.append(d)
                gateway.append(g)
    await client.close()
    return {"direct": direct, "gateway": gateway}


def run_gateway(grpc_url: str, tmp: Path) -> tuple[uvicorn.Server, threading.Thread, str]:
    cfg = Config.from_dict(
        {"events": {"outbox_path": str(tmp / "events.sqlite3"), "synchronous": SYNC[0]}}
    )
    app = create_app(cfg, endpoints=[grpc_url])
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return server, thread, f"http://127.0.0.1:{port}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", type=Path, help="bundle to serve on an embedded Triton")
    ap.add_argument("--triton", help="an already running Triton's gRPC host:port")
    ap.add_argument("--task", default="spam")
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--outbox-sync", choices=("full", "normal"), default="full")
    ap.add_argument("--out", type=Path, default=Path("gateway_overhead.json"))
    ap.add_argument("--work", type=Path, default=Path(".gateway_overhead"))
    args = ap.parse_args(argv)
    if not args.bundle and not args.triton:
        ap.error("give --bundle or --triton")
    args.work.mkdir(parents=True, exist_ok=True)
    SYNC[0] = args.outbox_sync
    server = None
    if args.triton:
        grpc_url = args.triton
    else:
        # the shipped engine defaults, or TEXTGATE_REPOSITORY__* overrides (as suite.py)
        settings = Config.load().repository
        repo = build([args.bundle], args.work / "repo", settings, overwrite=True)
        cfg = TritonConfig(http_port=0, grpc_port=0, metrics_port=0, exit_timeout_s=2)
        server = TritonServer(repo.repository, config=cfg).__enter__()
        grpc_url = server.grpc_url
    try:
        gw, thread, http_url = run_gateway(grpc_url, args.work)
        try:
            samples = asyncio.run(measure(grpc_url, http_url, args.task, args.n))
        finally:
            gw.should_exit = True
            thread.join(timeout=10)
    finally:
        if server is not None:
            server.stop()
    direct, gateway = summary(samples["direct"]), summary(samples["gateway"])
    result: dict[str, Any] = {
        "n": args.n,
        "task": args.task,
        "direct": direct,
        "gateway": gateway,
        "overhead": {k: gateway[k] - direct[k] for k in direct},
        "outbox_synchronous": args.outbox_sync,
    }
    for side in ("direct", "gateway", "overhead"):
        for key, value in result[side].items():
            print(f"{side}_{key}: {value:.3f}")
    args.out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(f"json: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

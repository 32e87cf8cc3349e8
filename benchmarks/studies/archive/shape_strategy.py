"""Measure the shape strategies through a real tritonserver on the realistic length mix.

    python benchmarks/studies/archive/shape_strategy.py --bundle artifacts/spam \
        --out shape_strategy.json

For each strategy (bucket, fixed, fused) it builds an embedded repository from the bundle,
starts tritonserver on free ports, sends the same texts from ``--concurrency`` threads (one
gRPC client each: clients are never shared across threads), and prints ``name: value`` lines:
texts/s, latency percentiles, and the model step's executions per request (how well the
dynamic batcher merged). The length mix is 70 % under 100 characters, 20 % 100-500 and
10 % 500-2000, drawn from the packaged SMS corpus; long texts are consecutive messages joined,
since single SMS messages stay short.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import numpy as np

from textgate.config import Config
from textgate.repository import build
from textgate.triton import TritonServer

MIX = ((0.7, 1, 99), (0.2, 100, 500), (0.1, 501, 2000))


def realistic_texts(n: int, seed: int = 0) -> list[str]:
    from textgate import data

    pool = list(data.load_task("spam").texts)
    rng = random.Random(seed)
    out: list[str] = []
    for share, lo, hi in MIX:
        for _ in range(round(n * share)):
            out.append(_text_between(pool, rng, lo, hi))
    rng.shuffle(out)  # arrival order: lengths interleaved, as real traffic is
    return out[:n]


def _text_between(pool: Sequence[str], rng: random.Random, lo: int, hi: int) -> str:
    while True:
        start = rng.randrange(len(pool))
        text = pool[start]
        i = start
        while len(text) < lo:
            i = (i + 1) % len(pool)
            text = f"{text} {pool[i]}"
        if len(text) <= hi:
            return text


def run_strategy(
    bundle: Path, strategy: str, texts: Sequence[str], concurrency: int, cfg: Config
) -> dict[str, Any]:
    # a name from --strategies: a plain string, which mypy cannot match to the Literal
    settings = dataclasses.replace(cfg.repository, shape_strategy=cast(Any, strategy))
    triton_cfg = dataclasses.replace(
        cfg.triton, http_port=0, grpc_port=0, metrics_port=0, exit_timeout_s=2
    )
    with tempfile.TemporaryDirectory(prefix=f"textgate-bench-{strategy}-") as tmp:
        result = build([bundle], Path(tmp) / "repo", settings)
        task = result.spec.tasks[0]
        with TritonServer(result.repository, config=triton_cfg) as server:
            _drive(server.grpc_url, task.ensemble, texts[: min(64, len(texts))], concurrency)
            before = _stats(server.grpc_url, task.model)
            start = time.perf_counter()
            latencies = _drive(server.grpc_url, task.ensemble, texts, concurrency)
            wall = time.perf_counter() - start
            after = _stats(server.grpc_url, task.model)
    requests = after[0] - before[0]
    executions = after[1] - before[1]
    ms = sorted(x * 1000 for x in latencies)
    return {
        "strategy": strategy,
        "texts": len(texts),
        "concurrency": concurrency,
        "texts_per_s": len(texts) / wall,
        "p50_ms": statistics.median(ms),
        "p95_ms": ms[int(0.95 * (len(ms) - 1))],
        "p99_ms": ms[int(0.99 * (len(ms) - 1))],
        "model_requests": requests,
        "model_executions": executions,
        "mean_batch": requests / executions if executions else 0.0,
        "variant": task.variant,
        "buckets": list(task.buckets),
    }


def _drive(url: str, model: str, texts: Sequence[str], concurrency: int) -> list[float]:
    import threading

    import tritonclient.grpc as grpcclient

    local = threading.local()

    def one(text: str) -> float:
        if not hasattr(local, "client"):
            local.client = grpcclient.InferenceServerClient(url)  # one client per thread
        tensor = grpcclient.InferInput("text", [1, 1], "BYTES")
        tensor.set_data_from_numpy(np.array([[text.encode()]], dtype=np.object_))
        t0 = time.perf_counter()
        local.client.infer(model, [tensor])
        return time.perf_counter() - t0

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        return list(pool.map(one, texts))


def _stats(url: str, model: str) -> tuple[int, int]:
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    try:
        s = client.get_inference_statistics(model, as_json=True)["model_stats"][0]
    finally:
        client.close()
    return int(s.get("inference_count", 0)), int(s.get("execution_count", 0))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--strategies", default="bucket,fixed,fused")
    p.add_argument("--n", type=int, default=1000, help="texts per strategy")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--config", type=Path, help="textgate YAML config (repository, triton)")
    p.add_argument("--out", type=Path, default=Path("shape_strategy.json"))
    args = p.parse_args(argv)
    cfg = Config.load(args.config)
    texts = realistic_texts(args.n)
    results = []
    for strategy in args.strategies.split(","):
        r = run_strategy(args.bundle, strategy.strip(), texts, args.concurrency, cfg)
        results.append(r)
        for key, value in r.items():
            shown = f"{value:.1f}" if isinstance(value, float) else value
            print(f"{strategy}.{key}: {shown}")
        sys.stdout.flush()
    best = max(results, key=lambda r: r["texts_per_s"])
    print(f"fastest: {best['strategy']}")
    report = {"results": results, "fastest": best["strategy"], "config": cfg.to_dict()}
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Side by side, one run: ONNX Runtime's threading knobs in the fused model, direct and behind
the gateway.

    python benchmarks/studies/archive/engine_knobs.py --bundle B [--workload mix|mail] [--rounds 3]
        [--concurrency 32] [--seconds 5] [--out FILE]

On a small box the gateway, Triton and the load generator share the cores, so how the
engine waits matters as much as how it computes: by default ONNX Runtime's idle intra-op
workers busy-wait ("spin") for the next op, CPU the gateway's event loop then lacks. Each
candidate gets its own tritonserver (the bundle in the default fused shape with that
candidate's `repository:` knobs) and its own `textgate serve` in front; every round measures
each candidate direct and through its gateway once (closed loop, one text per request), the
order rotating. Prints the medians of texts/s, P95 and texts per CPU-second of the server
processes, and each candidate's ratio to the shipped defaults; writes them as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from textgate.bench import workload
from textgate.bench.ab import Systems, http_target, report_ab, rotate
from textgate.bench.measurement import Plan, Watch
from textgate.bench.procs import gateway, started
from textgate.bench.target import TritonTarget
from textgate.config import InstanceGroupConfig, RepositoryConfig, TritonConfig
from textgate.repository import build
from textgate.triton import TritonServer

CANDIDATES: dict[str, dict[str, Any]] = {
    "default": {},
    "no-spin": {"ort_allow_spinning": False},
    "1x1-thread": {"ort_intra_op_threads": 1},
    "2x1-thread": {"ort_intra_op_threads": 1, "instance_group": InstanceGroupConfig(count=2)},
}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--workload", choices=["mix", "mail"], default="mix")
    p.add_argument("--n", type=int, default=400)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--only", help="comma-separated candidates (default: all)")
    p.add_argument("--out", type=Path, default=Path("engine_knobs.json"))
    args = p.parse_args()
    task = json.loads((args.bundle / "manifest.json").read_text())["task"]
    work = workload.make(args.workload, args.n, seed=0)
    raw = work.raw_by_text() if work.messages else None
    plan = Plan(mode="closed", concurrency=args.concurrency, duration_s=args.seconds)
    chosen = args.only.split(",") if args.only else list(CANDIDATES)
    with (
        tempfile.TemporaryDirectory(prefix="textgate-knobs-") as tmpdir,
        contextlib.ExitStack() as stack,
    ):
        tmp = Path(tmpdir)
        systems: Systems = {}
        for name in chosen:
            repo = tmp / f"repo-{name}"
            build([args.bundle], repo, RepositoryConfig(**CANDIDATES[name]))
            cfg = TritonConfig(http_port=0, grpc_port=0, metrics_port=0, exit_timeout_s=2)
            server = stack.enter_context(TritonServer(repo, config=cfg))
            gw = gateway(f"gateway-{name}", server.grpc_url, tmp, True, 2)
            stack.enter_context(started([gw]))
            if not gw.wait():
                sys.exit(f"{gw.name} did not start:\n{gw.tail()}")
            tpid, grpc = server.pid or 0, server.grpc_url
            systems[f"triton-{name}"] = (
                lambda g=grpc: TritonTarget(g, task),  # type: ignore[misc]
                Watch({"triton": tpid}),
            )
            systems[f"gateway-{name}"] = (
                http_target(gw, task, raw),
                Watch({"gateway": gw.proc.pid, "triton": tpid}),
            )
        rounds, med = rotate(systems, work.texts, plan, args.rounds)
    for m in med.values():
        m["per_cpu_s"] = m["throughput"] / m["cpu_cores"] if m["cpu_cores"] else 0.0
    base = chosen[0]
    ratios = {
        f"{front}-{name}{suffix}_vs_{base}": med[f"{front}-{name}"][key]
        / med[f"{front}-{base}"][key]
        for key, suffix in (("throughput", ""), ("per_cpu_s", "_per_cpu_s"))
        for name in chosen[1:]
        for front in ("triton", "gateway")
    }
    result = {"workload": work.describe(), "concurrency": args.concurrency, "seconds": args.seconds,
              "candidates": {n: {k: str(v) for k, v in CANDIDATES[n].items()} for n in chosen},
              "rounds": rounds, "median": med, "ratios": ratios}  # fmt: skip
    report_ab(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

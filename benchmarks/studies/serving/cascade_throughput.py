"""The confidence cascade's saving, measured end to end: the same mail through two gateways
in front of one tritonserver, one with the cascade (the bundle's bounds, the shipped
policy) and one whose policies turn it off (``cascade: false``), same run, rounds
rotating.

    python benchmarks/studies/serving/cascade_throughput.py --bundle B [--n 600] [--pool 400]
        [--concurrency 16] [--rounds 3] [--out benchmarks/results/cascade_throughput.json]

Per round and gateway: messages/s, and the CPU seconds per message of the whole system
(tritonserver with its Python-backend stubs, plus the gateway and its parse workers), which
a shared, noisy box disturbs less than wall time. ``cheap_share`` is the share of messages
the cascading gateway answered on the cheap path (its ``textgate_cascade_total``). The mail
is ``textgate.bench.workload.mail``: raw messages from the packaged corpus, most of which the
n-gram half was fitted on, so the cheap share here is above the out-of-source one
(``cascade_bounds_allow_seeds.json``); docs/gateway.md says both.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textgate.bench import stream, workload
from textgate.bench.load import closed_loop
from textgate.bench.measurement import gateway_counts, warm_up
from textgate.bench.procs import PY, Proc, policies, started
from textgate.bench.report import cpu_seconds, descendants
from textgate.bench.target import HttpMailTarget
from textgate.config import RepositoryConfig, TritonConfig
from textgate.repository import build
from textgate.triton import TritonServer
from textgate.triton.server import free_port

# gateway name -> (cascade, campaign memory entries)
SYSTEMS = {"cascade": (True, 0), "full": (False, 0), "memory": (False, 10_000),
           "both": (True, 10_000)}  # fmt: skip


def gateway(name: str, grpc_url: str, tmp: Path) -> Proc:
    cascade, entries = SYSTEMS[name]
    port = free_port()
    cfg = tmp / f"{name}.json"
    config = {
        "gateway": {
            "log_format": "text",
            "max_in_flight": 64,
            "max_queue": 256,
            "campaign_entries": entries,
        },
        "events": {"outbox_path": str(tmp / f"{name}.db")},
        "policy": {"tasks": policies(cascade)},
    }
    cfg.write_text(json.dumps(config))
    cmd = [PY, "-m", "textgate.cli", "serve", "--triton", grpc_url, "--port", str(port)]
    proc = Proc(name, [*cmd, "--config", str(cfg)], f"http://127.0.0.1:{port}/readyz",
                tmp / f"{name}.log")  # fmt: skip
    proc.url = f"http://127.0.0.1:{port}"
    return proc


def counts(proc: Proc) -> tuple[float, float]:
    """(items on the cheap path, campaign-memory hits) so far."""
    c = gateway_counts(proc.url)  # type: ignore[attr-defined]
    return c.get("path_cheap", 0.0), c.get("result_hit", 0.0)


async def measure(
    proc: Proc, triton_pid: int, raw: workload.Raws, texts: Sequence[str], args: Any
) -> dict[str, float]:
    tgt = HttpMailTarget(f"{proc.url}/v1/classify/spam", raw, limit=args.concurrency,
                         name=proc.name)  # fmt: skip
    await tgt.open()
    try:
        await warm_up(tgt, texts, 2 * args.concurrency)
        gw0 = cpu_seconds(descendants(proc.proc.pid))
        pids = descendants(triton_pid) + descendants(proc.proc.pid)
        cpu0, (cheap0, hit0) = cpu_seconds(pids), counts(proc)
        run = await closed_loop(tgt, texts, concurrency=args.concurrency, duration_s=3600.0,
                                max_requests=args.n)  # fmt: skip
        gw1 = cpu_seconds(descendants(proc.proc.pid))
        cpu1 = cpu_seconds(descendants(triton_pid) + descendants(proc.proc.pid))
        cheap1, hit1 = counts(proc)
    finally:
        await tgt.close()
    ok = sum(1 for s in run.samples if s.code == "ok")
    done = max(1, len(run.samples))
    return {
        "requests": float(len(run.samples)),
        "errors": float(len(run.samples) - ok),
        "messages_per_s": ok / run.wall_s if run.wall_s > 0 else 0.0,
        "system_cpu_ms_per_message": (cpu1 - cpu0) / done * 1e3,
        "gateway_cpu_ms_per_message": (gw1 - gw0) / done * 1e3,
        "cheap_share": (cheap1 - cheap0) / done,
        "memory_hit_share": (hit1 - hit0) / done,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--n", type=int, default=600, help="messages per gateway per round")
    p.add_argument("--pool", type=int, default=400, help="distinct messages")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--systems", default="cascade,full", help=f"gateways to compare, of {','.join(SYSTEMS)}"
    )
    p.add_argument(
        "--workload",
        choices=["mail", "stream"],
        default="mail",
        help="stream: mail read onward with campaign re-sends (textgate.bench.stream)",
    )
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/cascade_throughput.json"))
    args = p.parse_args()
    names = args.systems.split(",")
    if args.workload == "stream":  # each gateway reads its own copy onward, never replayed
        work = stream.campaign_stream(args.rounds * args.n + 200, seed=0)
    else:
        work = workload.make("mail", args.pool, seed=0)
    raw = work.raw_by_text()
    feeds: dict[str, Sequence[str]] = {
        n: stream.Cursor(work.texts) if args.workload == "stream" else work.texts for n in names
    }
    with tempfile.TemporaryDirectory(prefix="textgate-cascade-") as d, contextlib.ExitStack() as st:
        tmp = Path(d)
        built = build([args.bundle], tmp / "repo", RepositoryConfig())
        if "spam_cheap" not in built.models:
            sys.exit(f"{args.bundle}: the bundle has no cascade bounds (manifest 'cascade')")
        cfg = TritonConfig(http_port=0, grpc_port=0, metrics_port=0, exit_timeout_s=2)
        server = st.enter_context(TritonServer(tmp / "repo", config=cfg))
        procs = [gateway(n, server.grpc_url, tmp) for n in names]
        st.enter_context(started(procs))
        for proc in procs:
            if not proc.wait():
                sys.exit(f"{proc.name} did not start:\n{proc.tail()}")
        rounds: dict[str, list[dict[str, float]]] = {pr.name: [] for pr in procs}
        for r in range(args.rounds):
            for proc in procs[r % len(procs) :] + procs[: r % len(procs)]:
                feed = feeds[proc.name]
                row = asyncio.run(measure(proc, server.pid or 0, raw, feed, args))
                rounds[proc.name].append(row)
                print(f"# round {r + 1} {proc.name}: {row}", file=sys.stderr, flush=True)
    med = {n: {k: statistics.median(x[k] for x in v) for k in v[0]} for n, v in rounds.items()}
    ratios = {}
    for n in (x for x in names if x != "full" and "full" in names):
        ratios[f"messages_per_s_{n}_vs_full"] = (
            med[n]["messages_per_s"] / med["full"]["messages_per_s"]
        )
        ratios[f"system_cpu_per_message_full_vs_{n}"] = (
            med["full"]["system_cpu_ms_per_message"] / med[n]["system_cpu_ms_per_message"]
        )
    result = {"pool": work.describe(), "n": args.n, "concurrency": args.concurrency,
              "rounds": rounds, "median": med, "ratios": ratios}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({"median": med, "ratios": ratios}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The gateway's own CPU per request: CPU seconds of the ``textgate serve`` process over N
requests, closed loop, beside texts/s.

    python benchmarks/studies/serving/gateway_cpu.py --bundle B [--workload json|mail] [--n 2000]
        [--concurrency 32] [--rounds 3] [--baseline SRC] [--out FILE]

One tritonserver serves the bundle (shipped repository settings); ``textgate serve`` from
this tree sits in front of it (shipped gateway defaults, durable outbox) and, with
``--baseline SRC``, a second one run from another source tree (``git archive main | tar -x
-C SRC``) in front of the same Triton. Each round sends ``--n`` requests to each gateway,
the order rotating, and reads the gateway's CPU (utime + stime from /proc) before and
after: ``gateway_cpu_us_per_request`` is the event-loop process alone (what limits one
gateway), ``tree_cpu_us_per_request`` adds its children (the e-mail parse workers) and
``loop_thread_cpu_us_per_request`` is the event loop's thread alone (the rest of the
process: the outbox writer, gRPC's threads).
``--workload json``: one text per request as ``{"text": ...}``; ``mail``: raw RFC 822
messages from the e-mail corpus as message/rfc822. CPU time is robust to a loaded box;
texts/s is not, so compare only the texts/s of one run. ``--prefill N`` (default 10,000)
puts N published events into each outbox before its gateway starts: the steady state of a
gateway that has run a while, not an empty file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from textgate.bench import workload
from textgate.bench.load import closed_loop
from textgate.bench.measurement import warm_up
from textgate.bench.procs import Proc, gateway, started
from textgate.bench.report import cpu_seconds, descendants
from textgate.bench.target import HttpJsonTarget, HttpMailTarget, Target
from textgate.config import RepositoryConfig, TritonConfig
from textgate.gateway.records.outbox.rows import DDL, SCHEMA_VERSION
from textgate.repository import build
from textgate.triton import TritonServer


def target(proc: Proc, task: str, raw: workload.Raws | None, limit: int) -> Target:
    url = f"{proc.url}/{task}"  # type: ignore[attr-defined]
    if raw is not None:
        return HttpMailTarget(url, raw, limit=limit, name=proc.name)
    return HttpJsonTarget(url, limit=limit, name=proc.name)


async def measure(
    proc: Proc, tgt: Target, texts: tuple[str, ...], n: int, concurrency: int
) -> dict[str, float]:
    """``n`` requests at ``concurrency``; the gateway's CPU seconds over exactly those."""
    await tgt.open()
    try:
        await warm_up(tgt, texts, 2 * concurrency)
        pid = proc.proc.pid
        main0, loop0, tree0 = thread_cpu(pid), cpu_seconds([pid]), cpu_seconds(descendants(pid))
        run = await closed_loop(
            tgt, texts, concurrency=concurrency, duration_s=3600.0, max_requests=n
        )
        main1, loop1, tree1 = thread_cpu(pid), cpu_seconds([pid]), cpu_seconds(descendants(pid))
    finally:
        await tgt.close()
    ok = sum(1 for s in run.samples if s.code == "ok")
    done = max(1, len(run.samples))
    return {
        "requests": float(len(run.samples)),
        "errors": float(len(run.samples) - ok),
        "texts_per_s": ok / run.wall_s if run.wall_s > 0 else 0.0,
        "gateway_cpu_us_per_request": (loop1 - loop0) / done * 1e6,
        "tree_cpu_us_per_request": (tree1 - tree0) / done * 1e6,
        "loop_thread_cpu_us_per_request": (main1 - main0) / done * 1e6,
        "gateway_cpu_cores": (loop1 - loop0) / run.wall_s if run.wall_s > 0 else 0.0,
    }


def prefill(path: Path, n: int) -> None:
    """``n`` published events in a new outbox file: the state of a gateway that has run a
    while (an outbox-only gateway keeps ``retain_published`` of them, 10,000 by default)."""
    if n <= 0:
        return
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(DDL)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        now = time.time()
        rows = ((uuid.uuid4().hex, now, "{}", now) for _ in range(n))
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO events (request_id, created_at, payload, published_at) VALUES (?,?,?,?)",
            rows,
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


def thread_cpu(pid: int) -> float:
    """CPU seconds of the process's main thread alone: the event loop (the outbox writer
    and gRPC's threads are the rest of the process)."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--workload", choices=["json", "mail"], default="json")
    p.add_argument("--n", type=int, default=2000, help="requests per gateway per round")
    p.add_argument("--pool", type=int, default=400, help="distinct texts / messages")
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--baseline", type=Path, help="also a gateway from this source tree")
    p.add_argument("--prefill", type=int, default=10_000, help="published events in each outbox")
    p.add_argument("--out", type=Path, default=Path("gateway_cpu.json"))
    args = p.parse_args()
    task = json.loads((args.bundle / "manifest.json").read_text())["task"]
    work = workload.make("mail" if args.workload == "mail" else "mix", args.pool, seed=0)
    raw = work.raw_by_text() if work.messages else None
    with (
        tempfile.TemporaryDirectory(prefix="textgate-cpu-") as tmpdir,
        contextlib.ExitStack() as stack,
    ):
        tmp = Path(tmpdir)
        build([args.bundle], tmp / "repo", RepositoryConfig())
        triton_cfg = TritonConfig(http_port=0, grpc_port=0, metrics_port=0, exit_timeout_s=2)
        server = stack.enter_context(TritonServer(tmp / "repo", config=triton_cfg))
        names = ["gateway", "baseline"] if args.baseline else ["gateway"]
        for name in names:  # the outbox file textgate.bench.procs.gateway configures
            prefill(tmp / f"{name}.db", args.prefill)
        procs = [gateway("gateway", server.grpc_url, tmp, coalesce=True)]
        if args.baseline:
            procs.append(gateway("baseline", server.grpc_url, tmp, False, src=args.baseline))
        stack.enter_context(started(procs))
        for proc in procs:
            if not proc.wait():
                sys.exit(f"{proc.name} did not start:\n{proc.tail()}")
        rounds: dict[str, list[dict[str, float]]] = {pr.name: [] for pr in procs}
        for r in range(args.rounds):
            for proc in procs[r % len(procs) :] + procs[: r % len(procs)]:
                tgt = target(proc, task, raw, args.concurrency)
                row = asyncio.run(measure(proc, tgt, work.texts, args.n, args.concurrency))
                rounds[proc.name].append(row)
                print(f"# round {r + 1} {proc.name}: {row}", file=sys.stderr, flush=True)
    report(args, work, rounds)
    return 0


def report(args: argparse.Namespace, work: Any, rounds: dict[str, list[dict[str, float]]]) -> None:
    med = {n: {k: statistics.median(x[k] for x in v) for k in v[0]} for n, v in rounds.items()}
    result: dict[str, Any] = {
        "workload": args.workload,
        "pool": work.describe(),
        "n": args.n,
        "concurrency": args.concurrency,
        "rounds": rounds,
        "median": med,
    }
    for name, m in med.items():
        prefix = "" if name == "gateway" else f"{name}_"
        print(f"{prefix}gateway_cpu_us_per_request: {m['gateway_cpu_us_per_request']:.0f}")
        print(f"{prefix}tree_cpu_us_per_request: {m['tree_cpu_us_per_request']:.0f}")
        print(f"{prefix}loop_thread_cpu_us_per_request: {m['loop_thread_cpu_us_per_request']:.0f}")
        print(f"{prefix}texts_per_s: {m['texts_per_s']:.1f}")
        print(f"{prefix}errors: {m['errors']:.0f}")
    if "baseline" in med:
        new, old = med["gateway"], med["baseline"]
        keys = (
            "gateway_cpu_us_per_request",
            "tree_cpu_us_per_request",
            "loop_thread_cpu_us_per_request",
            "texts_per_s",
        )
        ratios = {f"{k.removesuffix('_us_per_request')}_vs_baseline": new[k] / old[k] for k in keys}
        result["ratios"] = ratios
        for k, v in ratios.items():
            print(f"{k}: {v:.2f}")
    args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())

"""Side by side, one run: the gateway with and without coalescing, and Triton direct.

    python benchmarks/coalesce_ab.py --bundle B [--workload mix|mail] [--rounds 3]
        [--concurrency 32] [--seconds 5] [--baseline SRC] [--out FILE]

``--baseline SRC``: one more gateway, run from another checkout's source tree (e.g. the
previous release, `git archive REV | tar -x -C SRC`), so old and new are measured in one run.

One tritonserver serves the bundle twice: ``<task>`` in the default (fused) shape and
``<task>_b`` bucketed. Three ``textgate serve`` processes sit in front of the fused one:
``gateway.coalesce: true`` with ``coalesce_max_inflight`` 2 and 1, and ``coalesce: false``.
Each round measures every system once (closed loop, ``--concurrency`` clients, one text
per request), the order rotating; the medians of texts/s and P95 and the ratios between
systems are printed as ``name: value`` lines and written as JSON. With ``--workload mail``
the gateways get raw messages (message/rfc822), Triton the extracted text. On a shared box
only the ratios of one run mean anything.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from suite_servers import PY, Proc, started  # benchmarks/ is on sys.path when run as a script

from textgate.bench import workload
from textgate.bench.measurement import Plan, Watch, step, warm_up
from textgate.bench.target import HttpJsonTarget, HttpMailTarget, Target, TritonTarget
from textgate.config import RepositoryConfig, TritonConfig
from textgate.repository import build
from textgate.triton import TritonServer, free_port


def gateway(
    name: str, grpc_url: str, tmp: Path, coalesce: bool, inflight: int = 2, src: Path | None = None
) -> Proc:
    """``textgate serve`` in front of ``grpc_url``; ``src``: another source tree (baseline)."""
    port = free_port()
    cfg = tmp / f"{name}.json"
    gw: dict[str, Any] = {"log_format": "text", "max_in_flight": 64, "max_queue": 256}
    if src is None:  # a baseline predating coalescing knows no coalesce keys
        gw |= {"coalesce": coalesce, "coalesce_max_inflight": inflight}
    cfg.write_text(json.dumps({"gateway": gw, "events": {"outbox_path": str(tmp / f"{name}.db")}}))
    args = ["serve", "--triton", grpc_url, "--port", str(port)]
    cmd = [PY, "-m", "textgate.cli", *args]
    if src is not None:
        boot = f"import sys; sys.path.insert(0, {str(src)!r}); from textgate.cli import main; "
        cmd = [PY, "-c", boot + "sys.exit(main(sys.argv[1:]))", *args]
    proc = Proc(
        name, [*cmd, "--config", str(cfg)], f"http://127.0.0.1:{port}/readyz", tmp / f"{name}.log"
    )
    proc.url = f"http://127.0.0.1:{port}/v1/classify"  # type: ignore[attr-defined]
    return proc


async def measure(
    make: Callable[[], Target], texts: Any, plan: Plan, watch: Watch
) -> dict[str, Any]:
    target = make()
    await target.open()
    try:
        await warm_up(target, texts, 32)
        s = await step(target, texts, plan, watch)
    finally:
        await target.close()
    cpu = sum(p.get("cpu_cores", 0.0) for p in (s.get("processes") or {}).values())
    return {"throughput": s["throughput"], "p95_ms": s["p95_ms"], "errors": s["error_rate"],
            "cpu_cores": cpu}  # fmt: skip


def http_target(proc: Proc, task: str, raw: dict[str, bytes] | None) -> Callable[[], Target]:
    """A closed-loop client of ``proc``'s classify route: raw mail when ``raw`` is given."""
    url = f"{proc.url}/{task}"  # type: ignore[attr-defined]
    if raw:
        return lambda: HttpMailTarget(url, raw, limit=128, name=proc.name)
    return lambda: HttpJsonTarget(url, limit=128, name=proc.name)


Systems = dict[str, tuple[Callable[[], Target], Watch]]


def rotate(
    systems: Systems, texts: Any, plan: Plan, n_rounds: int
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, dict[str, float]]]:
    """Measure every system once a round, the order rotating; (rounds, medians)."""
    names = list(systems)
    rounds: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    for r in range(n_rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            make, watch = systems[name]
            rounds[name].append(asyncio.run(measure(make, texts, plan, watch)))
            print(f"# round {r + 1} {name}: {rounds[name][-1]}", file=sys.stderr, flush=True)
    med = {
        n: {k: statistics.median(x[k] for x in rows) for k in rows[0]} for n, rows in rounds.items()
    }
    return rounds, med


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--workload", choices=["mix", "mail"], default="mix")
    p.add_argument("--n", type=int, default=400)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--out", type=Path, default=Path("coalesce_ab.json"))
    p.add_argument("--baseline", type=Path, help="also a gateway from this source tree")
    args = p.parse_args()
    manifest = json.loads((args.bundle / "manifest.json").read_text())
    task = manifest["task"]
    work = workload.make(args.workload, args.n, seed=0)
    raw = work.raw_by_text() if work.messages else None
    plan = Plan(mode="closed", concurrency=args.concurrency, duration_s=args.seconds)
    with (
        tempfile.TemporaryDirectory(prefix="textgate-ab-") as tmpdir,
        contextlib.ExitStack() as stack,
    ):
        tmp = Path(tmpdir)
        repo = tmp / "repo"
        build([args.bundle], repo, RepositoryConfig())
        build([args.bundle], repo, RepositoryConfig(shape_strategy="bucket"), suffix="_b")
        triton_cfg = TritonConfig(http_port=0, grpc_port=0, metrics_port=0, exit_timeout_s=2)
        server = stack.enter_context(TritonServer(repo, config=triton_cfg))
        procs = [
            gateway("gateway-coalesce", server.grpc_url, tmp, True, 2),
            gateway("gateway-coalesce-1", server.grpc_url, tmp, True, 1),
            gateway("gateway-plain", server.grpc_url, tmp, False),
        ]
        if args.baseline:
            procs.append(
                gateway("gateway-baseline", server.grpc_url, tmp, False, src=args.baseline)
            )
        stack.enter_context(started(procs))
        for proc in procs:
            if not proc.wait():
                sys.exit(f"{proc.name} did not start:\n{proc.tail()}")
        tpid = server.pid or 0

        systems: Systems = {
            "triton-fused": (lambda: TritonTarget(server.grpc_url, task), Watch({"triton": tpid})),
            "triton-bucket": (
                lambda: TritonTarget(server.grpc_url, f"{task}_b"),
                Watch({"triton": tpid}),
            ),
            **{
                pr.name: (http_target(pr, task, raw), Watch({pr.name: pr.proc.pid, "triton": tpid}))
                for pr in procs
            },
        }
        rounds, med = rotate(systems, work.texts, plan, args.rounds)
    tps = {n: m["throughput"] for n, m in med.items()}
    per_cpu = {
        n: m["throughput"] / m["cpu_cores"] if m["cpu_cores"] else 0.0 for n, m in med.items()
    }
    ratios = {
        "coalesce_inflight2_vs_plain": tps["gateway-coalesce"] / tps["gateway-plain"],
        "coalesce_inflight1_vs_plain": tps["gateway-coalesce-1"] / tps["gateway-plain"],
        "gateway_vs_triton_fused": tps["gateway-coalesce"] / tps["triton-fused"],
        "plain_vs_triton_fused": tps["gateway-plain"] / tps["triton-fused"],
        "fused_vs_bucket": tps["triton-fused"] / tps["triton-bucket"],
        "gateway_vs_triton_fused_per_cpu_s": per_cpu["gateway-coalesce"] / per_cpu["triton-fused"],
    }
    if "gateway-baseline" in tps:
        ratios["gateway_vs_baseline"] = tps["gateway-coalesce"] / tps["gateway-baseline"]
    result = {"workload": work.describe(), "concurrency": args.concurrency, "seconds": args.seconds,
              "rounds": rounds, "median": med, "ratios": ratios}  # fmt: skip
    report_ab(args.out, result)
    return 0


def report_ab(out: Path, result: dict[str, Any]) -> None:
    """Write an A/B run's JSON; print each system's medians and each ratio, a line each."""
    out.write_text(json.dumps(result, indent=2))
    for n, m in result["median"].items():
        per_cpu = f", {m['per_cpu_s']:.1f} texts/CPU-s" if "per_cpu_s" in m else ""
        print(
            f"{n}: {m['throughput']:.1f} texts/s, P95 {m['p95_ms']:.0f} ms{per_cpu}, "
            f"err {m['errors']:.3f}"
        )
    for k, v in result["ratios"].items():
        print(f"{k}: {v:.2f}")


if __name__ == "__main__":
    sys.exit(main())

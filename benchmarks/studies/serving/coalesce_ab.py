"""Side by side, one run: the gateway with and without coalescing, and Triton direct.

    python benchmarks/studies/serving/coalesce_ab.py --bundle B [--workload mix|mail] [--rounds 3]
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
import contextlib
import json
import sys
import tempfile
from pathlib import Path

from textgate.bench import workload
from textgate.bench.ab import Systems, http_target, report_ab, rotate
from textgate.bench.measurement import Plan, Watch
from textgate.bench.procs import gateway, started
from textgate.bench.target import TritonTarget
from textgate.config import RepositoryConfig, TritonConfig
from textgate.repository import build
from textgate.triton import TritonServer


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


if __name__ == "__main__":
    sys.exit(main())

"""Load: ``bench`` measures a target, ``tune`` sweeps repository settings for the best one."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from textgate import errors
from textgate.commands.common import (
    Subparsers,
    command,
    console,
    load_config,
    out,
    print_json,
    split_list,
)


def register(sub: Subparsers) -> None:
    _add_bench(sub)
    _add_tune(sub)


def _workload_options(p: argparse.ArgumentParser) -> None:
    w = p.add_argument_group("workload")
    w.add_argument(
        "--workload",
        choices=["mix", "short", "long", "mail", "file"],
        default="mix",
        help="mail: raw messages from the e-mail corpus (the gateway gets them as "
        "message/rfc822, other targets their extracted text)",
    )
    w.add_argument("--file", type=Path, help="workload file: one text per line, or JSONL")
    w.add_argument("--n", type=int, default=2000, help="distinct texts (cycled)")
    w.add_argument("--seed", type=int, default=0, help="workload and arrival seed")
    w.add_argument("--task", default="spam", help="packaged corpus the texts come from")


# --- bench --------------------------------------------------------------------------------


def _add_bench(sub: Subparsers) -> None:
    p = command(
        sub,
        "bench",
        help="load-test Triton, the gateway or any v2-protocol URL; JSON report and plot",
        description="Send a seeded workload (mix: 70 %% under 100 characters, 20 %% 100-500, "
        "10 %% 500-2000, from the packaged corpus; short; long; or your file) to a target. "
        "Load: open loop (Poisson arrivals at --rate; latency from the intended send time), "
        "closed loop (--concurrency users), or a ramp that raises the rate until P99 exceeds "
        "--slo-ms or errors exceed 0.1 %% and reports the last rate that held. Reports "
        "P50/P95/P99/max, throughput, errors by code, server CPU and memory (--bundle or "
        "--pid), and Triton's batch sizes and queue time per model.",
        examples=(
            "textgate bench --bundle artifacts/spam --mode ramp --rate 20 "
            "--slo-ms 300 -o bench.json --plot bench.png",
            "textgate bench --target triton --url 127.0.0.1:8001 --model spam "
            "--mode closed --concurrency 32 --duration 30",
            "textgate bench --target gateway --url http://127.0.0.1:8080 --model spam "
            "--mode open --rate 100",
        ),
    )
    _target_options(p)
    _workload_options(p)
    _load_options(p)
    p.add_argument("-o", "--output", type=Path, help="write the JSON report here")
    p.add_argument("--plot", type=Path, help="write latency vs offered load (PNG) here")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=_run_bench)


def _target_options(p: argparse.ArgumentParser) -> None:
    where = p.add_argument_group("target")
    where.add_argument(
        "--target",
        choices=["triton", "v2", "gateway", "http"],
        default="triton",
        help="triton: gRPC ensemble; v2: KServe v2 HTTP; gateway: POST /v1/classify/MODEL; "
        "http: POST {'text': ...} to --url",
    )
    where.add_argument("--url", help="target address (not with --bundle)")
    where.add_argument("--model", default="spam", help="ensemble / task name (default spam)")
    where.add_argument("--bundle", type=Path, help="serve this bundle on a private tritonserver")
    where.add_argument("--config", type=Path, help="textgate YAML config for --bundle")
    where.add_argument(
        "--pid",
        action="append",
        default=[],
        metavar="NAME=PID",
        help="also watch this process tree's CPU and memory (repeatable)",
    )


def _load_options(p: argparse.ArgumentParser) -> None:
    how = p.add_argument_group("load")
    how.add_argument("--mode", choices=["open", "closed", "ramp"], default="closed")
    how.add_argument("--rate", type=float, default=50.0, help="open/ramp: requests/s (start)")
    how.add_argument("--concurrency", type=int, default=16, help="closed: users")
    how.add_argument("--duration", type=float, default=10.0, help="seconds per step")
    how.add_argument("--max-requests", type=int, default=50_000, help="cap per step")
    how.add_argument("--slo-ms", type=float, default=300.0, help="ramp: P99 bound")
    how.add_argument("--ramp-factor", type=float, default=1.5, help="ramp: rate multiplier")
    how.add_argument("--ramp-steps", type=int, default=8, help="ramp: most steps")


def _bench_plan(args: argparse.Namespace) -> Any:
    from textgate.bench.measurement import Plan

    return Plan(
        mode=args.mode,
        rate=args.rate,
        concurrency=args.concurrency,
        duration_s=args.duration,
        max_requests=args.max_requests,
        slo_p99_ms=args.slo_ms,
        ramp_factor=args.ramp_factor,
        ramp_steps=args.ramp_steps,
        seed=args.seed,
    )


def _run_bench(args: argparse.Namespace) -> int:
    import asyncio
    import contextlib

    from textgate.bench import measurement, report, target, workload

    if (args.bundle is None) == (args.url is None):
        raise errors.ConfigError("url", "give exactly one of --url and --bundle")
    plan = _bench_plan(args)
    work = workload.make(args.workload, args.n, seed=args.seed, task=args.task, file=args.file)
    pids = dict(_pid_arg(s) for s in args.pid)
    with contextlib.ExitStack() as stack:
        if args.bundle is not None:
            from textgate.bench.server import serve

            settings = load_config(args.config).repository
            served = stack.enter_context(serve(args.bundle, settings))
            url, kind = served.server.grpc_url, "triton"
            pids["triton"] = served.server.pid or 0
            models = served.models
        else:
            url, kind = args.url, args.target
            models = [args.model] if kind == "triton" else []  # statistics need gRPC
        tgt = target.make(kind, url, model=args.model, messages=work.raw_by_text() or None)
        watch = measurement.Watch(pids=pids, triton_url=url if models else None, models=models)
        result = asyncio.run(
            measurement.measure(tgt, work.texts, plan, watch, progress=not args.no_progress)
        )
    result["workload"] = work.describe()
    if args.output:
        report.write_json(result, args.output)
    if args.plot:
        report.plot_load(result["steps"], args.plot, f"{tgt.name}, {work.name}")
    _print_bench(result) if not args.json else print_json(result)
    return 0


def _pid_arg(text: str) -> tuple[str, int]:
    name, _, pid = text.partition("=")
    if not pid.isdigit():
        raise errors.ConfigError("pid", f"--pid {text!r} is not NAME=PID")
    return name, int(pid)


def _print_bench(result: dict[str, Any]) -> None:
    for s in result["steps"]:
        load = f"{s['offered_rate']:.1f}/s" if s["offered_rate"] else f"c={s['concurrency']}"
        errs = ", ".join(f"{k}: {v}" for k, v in s["errors"].items()) or "none"
        out.print(
            f"{load:>9}  {s['throughput']:7.1f} req/s  P50 {s['p50_ms']:6.1f}  P95 "
            f"{s['p95_ms']:6.1f}  P99 {s['p99_ms']:6.1f}  max {s['max_ms']:6.1f} ms  "
            f"errors {errs}",
            highlight=False,
            soft_wrap=True,
        )
        for model, t in (s.get("triton") or {}).items():
            out.print(
                f"           {model}: mean batch {t['mean_batch']:.1f}, queue "
                f"{t['queue_ms_per_request']:.1f} ms/request",
                highlight=False,
            )
    if result["plan"]["mode"] == "ramp":
        held = result["held_rate"]
        out.print(f"held rate: {'none' if held is None else f'{held:.1f}/s'}", highlight=False)


# --- tune ---------------------------------------------------------------------------------


def _add_tune(sub: Subparsers) -> None:
    p = command(
        sub,
        "tune",
        help="sweep queue delay, preferred batch sizes, buckets and instances; write a config",
        description="Serve the bundle with each candidate repository configuration (max "
        "queue delay, preferred batch sizes, bucket lengths, instance count; at most "
        "--max-points), measure P99 at --rate requests/s and the peak throughput of "
        "--concurrency users, and write the best-throughput candidate whose P99 held --slo-ms "
        "as a config file for `textgate repo build --config`.",
        examples=(
            "textgate tune artifacts/spam --rate 40 --slo-ms 300 -o tuned.yaml",
            "textgate tune artifacts/spam --delays 0,4000 --instances 1 --max-points 4 "
            "--duration 5 -o tuned.yaml",
        ),
    )
    p.add_argument("bundle", type=Path, help="bundle directory")
    p.add_argument("-o", "--output", type=Path, required=True, help="config file to write")
    p.add_argument("--config", type=Path, help="base textgate YAML config")
    p.add_argument("--rate", type=float, default=40.0, help="load (requests/s) for the SLO check")
    p.add_argument("--concurrency", type=int, default=32, help="users for peak throughput")
    p.add_argument("--slo-ms", type=float, default=300.0, help="P99 bound at --rate")
    p.add_argument("--duration", type=float, default=8.0, help="seconds per measurement")
    p.add_argument("--delays", default="0,2000,8000", help="max queue delays (µs)")
    p.add_argument("--preferred", default="none;8,16", help="preferred sizes sets, ';'-separated")
    p.add_argument(
        "--buckets", default="16,32,64,128,256;32,64,128,256", help="bucket sets, ';'-separated"
    )
    p.add_argument("--instances", default="1,2", help="model instance counts")
    p.add_argument("--max-points", type=int, default=12, help="most candidates to serve")
    p.add_argument("--report", type=Path, help="write every point as JSON here")
    _workload_options(p)
    p.set_defaults(handler=_run_tune)


def _int_sets(text: str) -> tuple[tuple[int, ...], ...]:
    """``"none;8,16"`` -> ``((), (8, 16))``: sets split on ';', integers on ','."""
    return tuple(
        tuple(int(v) for v in split_list(part)) if part.strip() != "none" else ()
        for part in text.split(";")
    )


def _grid(args: argparse.Namespace) -> Any:
    from textgate.bench import tune

    try:
        return tune.Grid(
            delays_us=_int_sets(args.delays)[0],
            preferred=_int_sets(args.preferred),
            buckets=_int_sets(args.buckets),
            instances=_int_sets(args.instances)[0],
            max_points=args.max_points,
        )
    except ValueError:
        raise errors.ConfigError("tune", "grid values are comma-separated integers") from None


def _run_tune(args: argparse.Namespace) -> int:
    import asyncio

    from textgate.bench import report, tune, workload

    grid = _grid(args)
    cfg = load_config(args.config)
    work = workload.make(args.workload, args.n, seed=args.seed, task=args.task, file=args.file)
    result = asyncio.run(
        tune.sweep(
            args.bundle,
            cfg.repository,
            grid,
            work.texts,
            rate=args.rate,
            concurrency=args.concurrency,
            duration_s=args.duration,
            slo_p99_ms=args.slo_ms,
            triton=cfg.triton,
            log=lambda m: console.print(m, highlight=False, markup=False),
        )
    )
    if args.report:
        report.write_json(result, args.report)
    best = result["best"]
    if best is None:
        raise errors.TextgateError(
            f"no candidate kept P99 within {args.slo_ms:g} ms at {args.rate:g} requests/s",
            hint="lower --rate or raise --slo-ms",
        )
    note = (
        f"textgate tune: best of {len(result['points'])} at {args.rate:g}/s, "
        f"P99 <= {args.slo_ms:g} ms: {best['throughput']:.0f} texts/s peak"
    )
    tune.write_config(tune.chosen_config(cfg.repository, best), args.output, note)
    out.print(f"{note}\n{best['knobs']}\nwrote {args.output}", highlight=False)
    return 0

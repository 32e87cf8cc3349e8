"""`make bench` / `make bench-quick`: textgate against its ceiling, a naive server and a peer.

    python benchmarks/suite/suite.py [--quick] [--bundle artifacts/spam] [--out FILE]

Every figure is a ratio of two measurements taken in the same run, interleaved (each round
measures every system once, the order rotating) and repeated; medians and ranges are
reported, because this machine is shared and noisy (±20 %). Servers start side by side and
stay up for the whole run, stopped (SIGSTOP) while another system is measured, because an
idle server is not always idle (``textgate.bench.procs.paused``); the load generator runs in this
process.

    ceiling   bare ONNX Runtime, same model file and thread count, pre-tokenized texts,
              length-sorted batches of 8 (textgate.bench.ceiling)
    triton    textgate's repository on tritonserver (gRPC ensemble), one per shape strategy
    gateway   `textgate serve --triton <the default-strategy server>` (HTTP), if installed
    naive     FastAPI + transformers pipeline (PyTorch), one request at a time
    peer      LitServe with batching, ONNX Runtime on the same variant (best of its configs)

Servers are compared by their best throughput at P95 <= --p95-ms over a ladder of
concurrencies (closed loop; --workload mix, or mail: raw messages from the e-mail corpus
to the gateway as message/rfc822, the same messages' extracted text to every other system).
Prints one `name: value` line per ratio and writes everything to benchmarks/results/latest.json.

Over 400 lines because it is one script run as one command: its inputs, the servers, the
interleaved rounds and the stream's bookkeeping read top to bottom; the reusable parts
(servers, targets, workloads, summary) already live in ``textgate.bench``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from textgate.bench import ceiling, report, stream, workload
from textgate.bench.measurement import Watch, gateway_counts, step, warm_up
from textgate.bench.procs import (
    Proc,
    paused,
    running_for,
    start_gateway,
    start_naive,
    start_peer,
    started,
)
from textgate.bench.server import Served, serve
from textgate.bench.summary import GOALS, OPEN_SHARE, plot_systems, summarize
from textgate.bench.target import (
    HttpJsonTarget,
    HttpMailTarget,
    Target,
    TritonTarget,
    gateway_url,
)
from textgate.config import Config
from textgate.errors import TextgateError

HERE = Path(__file__).resolve().parent  # the naive and peer servers' scripts sit beside it
ROOT = HERE.parents[1]


@dataclass(frozen=True)
class Profile:
    rounds: int
    n: int
    step_s: float
    strategies: tuple[str, ...]
    # LitServe (max_batch_size, batch_timeout_ms, workers): as many single-threaded workers
    # as cores is the peer's twin of textgate's default engine (several one-thread instances)
    peers: tuple[tuple[int, float, int], ...]
    ladder: tuple[int, ...]  # concurrencies for batching servers
    naive_ladder: tuple[int, ...]


FULL = Profile(
    3,
    1000,
    6.0,
    ("bucket", "fixed", "fused"),
    ((8, 5.0, 1), (16, 10.0, 1), (16, 10.0, 2)),
    (4, 8, 16, 32, 64),
    (1, 2, 4),
)
STREAM_N = 18_000  # every distinct real message once, plus re-sends (textgate.bench.stream)
QUICK = Profile(1, 400, 3.0, (), ((16, 10.0, 1), (16, 10.0, 2)), (8, 16, 32), (1, 4))


# --- inputs ------------------------------------------------------------------------------


def find_bundle(given: Path | None) -> Path:
    from textgate.build import builds_dir

    candidates = [given] if given else [ROOT / "artifacts" / "spam"]
    candidates += sorted(builds_dir().glob("spam-*/bundle"), key=lambda p: p.stat().st_mtime)[::-1]
    for c in candidates:
        if c and (c / "manifest.json").is_file():
            return c.resolve()  # the peers run from another directory
    sys.exit("no spam bundle: run `textgate build spam -o artifacts/spam` first (or --bundle)")


def find_checkpoint(bundle: Path) -> Path | None:
    """The fine-tuned checkpoint the bundle was exported from (build cache), for the naive
    baseline; else the manifest's ``source`` when it names a directory."""
    from textgate.build import builds_dir

    manifest = json.loads((bundle / "manifest.json").read_text())
    # The build cache: <task>-<train key>/checkpoint beside bundles/<export key>/.
    for built in builds_dir().glob("*/bundles/*/manifest.json"):
        with contextlib.suppress(OSError, ValueError):
            if json.loads(built.read_text()).get("files") == manifest.get("files"):
                ckpt = built.parent.parent.parent / "checkpoint"
                if (ckpt / "config.json").is_file():
                    return ckpt
    source = manifest.get("source") or {}
    name = source.get("checkpoint") if isinstance(source, dict) else None
    # The manifest records the checkpoint directory's name; look beside the bundle.
    for cand in [bundle.parent / name, Path(name)] if name else []:
        if (cand / "config.json").is_file():
            return cand
    return None


# --- measurements --------------------------------------------------------------------------


async def ladder(
    make: Callable[[], Target],
    texts: Sequence[str],
    concurrencies: Sequence[int],
    step_s: float,
    p95_ms: float,
    watch: Watch,
) -> dict[str, Any]:
    """Closed-loop steps up the ladder. ``best``: the best throughput at P95 <= the bound;
    ``peak``: the best throughput at all (for the ceiling, which has no latency bound). The
    ladder stops once P95 passes 3x the bound or throughput stops growing past the bound."""
    from textgate.bench.measurement import Plan

    target = make()
    await target.open()
    points: list[dict[str, Any]] = []
    try:
        await warm_up(target, texts, 32)
        for c in concurrencies:
            plan = Plan(mode="closed", concurrency=c, duration_s=step_s)
            s = await step(target, texts, plan, watch)
            points.append(s)
            over = s["p95_ms"] > p95_ms
            flat = len(points) > 1 and s["throughput"] < 1.05 * points[-2]["throughput"]
            if s["error_rate"] > 0.001 or s["p95_ms"] > 3 * p95_ms or (over and flat):
                break
    finally:
        await target.close()
    clean = [p for p in points if p["error_rate"] <= 0.001]
    ok = [p for p in clean if p["p95_ms"] <= p95_ms]
    best = max(ok, key=lambda p: p["throughput"], default=None)
    peak = max(clean, key=lambda p: p["throughput"], default=None)
    return {
        "best": best["throughput"] if best else 0.0,
        "peak": peak["throughput"] if peak else 0.0,
        "best_point": best,
        "points": points,
    }


async def open_at(
    make: Callable[[], Target],
    texts: Sequence[str],
    rate: float,
    duration_s: float,
    watch: Watch,
) -> dict[str, Any]:
    """One open-loop step (Poisson arrivals at ``rate`` requests/s, latency from each
    request's intended send time, so queueing counts)."""
    from textgate.bench.measurement import Plan

    target = make()
    await target.open()
    try:
        await warm_up(target, texts, 16)
        plan = Plan(mode="open", rate=rate, duration_s=duration_s)
        s = await step(target, texts, plan, watch, rate=rate)
    finally:
        await target.close()
    keys = ("offered_rate", "throughput", "requests", "error_rate", "p50_ms", "p95_ms", "p99_ms")
    return {k: s[k] for k in keys}


def measure_ceiling(sess: Any, enc: ceiling.Encoded) -> float:
    return ceiling.throughput(sess, enc, batch_size=8, order="sorted")


# --- the run -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one round, default strategy only")
    p.add_argument("--bundle", type=Path)
    p.add_argument("--checkpoint", type=Path, help="HF checkpoint for the naive baseline")
    p.add_argument("--p95-ms", type=float, default=300.0)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    p.add_argument(
        "--engine-threads",
        type=int,
        help="ONNX Runtime threads per Triton model instance (default: the config's, auto); "
        "the instance count too (TEXTGATE_REPOSITORY__INSTANCE_GROUP__COUNT)",
    )
    p.add_argument(
        "--open-seconds",
        type=float,
        help="length of the gateway's open-loop step at 70 %% of its peak (default: 2 steps)",
    )
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/latest.json")
    p.add_argument("--plot", type=Path, help="throughput/P95 plot (PNG)")
    p.add_argument("--from-json", type=Path, help="print and plot an earlier run's JSON")
    p.add_argument("--no-naive", action="store_true")
    p.add_argument("--no-peer", action="store_true")
    p.add_argument("--no-gateway", action="store_true")
    p.add_argument(
        "--cascade",
        action="store_true",
        help="the gateway answers what the bundle's n-gram stage is sure of without the "
        "transformer (docs/gateway.md, Confidence cascade); off: the full path, as every "
        "other system computes it",
    )
    p.add_argument(
        "--campaign-entries",
        type=int,
        default=0,
        help="the gateway's campaign memory (gateway.campaign_entries; 0: off, as shipped)",
    )
    p.add_argument(
        "--workload",
        choices=["mix", "mail", "stream"],
        default="mix",
        help="mix: SMS-length texts; mail: raw RFC 822 messages to the gateway "
        "(message/rfc822), their extracted text to every other system; stream: the same, "
        "read onward and never replayed, with campaign re-sends (textgate.bench.stream)",
    )
    args = p.parse_args(argv)
    # SIGTERM (timeout, kill) unwinds like Ctrl-C: the servers are stopped and resumed, not
    # left behind stopped, holding ports and memory
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    profile = QUICK if args.quick else FULL
    t_start = time.monotonic()
    if args.from_json:  # re-render lines and plot of an earlier run
        result = json.loads(args.from_json.read_text())
    else:
        result = run(args, profile)
        result["elapsed_s"] = time.monotonic() - t_start
        report.write_json(result, args.out)
    if args.plot:
        plot_systems(result, args.plot)
    for name in GOALS:
        print(f"{name}: {result['lines'].get(name, 'n/a')}")
    if not args.from_json:
        print(
            f"# wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}"
            f" in {result['elapsed_s']:.0f} s",
            file=sys.stderr,
        )
    return 0


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace, profile: Profile) -> dict[str, Any]:
    bundle = find_bundle(args.bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    settings = Config.load().repository  # the shipped engine defaults unless told otherwise
    if args.engine_threads is not None:
        settings = dataclasses.replace(settings, ort_intra_op_threads=args.engine_threads)
    default = settings.strategy
    strategies = list(dict.fromkeys([default, *profile.strategies]))
    # a stream is read onward by every system (never replayed): as long as the corpus allows
    if args.workload == "stream":
        work = stream.campaign_stream(STREAM_N, seed=0)
    else:
        work = workload.make(args.workload, profile.n, seed=0)
    texts = work.texts
    args.messages = work.raw_by_text() if work.messages else None
    log(
        f"bundle {bundle.name} ({manifest.get('task')}), {len(texts)} {work.name} texts, "
        f"strategies {strategies}, threads {args.threads}"
    )
    with (
        tempfile.TemporaryDirectory(prefix="textgate-suite-") as tmpdir,
        contextlib.ExitStack() as stack,
    ):
        tmp = Path(tmpdir)
        tritons: dict[str, Served] = {}
        for strategy in strategies:
            # the profile's names are RepositoryConfig's own strategies ("bucket", ...)
            s = dataclasses.replace(settings, shape_strategy=cast(Any, strategy))
            tritons[strategy] = stack.enter_context(serve(bundle, s))
            log(f"triton {strategy} ready: {tritons[strategy].task.variant}")
        variant = tritons[default].task.variant
        procs: list[Proc] = []
        stack.enter_context(started(procs))
        http: dict[str, tuple[str, int]] = {}  # system -> (url, root pid)
        grpc = tritons[default].server.grpc_url
        memory = args.campaign_entries
        if not args.no_gateway and (g := start_gateway(grpc, tmp, args.cascade, memory)):
            procs.append(g[0])
            http["gateway"] = (gateway_url(g[1], manifest["task"]), g[0].proc.pid)
        ckpt = None if args.no_naive else (args.checkpoint or find_checkpoint(bundle))
        if ckpt is not None:
            n_proc, n_url = start_naive(HERE / "naive_server.py", ckpt, tmp, args.threads)
            procs.append(n_proc)
            http["naive"] = (n_url, n_proc.proc.pid)
        if not args.no_peer:
            for peer in profile.peers:
                pp, p_url = start_peer(
                    HERE / "peer_litserve.py", bundle, variant, tmp, args.threads, peer
                )
                procs.append(pp)
                http[pp.name] = (p_url, pp.proc.pid)
        for proc in procs:
            if not proc.wait():
                log(f"{proc.name} did not start; left out:\n{proc.tail()}")
                http = {k: v for k, v in http.items() if v[1] != proc.proc.pid}
        log(f"servers ready: {', '.join(['triton-' + s for s in tritons] + list(http))}")
        result = measure_all(args, profile, bundle, manifest, tritons, http, work, ckpt)
        if "gateway" in http:  # which path answered, and how often the memory did
            result["gateway_paths"] = gateway_counts(http["gateway"][0].split("/v1/", 1)[0])
        return result


def measure_all(
    args: argparse.Namespace,
    profile: Profile,
    bundle: Path,
    manifest: dict[str, Any],
    tritons: dict[str, Served],
    http: dict[str, tuple[str, int]],
    work: workload.Workload,
    ckpt: Path | None,
) -> dict[str, Any]:
    texts = work.texts
    default = next(iter(tritons))
    task = tritons[default].task
    pool = texts[: profile.n]  # the ceiling's batches (a stream's first arrivals)
    enc = ceiling.encode(bundle / task.tokenizer_file, pool, task.max_length, task.tail_tokens)
    # each system reads its own copy of the stream onward, across steps and rounds
    streams = {n: stream.Cursor(texts) for n in ["triton-" + s for s in tritons] + [*http]}
    sess = ceiling.session(bundle / task.model_file, args.threads)
    fp32 = ceiling.session(bundle / manifest["variants"]["fp32"]["file"], args.threads)
    # int8 is measured even when the export gate rejected it: what would it have bought?
    int8_file = (manifest["variants"].get("int8") or {}).get("file")
    int8 = ceiling.session(bundle / int8_file, args.threads) if int8_file else None
    rounds: list[dict[str, Any]] = []
    systems: list[str] = ["ceiling", *[f"triton-{s}" for s in tritons], *http]
    for r in range(profile.rounds):
        order = systems[r % len(systems) :] + systems[: r % len(systems)]
        got: dict[str, Any] = {}
        roots = [t.server.pid or 0 for t in tritons.values()] + [v[1] for v in http.values()]
        for name in list(order):
            idle = [pid for pid in roots if pid not in running_for(name, tritons, http)]
            try:
                with paused(idle):
                    if name == "ceiling":
                        got["ceiling"], got["ceiling_cpu"] = ceiling.measure(
                            sess, enc, batch_size=8
                        )
                    else:
                        mine = streams[name] if work.name == "stream" else texts
                        got[name] = measure_one(name, args, profile, tritons, http, mine, sess, enc)
            except TextgateError as exc:  # one broken system must not lose the others
                log(f"{name} failed, left out: {exc.message}")
                systems.remove(name)
                http.pop(name, None)
                continue
            v = got[name]
            shown = (
                f"{v:.1f}" if isinstance(v, float) else f"{v['best']:.1f} (peak {v['peak']:.1f})"
            )
            log(f"round {r + 1}/{profile.rounds} {name}: {shown} texts/s")
        if r == 0 or not args.quick:
            with paused(roots):
                got["ceiling_fp32"] = measure_ceiling(fp32, enc)
                if int8 is not None:
                    got["ceiling_int8"] = measure_ceiling(int8, enc)
                got["ceiling_arrival"] = ceiling.throughput(
                    sess, enc, batch_size=8, order="arrival"
                )
        rounds.append(got)
    result = summarize(
        args, profile, manifest, tritons, http, work, rounds, enc, (sess, fp32, int8), bundle, ckpt
    )
    if work.name == "stream":  # how far each system read; a wrap would replay arrivals
        result["stream"] = {n: {"read": c.read, "wraps": c.wraps} for n, c in streams.items()}
    return result


def measure_one(
    name: str,
    args: argparse.Namespace,
    profile: Profile,
    tritons: dict[str, Served],
    http: dict[str, tuple[str, int]],
    texts: Sequence[str],
    sess: Any,
    enc: ceiling.Encoded,
) -> Any:
    if name == "ceiling":
        return measure_ceiling(sess, enc)
    default = next(iter(tritons))
    if name.startswith("triton-"):
        served = tritons[name.removeprefix("triton-")]
        url = served.server.grpc_url
        watch = Watch({"triton": served.server.pid or 0}, url, served.models)
        return asyncio.run(
            ladder(
                lambda: TritonTarget(url, served.task.ensemble),
                texts,
                profile.ladder,
                profile.step_s,
                args.p95_ms,
                watch,
            )
        )
    url, pid = http[name]
    pids = {name: pid}
    if name == "gateway":
        pids["triton"] = tritons[default].server.pid or 0
    steps = profile.naive_ladder if name == "naive" else profile.ladder
    messages = getattr(args, "messages", None)
    make: Callable[[], Target] = functools.partial(HttpJsonTarget, url, limit=128, name=name)
    if name == "gateway" and messages:  # the mail workload: the gateway parses the mail
        make = functools.partial(HttpMailTarget, url, messages, limit=128, name=name)
    got = asyncio.run(ladder(make, texts, steps, profile.step_s, args.p95_ms, Watch(pids)))
    if name == "gateway" and got["peak"] > 0:  # one text a request: texts/s = requests/s
        rate = OPEN_SHARE * got["peak"]
        seconds = args.open_seconds or 2 * profile.step_s
        got["open"] = asyncio.run(open_at(make, texts, rate, seconds, Watch(pids)))
        log(f"gateway open loop at {rate:.0f}/s: P99 {got['open']['p99_ms']:.0f} ms")
    return got


if __name__ == "__main__":
    sys.exit(main())

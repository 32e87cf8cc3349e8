"""`make bench` / `make bench-quick`: textgate against its ceiling, a naive server and a peer.

    python benchmarks/suite.py [--quick] [--bundle artifacts/spam] [--out FILE]

Every figure is a ratio of two measurements taken in the same run, interleaved (each round
measures every system once, the order rotating) and repeated; medians and ranges are
reported, because this machine is shared and noisy (±20 %). Servers start side by side and
stay up for the whole run, stopped (SIGSTOP) while another system is measured, because an
idle server is not always idle (see ``paused``); the load generator runs in this process.

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
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textgate.bench import ceiling, padding, report, workload
from textgate.bench.measurement import Watch, step, warm_up
from textgate.bench.server import Served, serve
from textgate.bench.target import (
    HttpJsonTarget,
    HttpMailTarget,
    Target,
    TritonTarget,
    gateway_url,
)
from textgate.config import Config
from textgate.errors import TextgateError
from textgate.triton import free_port

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
GOALS = {
    "triton_vs_ceiling": ">= 0.90",
    "gateway_vs_ceiling": ">= 0.75",
    "vs_naive": ">= 6",
    "vs_peer": ">= 2.0",
    "padding_ratio": "<= 1.15",
    "gateway_p99_open": "<= 150 ms",
    "rss_mb": "(report)",
}
# The open-loop check offers this share of the gateway's closed-loop peak (requests/s):
# "P99 at 70 % of capacity", where a service is run with headroom.
OPEN_SHARE = 0.7


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


# --- servers -------------------------------------------------------------------------------


class Proc:
    """A server subprocess in its own process group, ready when ``health`` answers 200."""

    def __init__(self, name: str, cmd: Sequence[str], health: str, log: Path) -> None:
        self.name, self.health, self.log = name, health, log
        with open(log, "wb") as fh:
            self.proc = subprocess.Popen(
                list(cmd), stdout=fh, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT
            )

    def wait(self, timeout_s: float = 240.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(self.health, timeout=2) as r,
            ):
                if r.status == 200:
                    return True
            time.sleep(1.0)
        return False

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=15)

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])


@contextlib.contextmanager
def started(procs: list[Proc]) -> Iterator[None]:
    try:
        yield
    finally:
        for p in procs:
            p.stop()


@contextlib.contextmanager
def paused(roots: Sequence[int]) -> Iterator[None]:
    """The idle servers' process trees stopped (SIGSTOP) while one system is measured.
    Idle is not free: LitServe's batching workers poll their queue every millisecond, so
    three peers took about half a core here while nothing was sent to them, from whatever
    was being measured on the same two cores. Resumed in reverse order (each Triton before
    the gateway that calls it)."""
    trees = [report.descendants(pid) for pid in roots if pid]
    for tree in trees:
        _signal(tree, signal.SIGSTOP)
    try:
        yield
    finally:
        for tree in reversed(trees):
            _signal(tree, signal.SIGCONT)


def _signal(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def running_for(
    name: str, tritons: dict[str, Served], http: dict[str, tuple[str, int]]
) -> set[int]:
    """The server roots ``name``'s measurement needs: itself, and the gateway's Triton."""
    default = next(iter(tritons))
    if name.startswith("triton-"):
        return {tritons[name.removeprefix("triton-")].server.pid or 0}
    keep = {http[name][1]} if name in http else set()
    if name == "gateway":
        keep.add(tritons[default].server.pid or 0)
    return keep


def start_gateway(grpc_url: str, tmp: Path) -> tuple[Proc, str] | None:
    try:
        import textgate.gateway.app  # noqa: F401
    except ImportError:
        return None
    port = free_port()
    cfg = tmp / "gateway.yaml"
    cfg.write_text(
        json.dumps(
            {
                "gateway": {"log_format": "text", "max_in_flight": 64, "max_queue": 256},
                "events": {"outbox_path": str(tmp / "events.sqlite3")},
            }
        )
    )
    cmd = [PY, "-m", "textgate.cli", "serve", "--triton", grpc_url, "--port", str(port)]
    proc = Proc(
        "gateway",
        [*cmd, "--config", str(cfg)],
        f"http://127.0.0.1:{port}/readyz",
        tmp / "gateway.log",
    )
    return proc, f"http://127.0.0.1:{port}"


def start_naive(ckpt: Path, tmp: Path, threads: int) -> tuple[Proc, str]:
    port = free_port()
    cmd = [
        PY,
        str(ROOT / "benchmarks/naive_server.py"),
        str(ckpt),
        "--port",
        str(port),
        "--threads",
        str(threads),
    ]
    health = f"http://127.0.0.1:{port}/health"
    return Proc("naive", cmd, health, tmp / "naive.log"), f"http://127.0.0.1:{port}/classify"


def start_peer(
    bundle: Path, variant: str, tmp: Path, threads: int, peer: tuple[int, float, int]
) -> tuple[Proc, str]:
    batch, timeout_ms, workers = peer
    port = free_port()
    cmd = [
        PY,
        str(ROOT / "benchmarks/peer_litserve.py"),
        str(bundle),
        "--variant",
        variant,
        "--port",
        str(port),
        "--threads",
        str(max(1, threads // workers)),
        "--workers",
        str(workers),
        "--max-batch-size",
        str(batch),
        "--batch-timeout-ms",
        str(timeout_ms),
    ]
    name = f"peer b{batch} t{timeout_ms:g}ms" + (f" w{workers}" if workers > 1 else "")
    health = f"http://127.0.0.1:{port}/health"
    log = tmp / f"peer-{batch}-{workers}.log"
    return Proc(name, cmd, health, log), f"http://127.0.0.1:{port}/predict"


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
        "--workload",
        choices=["mix", "mail"],
        default="mix",
        help="mix: SMS-length texts; mail: raw RFC 822 messages to the gateway "
        "(message/rfc822), their extracted text to every other system",
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
            s = dataclasses.replace(settings, shape_strategy=strategy)
            tritons[strategy] = stack.enter_context(serve(bundle, s))
            log(f"triton {strategy} ready: {tritons[strategy].task.variant}")
        variant = tritons[default].task.variant
        procs: list[Proc] = []
        stack.enter_context(started(procs))
        http: dict[str, tuple[str, int]] = {}  # system -> (url, root pid)
        if not args.no_gateway and (g := start_gateway(tritons[default].server.grpc_url, tmp)):
            procs.append(g[0])
            http["gateway"] = (gateway_url(g[1], manifest["task"]), g[0].proc.pid)
        ckpt = None if args.no_naive else (args.checkpoint or find_checkpoint(bundle))
        if ckpt is not None:
            n_proc, n_url = start_naive(ckpt, tmp, args.threads)
            procs.append(n_proc)
            http["naive"] = (n_url, n_proc.proc.pid)
        if not args.no_peer:
            for peer in profile.peers:
                pp, p_url = start_peer(bundle, variant, tmp, args.threads, peer)
                procs.append(pp)
                http[pp.name] = (p_url, pp.proc.pid)
        for proc in procs:
            if not proc.wait():
                log(f"{proc.name} did not start; left out:\n{proc.tail()}")
                http = {k: v for k, v in http.items() if v[1] != proc.proc.pid}
        log(f"servers ready: {', '.join(['triton-' + s for s in tritons] + list(http))}")
        return measure_all(args, profile, bundle, manifest, tritons, http, work, ckpt)


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
    enc = ceiling.encode(bundle / task.tokenizer_file, texts, task.max_length)
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
                        got[name] = measure_one(
                            name, args, profile, tritons, http, texts, sess, enc
                        )
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
    return summarize(
        args, profile, manifest, tritons, http, work, rounds, enc, (sess, fp32, int8), bundle, ckpt
    )


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


def _value(x: Any, key: str) -> float:
    return x if isinstance(x, float) else float(x[key])


def _ratio_series(rounds: list[dict[str, Any]], a: str, b: str, key: str) -> list[float]:
    out = []
    for r in rounds:
        if a in r and b in r:
            den = _value(r[b], key)
            out.append(_value(r[a], key) / den if den else float("nan"))
    return out


def _cpu_series(rounds: list[dict[str, Any]], name: str) -> list[float]:
    """(texts per CPU-second of the server processes at the peak point) / (the ceiling's)."""
    out = []
    for r in rounds:
        if name not in r or "ceiling_cpu" not in r:
            continue
        peak = max(r[name]["points"], key=lambda p: p["throughput"])
        cores = sum(x["cpu_cores"] for x in peak["processes"].values())
        out.append(peak["throughput"] / cores / r["ceiling_cpu"] if cores else float("nan"))
    return out


def _per_round(rounds: list[dict[str, Any]], front: str, key: str) -> list[float]:
    """front / the best LitServe configuration of the same round."""
    out = []
    for r in rounds:
        peer = max((v[key] for k, v in r.items() if k.startswith("peer")), default=0.0)
        out.append(r[front][key] / peer if peer and front in r else float("nan"))
    return out


def _fmt(s: dict[str, float], digits: int = 2) -> str:
    return (
        f"{s['median']:.{digits}f} (range {s['min']:.{digits}f}-{s['max']:.{digits}f}, n={s['n']})"
    )


def summarize(
    args: argparse.Namespace,
    profile: Profile,
    manifest: dict[str, Any],
    tritons: dict[str, Served],
    http: dict[str, tuple[str, int]],
    work: workload.Workload,
    rounds: list[dict[str, Any]],
    enc: ceiling.Encoded,
    sessions: tuple[Any, Any, Any],
    bundle: Path,
    ckpt: Path | None,
) -> dict[str, Any]:
    default = next(iter(tritons))
    tri = f"triton-{default}"
    lines: dict[str, str] = {}
    ratios: dict[str, Any] = {}

    def put(
        name: str,
        series: list[float],
        note: str,
        peak: list[float] | None = None,
        cpu: list[float] | None = None,
    ) -> None:
        s = report.spread(series)
        ratios[name] = {**s, "series": series, "goal": GOALS[name], "note": note}
        text = _fmt(s) if s["n"] else f"none held P95<={args.p95_ms:g}ms"
        if cpu is not None:  # texts per CPU-second: robust to what the neighbours take
            ratios[name]["per_cpu_second"] = {**report.spread(cpu), "series": cpu}
            text += f"; per CPU-second {_fmt(report.spread(cpu))}"
        if peak is not None:  # the same ratio without the latency bound, for context
            ratios[name]["peak"] = {**report.spread(peak), "series": peak}
            text += f"; at peak {_fmt(report.spread(peak))}"
        lines[name] = f"{text}  goal {GOALS[name]}  [{note}]"

    put(
        "triton_vs_ceiling",
        _ratio_series(rounds, tri, "ceiling", "peak"),
        f"{tri} peak texts/s / bare ORT sorted batches",
        cpu=_cpu_series(rounds, tri),
    )
    if "gateway" in http:
        put(
            "gateway_vs_ceiling",
            _ratio_series(rounds, "gateway", "ceiling", "peak"),
            "gateway (HTTP) peak texts/s / bare ORT",
            cpu=_cpu_series(rounds, "gateway"),
        )
    front = "gateway" if "gateway" in http else tri
    if "naive" in http:
        put(
            "vs_naive",
            _ratio_series(rounds, front, "naive", "best"),
            f"{front} / FastAPI+pipeline, texts/s at P95<={args.p95_ms:g}ms",
            _ratio_series(rounds, front, "naive", "peak"),
        )
    if any(k.startswith("peer") for k in http):
        put(
            "vs_peer",
            _per_round(rounds, front, "best"),
            f"{front} / best LitServe config, texts/s at P95<={args.p95_ms:g}ms",
            _per_round(rounds, front, "peak"),
        )
    if "gateway" in http:
        open_line(rounds, lines, ratios)
    pad = padding_figures(tritons, rounds, enc)
    ratios["padding_ratio"] = {**pad, "goal": GOALS["padding_ratio"]}
    lines["padding_ratio"] = (
        f"{pad[default]:.2f} ({default}; fixed {pad['fixed']:.2f}, bucket {pad['bucket']:.2f}"
        + (f", fused {pad['fused']:.2f}" if "fused" in pad else "")
        + f", ceiling sorted {pad['sorted']:.2f})  goal {GOALS['padding_ratio']}"
    )
    mem = memory(rounds, tri, http)
    ratios["rss_mb"] = mem
    lines["rss_mb"] = (
        f"{mem['under_load']:.0f} under load, {mem['at_rest']:.0f} at rest "
        f"({' + '.join(mem['parts'])})"
    )
    variants = variant_figures(rounds, enc, sessions, tritons[default].task.variant)
    return {
        "lines": lines,
        "ratios": ratios,
        "variants": variants,
        "strategies": strategy_table(tritons, rounds),
        "systems": {k: v for k, v in rounds[-1].items()},
        "rounds": rounds,
        "profile": dataclasses.asdict(profile),
        "workload": work.describe(),
        "bundle": {
            "name": bundle.name,
            "task": manifest.get("task"),
            "variant": tritons[default].task.variant,
            "max_length": manifest.get("max_length"),
            "checkpoint_found": bool(ckpt),
        },
        "machine": machine(),
        "p95_bound_ms": args.p95_ms,
        "threads": args.threads,
    }


def open_line(
    rounds: list[dict[str, Any]],
    lines: dict[str, str],
    ratios: dict[str, Any],
) -> None:
    """The gateway's P99 in the open loop at OPEN_SHARE of its peak, per round."""
    opened = [r["gateway"]["open"] for r in rounds if "open" in r.get("gateway", {})]
    clean = [o for o in opened if o["error_rate"] <= 0.001]
    p99 = report.spread([o["p99_ms"] for o in clean])
    rate = report.spread([o["offered_rate"] for o in opened])
    goal = GOALS["gateway_p99_open"]
    ratios["gateway_p99_open"] = {
        **p99,
        "offered_rate": rate,
        "share_of_peak": OPEN_SHARE,
        "rounds": opened,
        "goal": goal,
    }
    text = f"{_fmt(p99, 0)} ms" if p99["n"] else "no clean open-loop round"
    lines["gateway_p99_open"] = (
        f"{text} at {_fmt(rate, 0)} requests/s  goal {goal}  "
        f"[gateway P99, open loop (Poisson) at {OPEN_SHARE:.0%} of its closed-loop peak]"
    )


def padding_figures(
    tritons: dict[str, Served], rounds: list[dict[str, Any]], enc: ceiling.Encoded
) -> dict[str, Any]:
    task = next(iter(tritons.values())).task
    lengths = [len(ids) for ids in enc.ids]
    buckets = list(task.buckets)
    out: dict[str, Any] = {
        "fixed": padding.ratio(lengths, "fixed", buckets, task.max_length),
        "bucket": padding.ratio(lengths, "bucket", buckets, task.max_length),
        "sorted": padding.ratio(lengths, "sorted", buckets, task.max_length, {8: 1}),
        "mean_tokens": statistics.fmean(lengths),
    }
    if "fused" in tritons:
        best = rounds[-1]["triton-fused"]["best_point"] or rounds[-1]["triton-fused"]["points"][-1]
        sizes = best.get("triton", {}).get(tritons["fused"].task.model, {}).get("batch_sizes")
        out["fused"] = padding.ratio(
            lengths,
            "fused",
            buckets,
            task.max_length,
            {int(k): v for k, v in (sizes or {}).items()},
        )
        out["fused_batch_sizes"] = sizes
    default = next(iter(tritons))
    out[default] = out.get(default, out["bucket"])
    out["default"] = default
    return out


def memory(rounds: list[dict[str, Any]], tri: str, http: dict[str, Any]) -> dict[str, Any]:
    at_rest, under, parts = 0.0, 0.0, ["triton+stubs"]
    first = rounds[0][tri]["points"][0]["processes"]["triton"]
    peak = max(p["processes"]["triton"]["rss_peak_mb"] for r in rounds for p in r[tri]["points"])
    at_rest, under = first["rss_peak_mb"], peak
    detail = {"triton_peak_mb": peak}
    if "gateway" in http:
        gw = [
            p["processes"]["gateway"]["rss_peak_mb"] for r in rounds for p in r["gateway"]["points"]
        ]
        at_rest += gw[0]
        under += max(gw)
        detail["gateway_peak_mb"] = max(gw)
        parts.append("gateway")
    return {"at_rest": at_rest, "under_load": under, "parts": parts, **detail}


def variant_figures(
    rounds: list[dict[str, Any]],
    enc: ceiling.Encoded,
    sessions: tuple[Any, Any, Any],
    variant: str,
) -> dict[str, Any]:
    """Served variant, fp32 and int8 on the ceiling's sorted batches; arg-max agreement."""
    import numpy as np

    served, fp32, int8 = sessions
    ref = ceiling.predictions(fp32, enc)

    def tps(key: str) -> dict[str, float]:
        return report.spread([r[key] for r in rounds if key in r])

    out: dict[str, Any] = {
        "served": variant,
        f"{variant}_sorted_texts_per_s": tps("ceiling"),
        "fp32_sorted_texts_per_s": tps("ceiling_fp32"),
        f"{variant}_arrival_order_texts_per_s": tps("ceiling_arrival"),
        f"{variant}_argmax_agreement_vs_fp32": float(
            np.mean(ceiling.predictions(served, enc) == ref)
        ),
    }
    if int8 is not None:
        out["int8_sorted_texts_per_s"] = tps("ceiling_int8")
        out["int8_argmax_agreement_vs_fp32"] = float(np.mean(ceiling.predictions(int8, enc) == ref))
    slow = out["fp32_sorted_texts_per_s"]["median"]
    for name in (variant, "int8"):
        fast = out.get(f"{name}_sorted_texts_per_s", {}).get("median")
        if fast and slow:
            out[f"{name}_speedup_vs_fp32"] = fast / slow
    return out


def strategy_table(tritons: dict[str, Served], rounds: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for strategy, served in tritons.items():
        key = f"triton-{strategy}"
        bests = [r[key]["best"] for r in rounds]
        last = rounds[-1][key]
        point = last["best_point"] or last["points"][-1]
        model = point.get("triton", {}).get(served.task.model, {})
        out[strategy] = {
            "texts_per_s": report.spread(bests),
            "peak_texts_per_s": report.spread([r[key]["peak"] for r in rounds]),
            "at_concurrency": point["concurrency"],
            "p50_ms": point["p50_ms"],
            "p95_ms": point["p95_ms"],
            "p99_ms": point["p99_ms"],
            "mean_batch": model.get("mean_batch"),
            "batch_sizes": model.get("batch_sizes"),
            "model_queue_ms": model.get("queue_ms_per_request"),
            "ladder": [
                {k: p[k] for k in ("concurrency", "throughput", "p95_ms", "p99_ms")}
                for p in last["points"]
            ],
        }
    return out


def plot_systems(result: dict[str, Any], path: Path) -> Path:
    """P95 against throughput for every system's ladder (last round), one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for name, v in result["rounds"][-1].items():
        if isinstance(v, dict) and v.get("points"):
            pts = v["points"]
            ax.plot([p["throughput"] for p in pts], [p["p95_ms"] for p in pts], "o-", label=name)
            for p in pts:
                ax.annotate(str(p["concurrency"]), (p["throughput"], p["p95_ms"]), fontsize=7)
    ceiling_tps = result["rounds"][-1].get("ceiling")
    if isinstance(ceiling_tps, float):
        ax.axvline(ceiling_tps, color="k", ls="--", lw=1, label="ceiling (bare ORT)")
    ax.axhline(result.get("p95_bound_ms", 300), color="r", ls=":", lw=1, label="P95 bound")
    ax.set_xlabel("throughput (texts/s, closed loop; labels: concurrency)")
    ax.set_ylabel("P95 latency (ms)")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("mix workload: P95 vs throughput")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def machine() -> dict[str, Any]:
    import platform

    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "loadavg_at_end": os.getloadavg(),
    }


if __name__ == "__main__":
    sys.exit(main())

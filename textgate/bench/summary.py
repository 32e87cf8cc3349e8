"""The bench suite's summary: ratios beside their goals, padding, memory, variants, the plot.

Split from ``benchmarks/suite/suite.py`` (which would be ~900 lines with it). Reads the
rounds the suite measured; measures nothing itself.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import statistics
from pathlib import Path
from typing import Any

from textgate.bench import ceiling, padding, report, workload
from textgate.bench.server import Served

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
    profile: Any,  # suite.Profile (a dataclass; not imported: suite imports this)
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

"""Release switches under sustained load: errors and P99 during add, canary, promote, rollback.

    python benchmarks/studies/lifecycle/lifecycle_switch.py --bundle BUNDLE \
        [--bundle2 BUNDLE2] --task spam --load 0.7 --settle 5 --out lifecycle_switch.json

Starts the embedded Triton on a release-managed repository (v1 = BUNDLE), the gateway in
front of it, measures capacity (closed loop, texts/s), then offers ``--load`` x capacity as
an open loop (Poisson arrivals, bounded in flight) while it runs, through the admin API:
add v2 -> canary 30 % -> shadow -> compare -> promote -> rollback. Every response is
counted, tagged with the phase it was sent in and the version that answered. The
integration test (tests/integration/test_release_lifecycle.py) runs the same scenario
for a few seconds; this script is the long version recorded in docs/lifecycle.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import secrets
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

TEXTS = [
    "win a free prize now, call to claim your cash",
    "are we still on for lunch tomorrow?",
    "URGENT your mobile number has won a bonus, reply STOP to opt out",
    "thanks, see you at home later tonight",
    "ok " * 40,
    "meeting moved to 3pm, bring the slides please and the numbers from last week",
]


@dataclass
class Sample:
    phase: str
    sent: float
    done: float
    status: int  # HTTP status; 0 = transport error
    version: str = ""

    @property
    def ms(self) -> float:
        return (self.done - self.sent) * 1000.0


@dataclass
class Load:
    url: str
    rate: float
    phase: str = "baseline"
    samples: list[Sample] = field(default_factory=list)
    stop: bool = False
    max_in_flight: int = 64


async def _one(client: httpx.AsyncClient, load: Load, text: str, key: str) -> None:
    phase, sent = load.phase, time.perf_counter()
    try:
        r = await client.post(
            "/v1/classify/spam", json={"text": text}, headers={"X-Request-ID": key}
        )
        status = r.status_code
        version = r.json()["results"][0]["model"]["version"] if status == 200 else ""
    except (httpx.HTTPError, ValueError, KeyError):
        status, version = 0, ""
    load.samples.append(Sample(phase, sent, time.perf_counter(), status, version))


async def open_loop(load: Load, seed: int = 0) -> None:
    """Poisson arrivals at ``load.rate`` until ``load.stop``; in flight bounded."""
    rng = random.Random(seed)
    gate = asyncio.Semaphore(load.max_in_flight)
    limits = httpx.Limits(max_connections=load.max_in_flight)
    async with httpx.AsyncClient(base_url=load.url, timeout=30, limits=limits) as client:
        tasks: set[asyncio.Task[None]] = set()
        i = 0

        async def fire(text: str, key: str) -> None:
            async with gate:
                await _one(client, load, text, key)

        while not load.stop:
            await asyncio.sleep(rng.expovariate(load.rate))
            i += 1
            task = asyncio.create_task(fire(TEXTS[i % len(TEXTS)], f"req-{seed}-{i}"))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.gather(*tasks)


async def capacity(url: str, concurrency: int = 8, seconds: float = 5.0) -> float:
    """Closed loop: completed texts/s with ``concurrency`` clients."""
    load = Load(url, rate=0)
    deadline = time.perf_counter() + seconds
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:

        async def user(u: int) -> None:
            n = 0
            while time.perf_counter() < deadline:
                n += 1
                await _one(client, load, TEXTS[n % len(TEXTS)], f"cap-{u}-{n}")

        await asyncio.gather(*(user(u) for u in range(concurrency)))
    ok = [s for s in load.samples if s.status == 200]
    return len(ok) / seconds


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def summarize(samples: Sequence[Sample]) -> dict[str, Any]:
    phases: dict[str, list[Sample]] = {}
    for s in samples:
        phases.setdefault(s.phase, []).append(s)
    out = {}
    for phase, rows in phases.items():
        ms = [s.ms for s in rows]
        versions: dict[str, int] = {}
        for s in rows:
            versions[s.version or "-"] = versions.get(s.version or "-", 0) + 1
        out[phase] = {
            "n": len(rows),
            "errors": sum(s.status != 200 for s in rows),
            "p50_ms": round(percentile(ms, 50), 1),
            "p99_ms": round(percentile(ms, 99), 1),
            "max_ms": round(max(ms), 1),
            "versions": versions,
        }
    return out


async def admin(url: str, token: str, op: str, body: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        r = await client.post(
            f"/admin/release/{op}", json=body, headers={"Authorization": f"Bearer {token}"}
        )
    if r.status_code != 200:
        raise RuntimeError(f"admin {op}: {r.status_code} {r.text[:300]}")
    return dict(r.json())


async def scenario(
    url: str, token: str, bundle2: Path, *, rate: float, settle_s: float, task: str = "spam"
) -> dict[str, Any]:
    """The switches under load; returns per-phase counts, P99 and each operation's time."""
    load = Load(url, rate)
    runner = asyncio.create_task(open_loop(load))
    ops: dict[str, float] = {}

    async def step(phase: str, op: str, body: dict[str, Any]) -> None:
        load.phase = phase
        t = time.perf_counter()
        await admin(url, token, op, body)
        ops[phase] = round(time.perf_counter() - t, 3)
        await asyncio.sleep(settle_s)

    await asyncio.sleep(settle_s)
    await step("add", "add", {"bundle": str(bundle2), "task": task})
    await step("canary", "canary", {"task": task, "percent": 30, "key": "request_id"})
    await step("shadow", "shadow", {"task": task})
    await step("compare", "compare", {"task": task})
    await step("promote", "promote", {"task": task})
    await step("rollback", "rollback", {"task": task, "reason": "benchmark"})
    load.stop = True
    await runner
    return {"rate": rate, "phases": summarize(load.samples), "op_seconds": ops}


# --- running it on its own ----------------------------------------------------------------


@contextlib.contextmanager
def serve(
    bundle: Path, root: Path, token: str, *, api_key: str = "", **release: Any
) -> Iterator[tuple[str, str]]:
    """Embedded Triton (restricted model API) + gateway with releases.

    Yields the gateway's URL and Triton's HTTP host:port (loopback).
    """
    import uvicorn

    from textgate.config import Config
    from textgate.gateway.app import create_app
    from textgate.release import Releases
    from textgate.triton import TritonServer, free_port

    repo = root / "repo"
    Releases(repo).add(bundle, "spam")  # v1 serves: built offline, loaded at start
    key = api_key or secrets.token_hex(16)
    triton_cfg = Config.from_dict(
        {"triton": {"http_port": 0, "grpc_port": 0, "metrics_port": 0, "exit_timeout_s": 2}}
    ).triton
    with TritonServer(repo, config=triton_cfg, api_key=key) as server:
        cfg = Config.from_dict(
            {
                "gateway": {"admin_token": token, "max_in_flight": 64, "max_queue": 512},
                "release": {
                    "repository": str(repo),
                    "triton_http": server.http_url,
                    "triton_api_key": key,
                    **release,
                },
                # store_text: the shadow log keeps texts (not only their hashes), so the
                # compare gate has shadowed traffic to run before the promote.
                "events": {"outbox_path": str(root / "events.sqlite3"), "store_text": True},
            }
        )
        app = create_app(cfg, endpoints=[server.grpc_url])
        port = free_port()
        uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None))
        thread = threading.Thread(target=uv.run, daemon=True)
        thread.start()
        while not uv.started:
            if not thread.is_alive():
                raise RuntimeError("the gateway did not start")
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}", server.http_url
        finally:
            uv.should_exit = True
            thread.join(timeout=15)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bundle", type=Path, required=True, help="v1 (serving at start)")
    ap.add_argument("--bundle2", type=Path, help="v2 (default: a copy of --bundle)")
    ap.add_argument("--load", type=float, default=0.7, help="share of measured capacity")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds of load after each op")
    ap.add_argument("--out", type=Path, default=Path("lifecycle_switch.json"))
    args = ap.parse_args()
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="textgate-lifecycle-") as tmp:
        root = Path(tmp)
        with serve(args.bundle, root, token, min_compare_texts=20) as (url, _triton):
            cap = asyncio.run(capacity(url))
            result = asyncio.run(
                scenario(
                    url, token, args.bundle2 or args.bundle, rate=cap * args.load,
                    settle_s=args.settle,
                )
            )  # fmt: skip
    result["capacity_texts_per_s"] = round(cap, 1)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

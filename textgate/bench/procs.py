"""Servers a benchmark measures, as subprocesses: start, wait for health, pause, stop.

The suite (``benchmarks/suite/suite.py``) and the studies that put gateways side by side
(``benchmarks/studies/serving/``) start their servers with these pieces, so no script
imports another.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import textgate
from textgate.bench import report
from textgate.bench.server import Served
from textgate.config import PolicyConfig
from textgate.triton import free_port

# The tree this textgate is imported from (a checkout's root): children run from it, so
# ``python -m textgate.cli`` there serves this very source, not another installed copy.
SOURCE = Path(textgate.__file__).resolve().parents[1]
PY = sys.executable


class Proc:
    """A server subprocess in its own process group, ready when ``health`` answers 200."""

    def __init__(self, name: str, cmd: Sequence[str], health: str, log: Path) -> None:
        self.name, self.health, self.log = name, health, log
        self.url = ""  # where a gateway's classify route is, when it is one
        with open(log, "wb") as fh:
            self.proc = subprocess.Popen(
                list(cmd), stdout=fh, stderr=subprocess.STDOUT, start_new_session=True, cwd=SOURCE
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


def policies(cascade: bool) -> list[dict[str, Any]]:
    """The shipped task policies with the confidence cascade on or off for every task (off:
    the transformer reads every message, the full path the other systems also run)."""
    out = []
    for rule in PolicyConfig().tasks:
        out.append({**dataclasses.asdict(rule), "cascade": cascade})
    return out


def start_gateway(
    grpc_url: str, tmp: Path, cascade: bool = False, campaign_entries: int = 0
) -> tuple[Proc, str] | None:
    """``textgate serve`` in front of ``grpc_url``, or None when the gateway's extras are
    missing (found, not imported: bench sits beside the gateway, never above it).
    ``cascade``: answer what the bundle's n-gram stage is sure of without the transformer;
    ``campaign_entries``: remember that many answers to repeated messages. Both off by
    default, so the gateway computes what every other system computes."""
    try:
        if importlib.util.find_spec("textgate.gateway.app") is None:
            return None
    except ImportError:
        return None
    port = free_port()
    cfg = tmp / "gateway.yaml"
    cfg.write_text(
        json.dumps(
            {
                "gateway": {
                    "log_format": "text",
                    "max_in_flight": 64,
                    "max_queue": 256,
                    "campaign_entries": campaign_entries,
                },
                "events": {"outbox_path": str(tmp / "events.sqlite3")},
                "policy": {"tasks": policies(cascade)},
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


def start_naive(script: Path, ckpt: Path, tmp: Path, threads: int) -> tuple[Proc, str]:
    """The naive baseline server ``script`` (the suite's ``naive_server.py``) on ``ckpt``."""
    port = free_port()
    cmd = [
        PY,
        str(script),
        str(ckpt),
        "--port",
        str(port),
        "--threads",
        str(threads),
    ]
    health = f"http://127.0.0.1:{port}/health"
    return Proc("naive", cmd, health, tmp / "naive.log"), f"http://127.0.0.1:{port}/classify"


def start_peer(
    script: Path,
    bundle: Path,
    variant: str,
    tmp: Path,
    threads: int,
    peer: tuple[int, float, int],
) -> tuple[Proc, str]:
    """The batching peer ``script`` (the suite's ``peer_litserve.py``) on ``bundle``."""
    batch, timeout_ms, workers = peer
    port = free_port()
    cmd = [
        PY,
        str(script),
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
    proc.url = f"http://127.0.0.1:{port}/v1/classify"
    return proc

"""``textgate serve``: the gateway on uvicorn, with embedded Triton unless endpoints are given.

With no Triton endpoint (``--triton`` or ``client.endpoints``) the repository is built from
the bundles (default: the spam bundle of ``textgate build``, cached) into a cache directory
keyed by the bundles' hashes, the repository settings and the builder's code, and served by
the embedded ``tritonserver`` on free ports. The fp32 variant is served beside the fast one
(``repository.rescore_variant: fp32``) so the re-score works out of the box.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from textgate import bundle
from textgate.config import Config, RepositoryConfig
from textgate.gateway import logs
from textgate.triton import TritonServer

DEFAULT_TASK = "spam"


def cache_dir() -> Path:
    from textgate.build import builds_dir

    return builds_dir().parent


def default_bundles(log: Callable[[str], None]) -> list[Path]:
    """The default spam bundle: trained and exported once (minutes), then cached."""
    from textgate.build import build

    out = cache_dir() / "serve" / DEFAULT_TASK
    build(DEFAULT_TASK, out, log=log, force=True)
    return [out]


def repository_settings(config: Config) -> RepositoryConfig:
    repo = config.repository
    if repo.rescore_variant == "none":
        repo = dataclasses.replace(repo, rescore_variant="fp32")
    return repo


def repository_key(bundles: Sequence[Path], settings: RepositoryConfig) -> str:
    code = hashlib.sha256()
    root = Path(__file__).resolve().parents[1] / "repository"
    for file in sorted(root.rglob("*.py")):
        code.update(file.read_bytes())
    inputs = {
        "bundles": [bundle.read_manifest(b)["files"] for b in bundles],
        "settings": dataclasses.asdict(settings),
        "code": code.hexdigest(),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, default=str).encode()).hexdigest()


def cached_repository(bundles: Sequence[Path], settings: RepositoryConfig) -> Path:
    """Build the repository once per (bundles, settings, builder code); reuse it after."""
    from textgate.repository import build

    out = cache_dir() / "repositories" / repository_key(bundles, settings)[:16]
    if (out / ".complete").is_file():
        return out
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    build(list(bundles), tmp, settings)
    (tmp / ".complete").write_text("ok\n", encoding="utf-8")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return out


def run(
    config: Config,
    *,
    config_path: Path | None,
    host: str,
    port: int,
    endpoints: Sequence[str] = (),
    bundles: Sequence[Path] = (),
    on_ready: Callable[[str], None] = lambda _url: None,
    log: Callable[[str], None] = lambda _m: None,
) -> int:
    """Serve until SIGINT/SIGTERM; SIGHUP reloads ``config_path``."""
    logs.setup(config.gateway.log_format)
    endpoints = list(endpoints) or list(config.client.endpoints)
    if endpoints:
        return _serve(config, config_path, host, port, endpoints, on_ready)
    sources = list(bundles) or default_bundles(log)
    repo = cached_repository(sources, repository_settings(config))
    triton_cfg = dataclasses.replace(config.triton, http_port=0, grpc_port=0, metrics_port=0)
    log(f"starting embedded tritonserver on {repo}")
    with TritonServer(repo, config=triton_cfg) as server:
        log(f"tritonserver ready: grpc {server.grpc_url}, metrics {server.metrics_url}")
        return _serve(config, config_path, host, port, [server.grpc_url], on_ready)


def _serve(
    config: Config,
    config_path: Path | None,
    host: str,
    port: int,
    endpoints: Sequence[str],
    on_ready: Callable[[str], None],
) -> int:
    import uvicorn

    from textgate.gateway.app import create_app

    app = create_app(config, endpoints=endpoints, config_path=config_path)
    server = uvicorn.Server(
        uvicorn.Config(app, host=host, port=port, log_config=None, lifespan="on")
    )

    async def main() -> None:
        import asyncio

        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            on_ready(f"http://{host}:{_bound_port(server, port)}")
        await task

    import asyncio
    import signal
    import threading

    # uvicorn re-raises the SIGINT/SIGTERM it handled once it has shut down; with Python's
    # default handlers that would kill the process before the embedded Triton is stopped.
    quiet = threading.current_thread() is threading.main_thread()
    sigs = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in sigs} if quiet else {}
    try:
        asyncio.run(main())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if server.started else 1


def _bound_port(server: object, default: int) -> int:
    # With --port 0 the kernel picks the port; read it back from the listening socket.
    for s in getattr(server, "servers", []):
        for sock in getattr(s, "sockets", []):
            return int(sock.getsockname()[1])
    return default

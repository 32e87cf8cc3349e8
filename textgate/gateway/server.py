"""``textgate serve``: the gateway on uvicorn, with embedded Triton unless endpoints are given.

With no Triton endpoint (``--triton`` or ``client.endpoints``) the gateway serves a
release-managed repository (docs/lifecycle.md) on the embedded ``tritonserver``:
``release.repository`` when configured, else one per set of initial bundles in the cache.
A task the repository does not hold yet is added from its bundle (default: the spam bundle of
``textgate build``, cached) as release v1; after that the repository's state decides which
version serves, so versions added, promoted or rolled back through the admin API survive a
restart. Triton starts on free ports with the versions that are not retired, its model API
restricted to a key made for this run, which the gateway's release control and client hold.
The fp32 variant is built beside the fast one (``repository.rescore_variant: fp32``) so the
re-score works out of the box.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from textgate import bundle
from textgate.config import Config, RepositoryConfig
from textgate.errors import BundleError
from textgate.gateway.records import logs
from textgate.release import Releases
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


def release_repository(config: Config, bundles: Sequence[Path]) -> Path:
    """``release.repository``, else a cache directory keyed by the initial bundles' files.

    Not keyed by settings or builder code (unlike a plain build cache): the repository holds
    state — versions added later, which one serves — that a restart must find again.
    """
    if config.release.repository is not None:
        return config.release.repository
    files = [bundle.read_manifest(b)["files"] for b in bundles]
    key = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    return cache_dir() / "releases" / key[:16]


def open_releases(
    config: Config, bundles: Sequence[Path], log: Callable[[str], None] = lambda _m: None
) -> Releases:
    """The embedded server's release repository, every bundle's task released (v1 if new)."""
    repo = release_repository(config, bundles)
    # No model control yet: Triton is not running; it starts with loadable() afterwards.
    releases = Releases(repo, config.release, repository=repository_settings(config))
    for source in bundles:
        task = str(bundle.read_manifest(source).get("task") or "")
        if not task:
            raise BundleError(f"{source}: the manifest names no task", file=bundle.MANIFEST)
        if task in releases.state.tasks:
            continue  # released already: the state, not the bundle, says what serves
        log(f"adding {source} as release v1 of '{task}' in {repo}")
        releases.add(source, task)
    return releases


def embedded_config(config: Config, repo: Path, triton_http: str, api_key: str) -> Config:
    """The config the gateway runs with: releases on, pointed at the embedded server."""
    release = dataclasses.replace(
        config.release, repository=repo, triton_http=triton_http, triton_api_key=api_key
    )
    return dataclasses.replace(config, release=release)


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
    releases = open_releases(config, list(bundles) or default_bundles(log), log)
    triton_cfg = dataclasses.replace(config.triton, http_port=0, grpc_port=0, metrics_port=0)
    # A key per run: Triton's model API (HTTP and gRPC) answers only this process.
    key = secrets.token_hex(16)
    log(f"starting embedded tritonserver on release repository {releases.repo}")
    with TritonServer(
        releases.repo, models=releases.loadable(), config=triton_cfg, api_key=key
    ) as server:
        log(f"tritonserver ready: grpc {server.grpc_url}, metrics {server.metrics_url}")
        served = embedded_config(config, releases.repo, server.http_url, key)
        return _serve(served, config_path, host, port, [server.grpc_url], on_ready)


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
    from textgate.gateway.http.frontdoor import uvicorn_config

    app = create_app(config, endpoints=endpoints, config_path=config_path)
    server = uvicorn.Server(uvicorn_config(app, config.gateway, host=host, port=port))

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
        # uvloop (the serve extra) when installed: a faster loop for every request.
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(main())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if server.started else 1


def _loop_factory() -> Callable[[], Any] | None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is part of the serve extra
        return None
    return uvloop.new_event_loop  # type: ignore[no-any-return]


def _bound_port(server: object, default: int) -> int:
    # With --port 0 the kernel picks the port; read it back from the listening socket.
    for s in getattr(server, "servers", []):
        for sock in getattr(s, "sockets", []):
            return int(sock.getsockname()[1])
    return default

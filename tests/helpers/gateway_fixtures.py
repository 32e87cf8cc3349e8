"""A gateway on uvicorn in a thread, in front of a real tritonserver, for the gateway tests.

``two_variant_repo`` serves spam as int8 (a copy of the fp32 file, so scores are equal)
plus ``spam_fp32``: enough to exercise the re-score path without a real quantized model.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from textgate import bundle
from textgate.config import Config, RepositoryConfig
from textgate.repository import build
from textgate.triton import free_port


def two_variant_bundle(src: Path, out: Path) -> Path:
    shutil.copytree(src, out)
    shutil.copyfile(out / "model.onnx", out / "model.int8.onnx")
    manifest = bundle.read_manifest(out)
    manifest["variants"]["int8"] = {**manifest["variants"]["fp32"], "file": "model.int8.onnx"}
    manifest["default_variant"] = {"cpu": "int8", "gpu": "fp32"}
    bundle.write_manifest(out, manifest)
    return out


def two_variant_repo(bundles: dict[str, Path], root: Path) -> Path:
    spam = two_variant_bundle(bundles["spam"], root / "spam-two")
    settings = RepositoryConfig(max_batch_size=16, rescore_variant="fp32")
    return build([spam, bundles["sentiment"]], root / "repo", settings).repository


class RunningGateway:
    def __init__(self, server: uvicorn.Server, thread: threading.Thread, url: str) -> None:
        self.server, self.thread, self.url = server, thread, url

    def client(self, **kw: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, **kw)


@contextlib.contextmanager
def run_gateway(
    config: Config | dict[str, Any],
    endpoints: Sequence[str],
    *,
    config_path: Path | None = None,
) -> Iterator[RunningGateway]:
    from textgate.gateway.app import create_app
    from textgate.gateway.http.frontdoor import uvicorn_config

    cfg = config if isinstance(config, Config) else Config.from_dict(config)
    app = create_app(cfg, endpoints=endpoints, config_path=config_path)
    port = free_port()
    server = uvicorn.Server(uvicorn_config(app, cfg.gateway, host="127.0.0.1", port=port))
    thread = threading.Thread(target=server.run, daemon=True, name="gateway")
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the gateway did not start")
        time.sleep(0.02)
    try:
        yield RunningGateway(server, thread, f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def httpx_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A schemathesis case's request arguments as httpx takes them (``data`` as content)."""
    out: dict[str, Any] = {}
    for key in ("headers", "params", "json", "content"):
        if kwargs.get(key) is not None:
            out[key] = kwargs[key]
    if kwargs.get("data") is not None:
        data = kwargs["data"]
        out["content"] = data if isinstance(data, bytes | str) else json.dumps(data)
    return out

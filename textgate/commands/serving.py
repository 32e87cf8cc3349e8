"""Triton: ``doctor`` checks the machine, ``repo build`` writes a model repository,
``serve-triton`` runs tritonserver on one."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from rich.markup import escape

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
    _add_doctor(sub)
    _add_repo(sub)
    _add_serve_triton(sub)


# --- doctor -------------------------------------------------------------------------------


def _add_doctor(sub: Subparsers) -> None:
    p = command(
        sub,
        "doctor",
        help="check that this machine can serve: tritonserver, stub Python, ONNX Runtime, GPU",
        description="Find tritonserver and its Python-backend stub, check that the stub embeds "
        "the Python this venv runs on, start an empty server to read its version, and list "
        "ONNX Runtime's version and execution providers and any GPU. Each failed check "
        "prints its fix.",
        examples=("textgate doctor", "textgate doctor --no-start --json"),
    )
    p.add_argument("--config", type=Path, help="textgate YAML config (triton section)")
    p.add_argument("--no-start", action="store_true", help="do not start a server for its version")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.set_defaults(handler=_run_doctor)


def _run_doctor(args: argparse.Namespace) -> int:
    from textgate.triton import diagnose

    cfg = load_config(args.config)
    checks = diagnose(cfg.triton, start=not args.no_start)
    if args.json:
        print_json(checks)
    else:
        for c in checks:
            _print_check(c)
    return 0 if all(c["ok"] or c.get("optional") for c in checks) else 1


def _print_check(c: dict[str, Any]) -> None:
    mark = (
        "[green]ok[/]  " if c["ok"] else "[yellow]--[/]  " if c.get("optional") else "[red]FAIL[/]"
    )
    out.print(f"{mark} {escape(c['check'])}: {escape(str(c['detail']))}", highlight=False)
    if not c["ok"] and c.get("fix"):
        out.print(f"      [yellow]fix:[/] {escape(c['fix'])}", highlight=False)


# --- repo build ---------------------------------------------------------------------------


def _add_repo(sub: Subparsers) -> None:
    p = command(
        sub,
        "repo",
        help="build a Triton model repository from bundles",
        description="Triton model repositories. `repo build` verifies each bundle, then writes "
        "<task> (ensemble), <task>_tokenize, <task>_model and <task>_postprocess with "
        "config.pbtxt files generated through Triton's protobuf schema.",
        examples=(
            "textgate repo build artifacts/spam -o model_repository",
            "textgate repo build artifacts/spam -o gpu_repo --target triton-container "
            "--config textgate.yaml",
        ),
    )
    actions = p.add_subparsers(dest="repo_command", metavar="ACTION", required=True)
    b = command(
        actions,
        "build",
        help="bundles -> model repository",
        description="Verify the bundles and write a Triton model repository.",
        examples=("textgate repo build artifacts/spam artifacts/sentiment -o repo",),
    )
    b.add_argument("bundles", nargs="+", type=Path, metavar="BUNDLE")
    b.add_argument("-o", "--out", type=Path, required=True, help="repository directory")
    b.add_argument(
        "--target",
        choices=["embedded", "triton-container"],
        help="embedded: Python backend + ONNX Runtime (the bundled tritonserver); "
        "triton-container: onnxruntime_onnx for NVIDIA's container (default: from config)",
    )
    b.add_argument(
        "--shape-strategy",
        choices=["auto", "bucket", "fixed", "fused"],
        help="default: from config (auto: fused on embedded, bucket on triton-container)",
    )
    b.add_argument("--config", type=Path, help="textgate YAML config (repository section)")
    b.add_argument("--version", type=int, default=1, help="numeric version directory to write")
    b.add_argument("--overwrite", action="store_true", help="replace an existing version")
    b.set_defaults(handler=_run_repo_build)


def _run_repo_build(args: argparse.Namespace) -> int:
    from textgate.repository import build

    settings = load_config(args.config).repository
    overrides = {"target": args.target, "shape_strategy": args.shape_strategy}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    try:
        settings = dataclasses.replace(settings, **overrides)
    except errors.ConfigError as exc:
        raise errors.ConfigError(f"repository.{exc.key}", exc.message, hint=exc.hint) from None
    result = build(args.bundles, args.out, settings, version=args.version, overwrite=args.overwrite)
    for task in result.spec.tasks:
        out.print(
            f"[green]✓[/] {task.task}: variant {task.variant}, buckets "
            f"{list(task.buckets)}, labels {list(task.labels)}",
            highlight=False,
        )
    out.print(
        f"repository {escape(str(result.repository))} ({settings.target}, "
        f"{settings.strategy}): {', '.join(result.models)}",
        highlight=False,
    )
    return 0


# --- serve-triton -------------------------------------------------------------------------


def _add_serve_triton(sub: Subparsers) -> None:
    p = command(
        sub,
        "serve-triton",
        help="run tritonserver in the foreground on a model repository",
        description="Start tritonserver (the nvidia-pytriton wheel's, or triton.binary / "
        "$TEXTGATE_TRITONSERVER) on REPO in explicit model-control mode, wait until every "
        "model is ready, and serve until Ctrl-C or SIGTERM, which stop it cleanly.",
        examples=(
            "textgate serve-triton model_repository",
            "textgate serve-triton repo --http-port 9000 --grpc-port 9001 --metrics-port 9002",
        ),
    )
    p.add_argument("repository", type=Path, metavar="REPO")
    p.add_argument("--http-port", type=int, help="default 8000 (0: a free port)")
    p.add_argument("--grpc-port", type=int, help="default 8001")
    p.add_argument("--metrics-port", type=int, help="default 8002")
    p.add_argument("--address", help="bind address (default 127.0.0.1)")
    p.add_argument("--models", help="comma-separated models to load (default: all)")
    p.add_argument("--config", type=Path, help="textgate YAML config (triton section)")
    p.set_defaults(handler=_run_serve_triton)


def _run_serve_triton(args: argparse.Namespace) -> int:
    import signal

    from textgate.triton import TritonServer

    cfg = load_config(args.config).triton
    overrides = {
        "http_port": args.http_port,
        "grpc_port": args.grpc_port,
        "metrics_port": args.metrics_port,
        "address": args.address,
    }
    cfg = dataclasses.replace(cfg, **{k: v for k, v in overrides.items() if v is not None})
    server = TritonServer(args.repository, models=split_list(args.models) or None, config=cfg)

    def _interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # SIGTERM stops as cleanly as Ctrl-C

    # Both installed explicitly: a shell starts background jobs with SIGINT ignored.
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        _serve_until_interrupted(server)
        return 0
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _serve_until_interrupted(server: Any) -> None:
    import time

    try:
        server.start()
        console.print(f"tritonserver pid {server.pid}, log {server.log_path}", highlight=False)
        server.wait_ready()
        out.print(
            f"serving {', '.join(server.models)}\n  http    {server.http_url}\n"
            f"  grpc    {server.grpc_url}\n  metrics {server.metrics_url}\nCtrl-C stops.",
            highlight=False,
        )
        while True:
            server.check()
            time.sleep(0.5)
    except KeyboardInterrupt:
        console.print("stopping tritonserver ...")

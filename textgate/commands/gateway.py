"""The gateway: ``serve`` runs it, ``replay`` re-runs a saved request, ``events tail``
reads its outbox."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
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
    _add_events(sub)
    _add_serve(sub)
    _add_replay(sub)


# --- serve ------------------------------------------------------------------------------


def _add_serve(sub: Subparsers) -> None:
    p = command(
        sub,
        "serve",
        help="run the HTTP gateway (embedded Triton with the spam model by default)",
        description="Serve POST /v1/classify/{task} (JSON text(s) or a raw RFC 822 e-mail), "
        "/v1/models, /healthz, /readyz and /metrics. With no --triton (and no "
        "client.endpoints) the repository is built from the bundles (default: the spam "
        "bundle of `textgate build`, trained once and cached) and served by the embedded "
        "tritonserver on free ports. SIGHUP or POST /admin/reload reloads --config; an "
        "invalid config is rejected and the old one stays. Ctrl-C or SIGTERM stop it.",
        examples=(
            "textgate serve",
            "textgate serve --config textgate.yaml --port 9000",
            "textgate serve --triton 10.0.0.5:8001,10.0.0.6:8001",
            "curl -s localhost:8080/v1/classify/spam -H 'content-type: message/rfc822' "
            "--data-binary @mail.eml",
        ),
    )
    p.add_argument("--config", type=Path, help="textgate YAML config (reloaded on SIGHUP)")
    p.add_argument("--host", help="bind address (default gateway.host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default gateway.port, 8080; 0: a free one)")
    p.add_argument("--triton", help="Triton gRPC endpoints host:port,...; none: embedded")
    p.add_argument("--spamd-port", type=int, help="spamc/spamd listener (mail.spamd_port)")
    p.add_argument("--milter-port", type=int, help="milter listener (mail.milter_port)")
    p.add_argument(
        "--bundle",
        type=Path,
        action="append",
        default=[],
        help="bundle to serve on the embedded Triton (repeatable; default: the spam bundle)",
    )
    p.set_defaults(handler=_run_serve)


def _run_serve(args: argparse.Namespace) -> int:
    errors.require("fastapi", "serve")
    errors.require("uvicorn", "serve")
    import os

    from textgate.config.serving import serial_blas

    serial_blas(os.environ)  # before the gateway imports numpy; its children inherit it
    from textgate.gateway import server

    cfg = _with_mail_ports(load_config(args.config), args.spamd_port, args.milter_port)
    host = args.host or cfg.gateway.host
    port = cfg.gateway.port if args.port is None else args.port

    def ready(url: str) -> None:
        out.print(
            f"textgate gateway on {url}\n  try: curl -s {url}/v1/classify/spam "
            "-H 'content-type: application/json' -d '{\"text\": \"WIN a free prize now\"}'",
            highlight=False,
        )

    return server.run(
        cfg,
        config_path=args.config,
        host=host,
        port=port,
        endpoints=split_list(args.triton),
        bundles=args.bundle,
        on_ready=ready,
        log=lambda m: console.print(m, highlight=False),
    )


def _with_mail_ports(cfg: Any, spamd: int | None, milter: int | None) -> Any:
    import dataclasses

    ports = {"spamd_port": spamd, "milter_port": milter}
    ports = {k: v for k, v in ports.items() if v is not None}
    return dataclasses.replace(cfg, mail=dataclasses.replace(cfg.mail, **ports)) if ports else cfg


# --- replay -----------------------------------------------------------------------------


def _add_replay(sub: Subparsers) -> None:
    p = command(
        sub,
        "replay",
        help="re-run a saved anomalous request and show what changed",
        description="Read a record of the gateway's replay store (gateway.replay_dir: "
        "outputs with NaN or a fast/fp32 disagreement), send its normalized pieces to the "
        "same Triton models again and print the recorded and the new probabilities.",
        examples=("textgate replay replay/3f2a...-1767000000.json --triton 127.0.0.1:8001",),
    )
    p.add_argument("file", type=Path, metavar="FILE")
    p.add_argument(
        "--triton", help="Triton gRPC endpoints host:port,... (default client.endpoints)"
    )
    p.add_argument("--config", type=Path, help="textgate YAML config (client section)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(handler=_run_replay)


def _run_replay(args: argparse.Namespace) -> int:
    import asyncio

    from textgate.gateway.records import replay

    cfg = load_config(args.config)
    record = replay.load(args.file)
    endpoints = split_list(args.triton) or list(cfg.client.endpoints)
    if not endpoints:
        raise errors.ConfigError("client.endpoints", "replay needs a Triton", hint="--triton URL")
    report = asyncio.run(replay.rerun(record, endpoints, cfg.client))
    if args.json:
        print_json(report)
    else:
        for line in replay.format_report(report):
            out.print(line, highlight=False)
    return 0


# --- events -----------------------------------------------------------------------------


def _add_events(sub: Subparsers) -> None:
    p = command(
        sub,
        "events",
        help="look at the classification events in the outbox",
        description="Every classification writes one event to the on-disk outbox "
        "(events.outbox_path) before its response is sent; with events.kafka configured a "
        "publisher drains it to Kafka. `events tail` reads the outbox (read-only).",
        examples=(
            "textgate events tail -n 20",
            "textgate events tail --outbox textgate-events.sqlite3 --follow --json",
        ),
    )
    actions = p.add_subparsers(dest="events_command", metavar="ACTION", required=True)
    t = command(
        actions,
        "tail",
        help="print the newest events (published or still waiting)",
        description="Print the newest events of the outbox, oldest first; --follow keeps "
        "printing new ones until Ctrl-C.",
        examples=("textgate events tail -n 50 --json | jq .action",),
    )
    t.add_argument("--outbox", type=Path, help="outbox file (default: events.outbox_path)")
    t.add_argument("--config", type=Path, help="YAML config file")
    t.add_argument("-n", type=int, default=10, metavar="N", help="how many (default 10)")
    t.add_argument("--follow", "-f", action="store_true", help="keep printing new events")
    t.add_argument("--json", action="store_true", help="one JSON object per line")
    t.set_defaults(handler=_run_events_tail)


def _run_events_tail(args: argparse.Namespace) -> int:
    import time

    from textgate.gateway.records.outbox import read_rows

    path = args.outbox or load_config(args.config).events.outbox_path
    rows = read_rows(path, last=max(0, args.n))
    last_id = _print_events(rows, as_json=args.json)
    while args.follow:
        try:
            time.sleep(0.5)
        except KeyboardInterrupt:
            break
        last_id = max(last_id, _print_events(read_rows(path, after_id=last_id), args.json))
    return 0


def _print_events(rows: Sequence[Any], as_json: bool) -> int:
    """Print rows; returns the last id printed (0 when none)."""
    for row in rows:
        event = json.loads(row.payload)
        if as_json:
            extra = {"published_at": row.published_at, "attempts": row.attempts}
            print(json.dumps(event | extra, ensure_ascii=False), flush=True)
        else:
            state = "published" if row.published_at else "waiting"
            out.print(escape(_event_line(event, state)), highlight=False, soft_wrap=True)
    return rows[-1].id if rows else 0


def _event_line(event: dict[str, Any], state: str) -> str:
    head = f"{_iso(event.get('time'))}  {event.get('request_id')}  {event.get('task')}  "
    if str(event.get("schema", "")).startswith("textgate.release-event/"):
        return (
            f"{head}{event.get('op')} v{event.get('version')} (serving v{event.get('serving')})"
            f"  {event.get('reason', '')}  {state}"
        )
    from textgate.gateway.records.events import score_text

    model = f"{event.get('model')}@{event.get('model_version')}/{event.get('variant')}"
    score = score_text(event.get("score"))  # null: a non-finite model output
    return f"{head}{model}  {event.get('label')} {score}  {event.get('action')}  {state}"


def _iso(ts: Any) -> str:
    from datetime import UTC, datetime

    try:
        return datetime.fromtimestamp(float(ts), UTC).isoformat(timespec="milliseconds")
    except (TypeError, ValueError):
        return "?"

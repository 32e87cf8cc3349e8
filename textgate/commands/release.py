"""Model versions: ``release add|list|canary|shadow|standby|compare|promote|rollback|gc``,
through a gateway's admin API or offline on the repository (docs/lifecycle.md)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textgate import errors
from textgate.commands.common import Subparsers, command, fmt, load_config, out, print_json


def register(sub: Subparsers) -> None:
    p = command(
        sub,
        "release",
        help="model versions: add, list, canary, shadow, compare, promote, rollback, gc",
        description="Versions of a task in a release-managed repository (docs/lifecycle.md). "
        "With --url (or TEXTGATE_ADMIN_URL) a command goes to a running gateway's admin API "
        "(token: --token or TEXTGATE_GATEWAY__ADMIN_TOKEN) and takes effect at once. Without "
        "it the command edits the repository's release state directly (offline); with "
        "--triton HOST:PORT (Triton's HTTP endpoint) it also loads and unloads the models; "
        "a running gateway picks up the new state file within a second.",
        examples=(
            "textgate release add repo artifacts/spam-2 --task spam",
            "textgate release canary --url http://127.0.0.1:8080 --task spam --percent 5",
            "textgate release compare --url http://127.0.0.1:8080 --task spam --data test.jsonl",
            "textgate release promote --repo repo --task spam --force --reason 'hotfix'",
        ),
    )
    ops = p.add_subparsers(dest="release_command", metavar="OP", required=True)
    add = ops.add_parser("add", help="verify a bundle, add it as the next version, load it")
    add.add_argument("repo", type=Path, help="release-managed model repository (created)")
    add.add_argument("bundle", type=Path, help="bundle directory (textgate export/build)")
    add.add_argument("--task", required=True)
    simple = {
        "list": "versions: hash, metrics, variant, state, load status",
        "canary": "a sticky share of traffic to the candidate",
        "shadow": "copy live traffic to the candidate; answers unaffected",
        "standby": "stop canary/shadow; the candidate stays loaded",
        "compare": "candidate vs serving on shadowed texts (+ --data); the gate",
        "promote": "candidate -> serving (gate passed, or --force --reason)",
        "rollback": "back to the previous serving version",
        "gc": "delete the files of retired versions",
    }
    parsers = {"add": add} | {name: ops.add_parser(name, help=h) for name, h in simple.items()}
    for name, q in parsers.items():
        if name != "add":
            q.add_argument("--repo", type=Path, help="offline: the repository (default: config)")
            q.add_argument("--task", required=name not in ("list", "gc"))
        q.add_argument("--url", help="gateway base URL: use its admin API")
        q.add_argument("--token", help="admin token (default: TEXTGATE_GATEWAY__ADMIN_TOKEN)")
        q.add_argument("--triton", help="offline: Triton HTTP host:port for model control")
        q.add_argument("--config", type=Path, help="YAML config file")
        q.add_argument("--json", action="store_true", help="print JSON")
        q.set_defaults(handler=_run_release)
    parsers["canary"].add_argument("--percent", type=float, required=True)
    parsers["canary"].add_argument("--key", choices=("tenant", "sender", "request_id"))
    parsers["compare"].add_argument("--data", type=Path, help='JSONL {"text", "label"}')
    parsers["compare"].add_argument(
        "--feedback", type=Path, help="feedback store: report accuracy on the corrections too"
    )
    parsers["promote"].add_argument("--force", action="store_true")
    for name in ("promote", "rollback", "standby"):
        parsers[name].add_argument("--reason", default="", help="recorded in the history")


def _run_release(args: argparse.Namespace) -> int:
    import os

    url = args.url or os.environ.get("TEXTGATE_ADMIN_URL")
    result = _release_remote(args, url) if url else _release_offline(args)
    if args.json or args.release_command not in ("list",):
        print_json(result)
    else:
        _print_versions(result["versions"])
    return 0


def _release_body(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("task", "percent", "key", "force", "reason")
    body = {k: getattr(args, k) for k in keys if getattr(args, k, None) not in (None, "")}
    if args.release_command == "add":
        body["bundle"] = str(args.bundle.resolve())
    if getattr(args, "data", None) is not None:
        body["data"] = str(args.data.resolve())
    return body


def _release_remote(args: argparse.Namespace, url: str) -> Any:
    import os

    import httpx

    token = args.token or os.environ.get("TEXTGATE_GATEWAY__ADMIN_TOKEN", "")
    headers = {"Authorization": f"Bearer {token}"}
    op = args.release_command
    try:
        if op == "list":
            params = {"task": args.task} if args.task else {}
            r = httpx.get(f"{url}/admin/release/versions", params=params, headers=headers)
        else:
            body = _release_body(args)
            r = httpx.post(f"{url}/admin/release/{op}", json=body, headers=headers, timeout=600)
    except httpx.HTTPError as exc:
        raise errors.TextgateError(f"gateway at {url} unreachable: {exc}") from None
    if r.status_code != 200:
        error = r.json().get("error", {}) if "json" in r.headers.get("content-type", "") else {}
        message = error.get("message") or r.text[:300]
        if r.status_code == 409:
            raise errors.ReleaseError(message, hint=error.get("hint"))
        if r.status_code == 422:
            raise errors.BundleError(message, hint=error.get("hint"))
        raise errors.TextgateError(f"admin API {op}: HTTP {r.status_code}: {message}")
    return r.json()


def _release_offline(args: argparse.Namespace) -> Any:
    from textgate import release

    config = load_config(getattr(args, "config", None))
    repo = args.repo or config.release.repository
    if repo is None:
        raise errors.ConfigError("release.repository", "no repository: pass --repo or --url")
    if args.release_command != "add" and not (Path(repo) / release.STATE_DIR).is_dir():
        raise errors.ReleaseError(
            f"{repo} holds no releases",
            hint="check --repo; `textgate release add REPO BUNDLE --task T` starts one",
        )
    triton = args.triton or config.release.triton_http
    control = release.HttpControl(triton, config.release.triton_api_key) if triton else None
    rel = release.Releases(repo, config.release, repository=config.repository, control=control)
    op = args.release_command
    if op == "add":
        return rel.add(args.bundle, args.task)
    if op == "list":
        return {"versions": rel.list_versions(args.task)}
    if op == "compare":
        if control is None:
            raise errors.ConfigError("release.triton_http", "compare runs the models: --triton")
        infer = release.http_infer(triton)
        return rel.compare(args.task, infer, data=args.data, feedback=args.feedback)
    if op == "gc":
        return {"removed": rel.gc()}
    if op == "canary":
        return rel.canary(args.task, args.percent, args.key)
    if op == "promote":
        return rel.promote(args.task, force=args.force, reason=args.reason)
    if op == "rollback":
        return rel.rollback(args.task, reason=args.reason)
    if op == "standby":
        return rel.standby(args.task, args.reason)
    return rel.shadow(args.task)


def _print_versions(rows: Sequence[dict[str, Any]]) -> None:
    for r in rows:
        f1 = r["metrics"].get("f1")
        out.print(
            f"{r['task']:<12} v{r['version']:<4} {r['state']:<14} {r['load']:<11} "
            f"{r['variant']:<8} f1={fmt(f1)}  {r['bundle_hash'][:12]}",
            highlight=False,
        )

"""Model versions: ``release add|list|canary|shadow|standby|compare|promote|rollback|gc``,
through a gateway's admin API or offline on the repository (docs/lifecycle.md)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textgate import errors
from textgate.commands.common import Subparsers, command, fmt, load_config, out, print_json

if TYPE_CHECKING:
    from textgate.release.ops import Param


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
    from textgate.release.ops import OPERATIONS

    for op in OPERATIONS:  # the one table the admin API iterates too
        q = ops.add_parser(op.name, help=op.help)
        if op.repo_positional:
            q.add_argument("repo", type=Path, help="release-managed model repository (created)")
        else:
            q.add_argument("--repo", type=Path, help="offline: the repository (default: config)")
        for param in op.params:
            _add_param(q, param, positional=op.repo_positional and param.path)
        if op.param("task") is None:
            q.add_argument("--task", help=argparse.SUPPRESS)  # accepted, as always; unused
        q.add_argument("--url", help="gateway base URL: use its admin API")
        q.add_argument("--token", help="admin token (default: TEXTGATE_GATEWAY__ADMIN_TOKEN)")
        q.add_argument("--triton", help="offline: Triton HTTP host:port for model control")
        q.add_argument("--config", type=Path, help="YAML config file")
        q.add_argument("--json", action="store_true", help="print JSON")
        q.set_defaults(handler=_run_release)


def _add_param(q: argparse.ArgumentParser, param: Param, *, positional: bool) -> None:
    """One argument of the operations table as a flag (or, for add, a positional)."""
    kind = Path if param.path else param.kind
    if positional:
        q.add_argument(param.name, type=kind, help=param.help)
    elif kind is bool:
        q.add_argument(f"--{param.name}", action="store_true", help=param.help)
    else:
        q.add_argument(
            f"--{param.name}",
            type=kind,
            required=param.required,
            default=param.default,
            choices=param.choices or None,
            help=param.help,
        )


def _run_release(args: argparse.Namespace) -> int:
    import os

    url = args.url or os.environ.get("TEXTGATE_ADMIN_URL")
    result = _release_remote(args, url) if url else _release_offline(args)
    if args.json or args.release_command not in ("list",):
        print_json(result)
    else:
        _print_versions(result["versions"])
    return 0


def _release_remote(args: argparse.Namespace, url: str) -> Any:
    import os

    import httpx

    from textgate.release.ops import BY_NAME, remote_body

    token = args.token or os.environ.get("TEXTGATE_GATEWAY__ADMIN_TOKEN", "")
    headers = {"Authorization": f"Bearer {token}"}
    op = args.release_command
    operation = BY_NAME[op]
    body = remote_body(operation, vars(args))
    target = f"{url}/admin{operation.route}"
    try:
        if operation.method == "GET":
            r = httpx.get(target, params=body, headers=headers)
        else:
            r = httpx.post(target, json=body, headers=headers, timeout=600)
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
    infer = control.infer if control is not None else None
    return release.BY_NAME[args.release_command].call(rel, vars(args), infer)


def _print_versions(rows: Sequence[dict[str, Any]]) -> None:
    for r in rows:
        f1 = r["metrics"].get("f1")
        out.print(
            f"{r['task']:<12} v{r['version']:<4} {r['state']:<14} {r['load']:<11} "
            f"{r['variant']:<8} f1={fmt(f1)}  {r['bundle_hash'][:12]}",
            highlight=False,
        )

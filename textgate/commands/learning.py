"""Per-tenant learning from mail folders: ``learn`` (sa-learn's --spam, --ham, --forget)."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from textgate import errors
from textgate.commands.common import Subparsers, command, load_config, out, print_json


def register(sub: Subparsers) -> None:
    p = command(
        sub,
        "learn",
        help="teach one tenant's learning layer from mail folders (like sa-learn)",
        description="Read mbox files, Maildirs or folders of .eml files (as `textgate data` "
        "reads them), normalize each message as the gateway does, and write each as a "
        "correction (source 'learn') of the tenant into the feedback store of the config "
        "(feedback.path). --forget removes those corrections instead. A running gateway with "
        "feedback.tenant_learning picks the rows up within feedback.learning_poll_s.",
        examples=(
            "textgate learn --config textgate.yaml --tenant example.com --spam Junk/ --ham INBOX/",
            "textgate learn --config textgate.yaml --tenant example.com --spam Junk/ --forget",
        ),
    )
    p.add_argument("--config", type=Path, default=None, help="the gateway's config file")
    p.add_argument("--tenant", default=None, help="the tenant (default: the default tenant)")
    p.add_argument("--spam", type=Path, action="append", default=[], help="mail that is spam")
    p.add_argument("--ham", type=Path, action="append", default=[], help="mail that is ham")
    p.add_argument("--task", default="spam", help="the task the corrections are for")
    p.add_argument("--forget", action="store_true", help="remove these messages' corrections")
    p.add_argument("--json", action="store_true", help="print the counts as JSON")
    p.set_defaults(handler=_run_learn)


def _run_learn(args: argparse.Namespace) -> int:
    from textgate import feedback
    from textgate.gateway.scoring.prepare import Preparer
    from textgate.mail.containers import MailReport, iter_mail

    if not (args.spam or args.ham):
        raise errors.DataError("no mail given", hint="pass --spam PATH and/or --ham PATH")
    for path in [*args.spam, *args.ham]:
        if not path.exists():
            raise errors.DataError("no such file or directory", path=path, hint="check the path")
    config = load_config(args.config)
    tenant = args.tenant or None
    if tenant is not None and not any(t.name == tenant for t in config.policy.tenants):
        # the gateway answers only for configured tenants: rows for another would be dead
        raise errors.ConfigError(
            "policy.tenants", f"no tenant {tenant!r}", hint="name a tenant of the config"
        )
    preparer = Preparer(config.normalize, max_body_bytes=config.gateway.max_body_bytes)
    # a person's own folders: the hourly allowance is for the network's clients
    store = feedback.FeedbackStore(config.feedback.path, max_per_tenant_per_hour=1 << 62)
    counts: Counter[str] = Counter()
    try:
        for label, paths in (("spam", args.spam), ("ham", args.ham)):
            for path in paths:
                report = MailReport()
                # every message here has this label: the folder is the label, not its name
                for item in iter_mail(path, label_map=_AnyLabel(label), report=report):
                    text = preparer.email(item.raw).text
                    how = _forget if args.forget else _learn
                    counts[f"{how(store, args.task, tenant, label, text, item.raw)}_{label}"] += 1
                counts[f"skipped_{label}"] += sum(report.skipped.values())
        total = store.count(task=args.task, tenant=tenant or "")
    finally:
        store.close()
    shown = {"tenant": tenant, "task": args.task, "store": str(config.feedback.path)}
    shown |= dict(sorted(counts.items())) | {"tenant_total": total}
    if args.json:
        print_json(shown)
    else:
        for key, value in shown.items():
            out.print(f"{key}: {value}", soft_wrap=True)
    return 0


def _learn(store: Any, task: str, tenant: str | None, label: str, text: str, raw: bytes) -> str:
    """One message learned as sa-learn does: once per label ("already" the second time); a
    message learned with the other label before is relearned (its old rows go)."""
    from textgate import feedback

    sha = feedback.sha256(text)
    before = store.labels_of(text_sha256=sha, task=task, tenant=tenant)
    if before == {label}:
        return "already"
    if before:
        store.remove(text_sha256=sha, tenant=tenant)
    store.add(task=task, label=label, text=text, source="learn", tenant=tenant, raw=raw)
    return "relearned" if before else "learned"


def _forget(store: Any, task: str, tenant: str | None, label: str, text: str, raw: bytes) -> str:
    """sa-learn --forget: the tenant's corrections of this message go, whatever their label."""
    from textgate import feedback

    return "forgot" if store.remove(text_sha256=feedback.sha256(text), tenant=tenant) else "unknown"


class _AnyLabel(dict[str, str]):
    """A label map that labels every message alike (``iter_mail`` asks it by name)."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    def get(self, key: str, default: Any = None) -> str:  # type: ignore[override]
        return self.label

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> str:
        return self.label

"""A tenant's sender lists: allow and block by address, domain or DKIM signing domain.

SpamAssassin's welcomelist_auth / blocklist_from, per tenant (``policy.tenants[].allow`` and
``block``). An entry is ``alice@example.com`` (that address), ``example.com`` (that domain
and every subdomain) or ``dkim:example.com`` (a DKIM signature of that domain, or one below
it, verified by the receiving MTA).

A From header costs a forger nothing, so an address or domain *allows* only a sender the
receiving MTA authenticated for that domain: DMARC pass for it, a DKIM pass whose signing
domain aligns with it, or an SPF pass whose envelope domain aligns with it (its own
``Authentication-Results``, ``textgate.signals.auth``); ``allow_unauthenticated: true`` lifts
that, at the operator's risk. A *block* needs no authentication (a forger gains nothing by
being blocked). Block wins over allow. Only e-mail (a raw message) is matched, and only
tasks with thresholds (spam): a listed message gets ``allow`` or ``quarantine`` whatever its
score, and its result says which entry matched.
"""

from __future__ import annotations

import email.parser
import email.policy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from textgate.config import TaskPolicyConfig, TenantConfig
from textgate.gateway.scoring.policy import NON_FINITE_OUTPUT, Verdict
from textgate.signals import auth

MAX_HEAD = 65_536  # the header block read for Authentication-Results


@dataclass(frozen=True)
class Listed:
    list: str  # allow | block
    entry: str
    why: str

    def as_dict(self) -> dict[str, str]:
        return {"list": self.list, "entry": self.entry, "why": self.why}


def results_of(raw: bytes) -> auth.Results:
    """The receiving MTA's Authentication-Results of a raw message (its header block only)."""
    head = raw[:MAX_HEAD].split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
    parsed = email.parser.BytesHeaderParser(policy=email.policy.compat32).parsebytes(head)
    return auth.read([str(v) for v in parsed.get_all("Authentication-Results") or []])


def match(tenant: TenantConfig, sender: str | None, results: auth.Results) -> Listed | None:
    """The first block entry that matches, else the first allow entry that may, else None."""
    sender = (sender or "").strip().lower()
    domain = sender.rsplit("@", 1)[-1] if "@" in sender else ""
    for entry in tenant.block:
        if _hits(entry, sender, domain, results):
            return Listed("block", entry, f"sender {sender or '?'} is blocked")
    for entry in tenant.allow:
        if not _hits(entry, sender, domain, results):
            continue
        if entry.startswith("dkim:"):
            return Listed("allow", entry, "a verified DKIM signature of this domain")
        how = _authenticated(domain, results)
        if how:
            return Listed("allow", entry, f"sender {sender} authenticated by {how}")
        if tenant.allow_unauthenticated:
            return Listed("allow", entry, f"sender {sender} (not authenticated: allowed anyway)")
    return None


def _hits(entry: str, sender: str, domain: str, results: auth.Results) -> bool:
    entry = entry.lower()
    if entry.startswith("dkim:"):
        signed = results.passed.get("dkim", set())
        return any(d == entry[5:] or d.endswith("." + entry[5:]) for d in signed)
    if "@" in entry:
        return sender == entry
    return bool(domain) and (domain == entry or domain.endswith("." + entry))


def _authenticated(domain: str, results: auth.Results) -> str | None:
    """How the receiving MTA authenticated ``domain`` (the From domain), if it did."""
    if not domain:
        return None
    for method in ("dmarc", "dkim", "spf"):
        if any(auth.aligned(domain, d) for d in results.passed.get(method, ())):
            return method
    return None


def for_items(
    tenant: TenantConfig | None,
    rule: TaskPolicyConfig,
    raw: Sequence[str | bytes],
    senders: Sequence[str | None],
) -> list[Listed | None]:
    """Each item's list match: only raw e-mail, for a threshold task, of a tenant with lists."""
    if tenant is None or not (tenant.allow or tenant.block) or rule.kind != "threshold":
        return [None] * len(raw)
    return [
        match(tenant, sender, results_of(x)) if isinstance(x, bytes) else None
        for x, sender in zip(raw, senders, strict=True)
    ]


def verdict(v: Verdict, listed: Listed | None) -> Verdict:
    """The verdict a list entry makes: quarantine for block, allow for allow (a model output
    that was not finite still goes to review: that is a defect to look at, not a sender)."""
    if listed is None:
        return v
    if listed.list == "block":
        return Verdict("quarantine", v.score, v.defects)
    return v if NON_FINITE_OUTPUT in v.defects else Verdict("allow", v.score, v.defects)


def as_result(listed: Listed | None) -> dict[str, Any]:
    return {"listed": listed.as_dict()} if listed is not None else {}

"""Sections ``mail`` (spamd, milter), ``feedback`` and ``review``: the mail side."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from textgate.config.checks import check_port, require

MilterReply = Literal["accept", "headers", "quarantine", "reject", "discard", "tempfail"]


@dataclass(frozen=True, kw_only=True)
class MailConfig:
    """The spamd and milter listeners (docs/mail.md); both off unless a port is set."""

    host: str = "127.0.0.1"
    spamd_port: int | None = None  # SpamAssassin's spamc protocol (spamd's port is 783)
    milter_port: int | None = None  # Postfix/Sendmail milter protocol
    task: str = "spam"
    required_points: float = 5.0  # spamd's "required": the policy's review_at maps here
    max_points: float = 10.0  # a score of 1.0 maps here (linear on both sides of review_at)
    max_connections: int = 32  # concurrent connections per listener; beyond: busy answer
    read_timeout_s: float = 30.0  # a client silent this long mid-request is dropped
    explain: int = 0  # spans in REPORT/SYMBOLS (0: no explanation, one Triton request less)
    milter_allow: MilterReply = "headers"
    milter_review: MilterReply = "headers"
    milter_quarantine: MilterReply = "quarantine"
    milter_error: MilterReply = "tempfail"  # Triton down, overload: the MTA retries later
    # spamc -L (TELL) writes corrections that steer training, and the socket has no API
    # key: like spamd without --allow-tell, refused unless switched on, from these networks
    allow_tell: bool = False
    tell_users: tuple[str, ...] = ()  # empty: no User, or a User naming a configured tenant
    tell_networks: tuple[str, ...] = ("127.0.0.0/8", "::1/128")  # spamd's --allowed-ips
    # a sender's own X-Spam-* headers ("X-Spam-Status: No") would fool later filters; false
    # only when an upstream trusted filter's headers must reach them
    strip_spam_headers: bool = True

    def __post_init__(self) -> None:
        import ipaddress  # only here: the section's one check that needs it

        for key in ("spamd_port", "milter_port"):
            value = getattr(self, key)
            if value is not None:
                check_port(value, key)
        require(bool(self.task), "task", "must not be empty")
        require(self.required_points > 0, "required_points", "must be > 0")
        require(self.max_points > self.required_points, "max_points", "must be > required_points")
        require(self.max_connections >= 1, "max_connections", "must be >= 1")
        require(self.read_timeout_s > 0, "read_timeout_s", "must be > 0")
        require(0 <= self.explain <= 20, "explain", "must be within 0..20")
        require(all(u.strip() for u in self.tell_users), "tell_users", "must not hold empty names")
        for i, net in enumerate(self.tell_networks):
            try:
                ipaddress.ip_network(net)
                problem = ""
            except ValueError as exc:
                problem = str(exc)
            require(
                not problem,
                f"tell_networks[{i}]",
                f"{net!r} is not a network in CIDR notation ({problem})",
                hint="an address or address/prefix with the host bits zero, "
                "e.g. 10.0.0.0/8, 192.0.2.7 or 2001:db8::/32",
            )


@dataclass(frozen=True, kw_only=True)
class FeedbackConfig:
    """Operator corrections (spamc -L, POST /v1/feedback) in an SQLite store."""

    path: Path = Path("textgate-feedback.sqlite3")
    max_per_tenant_per_hour: int = 1000  # beyond: 429, so one tenant cannot flood the store
    recent_requests: int = 10_000  # verdicts kept in memory so a request id can be corrected
    recent_bytes: int = 64 * 1024 * 1024  # ... and at most this many bytes of their input
    # Per-tenant learning (docs/learning.md): each tenant's corrections move its own scores.
    # Off by default: it lets unreviewed spamc TELLs change verdicts, which an operator opts
    # into; on, it opens the store at start and rebuilds every tenant's layer from it.
    tenant_learning: bool = False
    min_corrections: int = 10  # a tenant's layer has weight 0 below this (and one class)
    learning_weight: float = 2.0  # logits per unit of a layer's signal, at most (tuned: fold 0)
    learning_poll_s: float = 2.0  # how often the store is checked for rows of another process

    def __post_init__(self) -> None:
        require(self.max_per_tenant_per_hour >= 1, "max_per_tenant_per_hour", "must be >= 1")
        require(self.recent_requests >= 0, "recent_requests", "must be >= 0")
        require(self.recent_bytes >= 0, "recent_bytes", "must be >= 0")
        require(self.min_corrections >= 2, "min_corrections", "must be >= 2 (one per class)")
        require(0.0 <= self.learning_weight <= 10.0, "learning_weight", "must be in [0, 10]")
        require(self.learning_poll_s > 0, "learning_poll_s", "must be > 0")


@dataclass(frozen=True, kw_only=True)
class ReviewConfig:
    """The review/quarantine store behind the console (docs/console.md); off unless a path."""

    path: Path | None = None  # SQLite file; null: review and quarantine verdicts are not kept
    actions: tuple[str, ...] = ("review", "quarantine")  # the actions whose mail is kept
    max_age_days: float = 30.0  # older messages are dropped (counted in a metric)
    max_messages: int = 100_000  # beyond: the oldest are dropped (counted)
    max_bytes: int = 1_073_741_824  # raw + text bytes held at most; beyond: the oldest go
    explain: int = 5  # trigger words computed when a message without them is first opened
    session_ttl_s: float = 8 * 3600.0  # a console login lasts this long
    login_attempts: int = 10  # failed console logins per client address per window; then 429
    login_window_s: float = 300.0
    # Releasing quarantined mail from the MTA's hold queue (docs/operators.md): argv, no shell,
    # run when a reviewer releases a message the milter saw with a queue id; "{queue_id}" is
    # replaced by that id (checked: letters and digits only). Empty: a release is an event only.
    release_command: tuple[str, ...] = ()
    release_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        require(bool(self.actions), "actions", "must name at least one action")
        require(self.max_age_days > 0, "max_age_days", "must be > 0")
        require(self.max_messages >= 1, "max_messages", "must be >= 1")
        require(self.max_bytes >= 1024, "max_bytes", "must be >= 1024")
        require(0 <= self.explain <= 20, "explain", "must be within 0..20")
        require(self.session_ttl_s > 0, "session_ttl_s", "must be > 0")
        require(self.login_attempts >= 1, "login_attempts", "must be >= 1")
        require(self.login_window_s > 0, "login_window_s", "must be > 0")
        require(self.release_timeout_s > 0, "release_timeout_s", "must be > 0")
        if self.release_command:
            program = self.release_command[0]
            require(
                program.startswith("/"),
                "release_command",
                f"the program must be an absolute path (no PATH lookup), not {program!r}",
            )
            require(
                any("{queue_id}" in a for a in self.release_command[1:]),
                "release_command",
                'must pass the held message\'s queue id: an argument with "{queue_id}"',
            )

"""Section ``policy``: thresholds -> actions per task, label rules, tenants."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from textgate.config.checks import require


@dataclass(frozen=True, kw_only=True)
class LabelRule:
    """A label with thresholds of its own (phish: act on a lower probability than spam)."""

    label: str
    review_at: float
    quarantine_at: float

    def __post_init__(self) -> None:
        require(bool(self.label), "label", "must not be empty")
        for key in ("quarantine_at", "review_at"):
            require(0.0 <= getattr(self, key) <= 1.0, key, "must be within 0..1")
        require(
            self.review_at <= self.quarantine_at,
            "review_at",
            f"{self.review_at} is above quarantine_at {self.quarantine_at}",
        )


_LANGUAGE = re.compile(r"[a-z]{2,3}")


@dataclass(frozen=True, kw_only=True)
class TaskPolicyConfig:
    """Scores -> actions for one task.

    ``threshold``: score = P(positive_label), or 1 - P(negative_label) when that is set (ham
    vs spam + phish); >= quarantine_at -> quarantine, >= review_at -> review, else allow; each
    of ``label_rules`` can raise the action on its own label's probability. ``label``: the
    top label, or ``uncertain`` while the top probability is below 0.5 + uncertain_band.
    """

    task: str
    kind: Literal["threshold", "label"] = "threshold"
    positive_label: str | None = None  # threshold kind; null: the task's last label
    negative_label: str | None = None  # threshold kind: score = 1 - P(this label)
    label_rules: tuple[LabelRule, ...] = ()
    quarantine_at: float = 0.95
    review_at: float = 0.85
    uncertain_band: float = 0.1
    rescore_band: float = 0.05  # re-score within +-band of a decision threshold; 0: never
    # [low, high]: re-score exactly where the score lies in it (seed 001: 0.45-0.55, where
    # an fp16 0.47 against an fp32 0.52 flips the label); null: rescore_band around thresholds
    rescore_range: tuple[float, float] | None = None
    # a note when more than this share of a text's tokens are [UNK] (a script the model has
    # not seen); null: not computed (it costs a second tokenization in the gateway)
    unk_note_above: float | None = None
    # threshold kind: the least action for a message read best-effort (MIME not trusted)
    malformed_action: Literal["allow", "review", "quarantine"] = "review"
    # Languages the site reads (ISO 639-1, e.g. [en, de]); a text detected in another gets at
    # least language_action (SpamAssassin's ok_languages). Empty: every language is fine.
    ok_languages: tuple[str, ...] = ()
    language_action: Literal["review", "quarantine"] = "review"
    # The confidence cascade (docs/gateway.md): mail the n-gram half alone is sure of is
    # answered without the transformer, within the bundle's bounds. false: the transformer
    # reads every message. cascade_allow_at_or_below: a stricter allow bound than the
    # bundle's (the lower of the two applies); null: the bundle's.
    cascade: bool = True
    cascade_allow_at_or_below: float | None = None

    def __post_init__(self) -> None:
        require(bool(self.task), "task", "must not be empty")
        c = self.cascade_allow_at_or_below
        require(
            c is None or 0.0 <= c < 1.0,
            "cascade_allow_at_or_below",
            "must be within 0..1 (or null: the bundle's bound)",
        )
        for i, code in enumerate(self.ok_languages):
            require(
                _LANGUAGE.fullmatch(code) is not None,
                f"ok_languages[{i}]",
                f"{code!r} is not a language code",
                hint="ISO 639-1 codes in lower case, e.g. en, de, zh",
            )
        require(
            self.language_action in ("review", "quarantine"),
            "language_action",
            f"'{self.language_action}' is not review or quarantine",
        )
        require(
            self.malformed_action in ("allow", "review", "quarantine"),
            "malformed_action",
            f"'{self.malformed_action}' is not allow, review or quarantine",
        )
        for key in ("quarantine_at", "review_at"):
            require(0.0 <= getattr(self, key) <= 1.0, key, "must be within 0..1")
        require(
            self.review_at <= self.quarantine_at,
            "review_at",
            f"{self.review_at} is above quarantine_at {self.quarantine_at}",
        )
        require(0.0 <= self.uncertain_band < 0.5, "uncertain_band", "must be within 0..0.5")
        require(0.0 <= self.rescore_band < 0.5, "rescore_band", "must be within 0..0.5")
        r = self.rescore_range
        require(
            r is None or (len(r) == 2 and 0.0 <= r[0] <= r[1] <= 1.0),
            "rescore_range",
            f"must be [low, high] with 0 <= low <= high <= 1, got {list(r or ())}",
        )
        require(
            self.unk_note_above is None or 0.0 <= self.unk_note_above < 1.0,
            "unk_note_above",
            "must be within 0..1 (or null: off)",
        )
        require(
            not (self.positive_label and self.negative_label),
            "negative_label",
            "set positive_label or negative_label, not both",
        )

    def thresholds(self) -> tuple[float, ...]:
        """Scores where the action changes: the re-score band lies around these."""
        if self.kind == "threshold":
            return (self.review_at, self.quarantine_at)
        band = self.uncertain_band
        return (0.5 - band, 0.5 + band) if band else (0.5,)

    def rescore_intervals(self) -> tuple[tuple[float, float], ...]:
        """Score intervals that the fp32 variant re-scores (what a response reports)."""
        if self.rescore_range is not None:
            return (self.rescore_range,)
        if self.rescore_band <= 0:
            return ()
        b = self.rescore_band
        return tuple(
            (round(max(0.0, t - b), 6), round(min(1.0, t + b), 6)) for t in self.thresholds()
        )


_DOMAIN_RE = r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]{2,63}"
_DOMAIN = re.compile(_DOMAIN_RE, re.I)
_LIST_ENTRY = re.compile(r"(?:dkim:|[^@\s]+@)?" + _DOMAIN_RE, re.I)


@dataclass(frozen=True, kw_only=True)
class TenantConfig:
    """A tenant picked by API key (``X-API-Key``) or by name in the tenant header."""

    name: str
    api_key: str | None = None
    tasks: tuple[TaskPolicyConfig, ...] = ()  # replace the default policy of these tasks
    # Sender lists (docs/gateway.md): "alice@example.com", "example.com" (and subdomains) or
    # "dkim:example.com" (a verified DKIM signature of that domain). Block wins over allow;
    # an address or domain allows only an authenticated sender unless allow_unauthenticated.
    allow: tuple[str, ...] = ()
    block: tuple[str, ...] = ()
    allow_unauthenticated: bool = False
    # Recipient domains (and their subdomains) whose mail is this tenant's on the mail
    # sockets: the milter's envelope RCPT, else the receiving MTA's topmost Delivered-To.
    domains: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        require(bool(self.name), "name", "must not be empty")
        for i, d in enumerate(self.domains):
            require(_DOMAIN.fullmatch(d) is not None, f"domains[{i}]", f"{d!r} is not a domain")
        for key in ("allow", "block"):
            for i, entry in enumerate(getattr(self, key)):
                require(
                    _LIST_ENTRY.fullmatch(entry) is not None,
                    f"{key}[{i}]",
                    f"{entry!r} is not an address, a domain or dkim:<domain>",
                    hint="e.g. alice@example.com, example.com, dkim:example.com",
                )
        require(
            self.api_key is None or len(self.api_key) >= 8,
            "api_key",
            "must be at least 8 characters",
        )
        names = [t.task for t in self.tasks]
        dup = sorted({n for n in names if names.count(n) > 1})
        require(not dup, "tasks", f"task {dup[0] if dup else ''!r} appears twice")


def _default_policies() -> tuple[TaskPolicyConfig, ...]:
    return (
        # Seed 000's actions on calibrated P(spam or phish); phishing, the costly miss, is
        # sent to review from P(phish) 0.5 and quarantined from 0.85.
        TaskPolicyConfig(
            task="spam",
            kind="threshold",
            negative_label="ham",
            label_rules=(LabelRule(label="phish", review_at=0.5, quarantine_at=0.85),),
        ),
        # Seed 001: fp32 answers where the fast variant's score lies in 0.45-0.55; a text
        # mostly of [UNK] tokens is in a script the model has not seen (docs/gateway.md).
        *(
            TaskPolicyConfig(task=t, kind="label", rescore_range=(0.45, 0.55), unk_note_above=0.2)
            for t in ("sentiment", "sentiment-zh")
        ),
    )


@dataclass(frozen=True, kw_only=True)
class PolicyConfig:
    """Per-task policies plus per-tenant overrides; a task with no entry gets ``label``."""

    tasks: tuple[TaskPolicyConfig, ...] = field(default_factory=_default_policies)
    tenants: tuple[TenantConfig, ...] = ()
    tenant_header: str = "X-Tenant"  # names a tenant; tenants with an api_key need the key

    def __post_init__(self) -> None:
        names = [t.task for t in self.tasks]
        dup = sorted({n for n in names if names.count(n) > 1})
        require(not dup, "tasks", f"task {dup[0] if dup else ''!r} appears twice")
        tenants = [t.name for t in self.tenants]
        dup = sorted({n for n in tenants if tenants.count(n) > 1})
        require(not dup, "tenants", f"tenant {dup[0] if dup else ''!r} appears twice")
        keys = [t.api_key for t in self.tenants if t.api_key]
        require(len(keys) == len(set(keys)), "tenants", "two tenants share an api_key")
        require(bool(self.tenant_header), "tenant_header", "must not be empty")
        owned = [d.lower() for t in self.tenants for d in t.domains]
        dup = sorted({d for d in owned if owned.count(d) > 1})
        require(not dup, "tenants", f"domain {dup[0] if dup else ''!r} belongs to two tenants")

    def tenant_for_domain(self, domain: str) -> str | None:
        """The tenant owning a recipient domain (the longest listed domain that matches)."""
        domain = domain.strip().strip(".").lower()
        best: tuple[int, str] | None = None
        for t in self.tenants:
            for d in t.domains:
                d = d.lower()
                if (domain == d or domain.endswith("." + d)) and (best is None or len(d) > best[0]):
                    best = (len(d), t.name)
        return best[1] if best else None

    def for_task(self, task: str, tenant: str | None = None) -> TaskPolicyConfig:
        """The tenant's override, else the task's policy, else the ``label`` default."""
        for t in self.tenants:
            if t.name == tenant:
                hit = next((p for p in t.tasks if p.task == task), None)
                if hit is not None:
                    return hit
        hit = next((p for p in self.tasks if p.task == task), None)
        return hit or TaskPolicyConfig(task=task, kind="label")

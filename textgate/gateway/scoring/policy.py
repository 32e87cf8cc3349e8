"""Scores -> actions: per task from config, with per-tenant overrides.

threshold kind (spam): score = P(positive label); >= quarantine_at -> quarantine,
>= review_at -> review, else allow. label kind (sentiment): the top label, or ``uncertain``
while the top probability is below 0.5 + uncertain_band. The score of a label-kind task is
P(last label) for two labels (so the re-score band has one axis), else the top probability.
"""

from __future__ import annotations

import dataclasses
import hmac
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from textgate.config import PolicyConfig, TaskPolicyConfig, TenantConfig
from textgate.errors import InvalidInput, Unauthorized

API_KEY_HEADER = "X-API-Key"


# A NaN or infinite probability is a defect of the model, not a score: no threshold may
# read it, so the verdict is ``review`` and lists this defect (docs/gateway.md).
NON_FINITE_OUTPUT = "model_output_not_finite"
# A task label that means "not spam" (spamc's ham; the mail marks never flag it)
NEGATIVE_LABELS = ("ham", "negative", "legit", "not_spam")


@dataclass(frozen=True)
class Verdict:
    action: str
    score: float  # may be NaN/inf exactly when ``defects`` holds NON_FINITE_OUTPUT
    defects: tuple[str, ...] = ()


_SEVERITY = {"allow": 0, "review": 1, "quarantine": 2}


def score_of(rule: TaskPolicyConfig, labels: Sequence[str], probs: Sequence[float]) -> float:
    if rule.kind == "threshold" and rule.negative_label in labels:
        return 1.0 - float(probs[labels.index(rule.negative_label)])
    if rule.kind == "threshold" or len(labels) == 2:
        positive = rule.positive_label or labels[-1]
        index = labels.index(positive) if positive in labels else len(labels) - 1
        return float(probs[index])
    return float(max(probs))


def decide(rule: TaskPolicyConfig, labels: Sequence[str], probs: Sequence[float]) -> Verdict:
    score = score_of(rule, labels, probs)
    if not (math.isfinite(score) and all(math.isfinite(float(p)) for p in probs)):
        # Neither waved through (NaN compares false) nor quarantined (inf passes every
        # threshold): a person looks at it.
        return Verdict("review", score, (NON_FINITE_OUTPUT,))
    if rule.kind == "threshold":
        action = _action(score, rule.review_at, rule.quarantine_at)
        for extra in rule.label_rules:
            if extra.label in labels:
                p = float(probs[labels.index(extra.label)])
                other = _action(p, extra.review_at, extra.quarantine_at)
                action = max(action, other, key=_SEVERITY.__getitem__)
        return Verdict(action, score)
    top = max(range(len(labels)), key=lambda i: probs[i])
    if float(probs[top]) < 0.5 + rule.uncertain_band:
        return Verdict("uncertain", score)
    return Verdict(labels[top], score)


def _action(score: float, review_at: float, quarantine_at: float) -> str:
    if score >= quarantine_at:
        return "quarantine"
    return "review" if score >= review_at else "allow"


def check_labels(rule: TaskPolicyConfig, labels: Sequence[str]) -> str | None:
    """A problem with this rule for a model with these labels, or None."""
    for key in ("positive_label", "negative_label"):
        name = getattr(rule, key)
        if rule.kind == "threshold" and name and name not in labels:
            return (
                f"policy for '{rule.task}' names {key} '{name}', "
                f"but the model's labels are {list(labels)}"
            )
    return None


class Policy:
    """A loaded PolicyConfig: picks the tenant of a request and its rule for a task."""

    def __init__(self, config: PolicyConfig) -> None:
        self.config = config
        self._by_key = {t.api_key: t.name for t in config.tenants if t.api_key}
        self._names = {t.name: t for t in config.tenants}

    def tenant(self, headers: Mapping[str, str]) -> str | None:
        """The tenant named by API key or tenant header; None: the default policy."""
        key = headers.get(API_KEY_HEADER.lower()) or headers.get(API_KEY_HEADER)
        name = headers.get(self.config.tenant_header.lower()) or headers.get(
            self.config.tenant_header
        )
        by_key = self._match_key(key) if key else None
        if key and by_key is None:
            raise Unauthorized("unknown API key", field=API_KEY_HEADER)
        if name is None:
            return by_key
        tenant = self._names.get(name)
        if tenant is None:
            raise InvalidInput(f"unknown tenant {name[:64]!r}", field=self.config.tenant_header)
        if tenant.api_key and by_key != name:
            raise Unauthorized(f"tenant {name!r} needs its API key", field=API_KEY_HEADER)
        return name

    def tenant_config(self, name: str | None) -> TenantConfig | None:
        return self._names.get(name) if name else None

    def _match_key(self, key: str) -> str | None:
        for known, name in self._by_key.items():
            if hmac.compare_digest(known.encode(), key.encode()):
                return name
        return None

    def rule(self, task: str, tenant: str | None = None) -> TaskPolicyConfig:
        return self.config.for_task(task, tenant)

    def decide(
        self, task: str, labels: Sequence[str], probs: Sequence[float], tenant: str | None
    ) -> Verdict:
        return decide(self.rule(task, tenant), labels, probs)


# --- malformed mail (issue 9 §4) ----------------------------------------------------------


def on_malformed(rule: TaskPolicyConfig, verdict: Verdict) -> Verdict:
    """A message read best-effort gets at least ``malformed_action``: breaking the MIME
    must not lower a verdict, and a person sees the strange mail. Label-kind tasks have no
    such action and keep the model's."""
    if rule.kind != "threshold":
        return verdict
    return dataclasses.replace(verdict, action=at_least(verdict.action, rule.malformed_action))


def at_least(action: str, floor: str) -> str:
    """The stricter of two actions (allow < review < quarantine)."""
    return action if _SEVERITY.get(action, 0) >= _SEVERITY[floor] else floor


def spamc_label(label: str, labels: Sequence[str]) -> str:
    """spamc's ``spam``/``ham`` as the task's label (a three-label model has both too)."""
    if label in labels:
        return label
    negative = next((x for x in labels if x.lower() in NEGATIVE_LABELS), labels[0])
    return negative if label == "ham" else labels[-1]

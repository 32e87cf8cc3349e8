"""Campaign memory: keys that never cross tenants, versions or policies; bounded; expiring."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pytest

from textgate.config import TaskPolicyConfig
from textgate.gateway.scoring.campaign import Campaigns

ROUTE = SimpleNamespace(task="spam", model="spam", version="3", variant="int8", precise="spam_fp32")
RULE = TaskPolicyConfig(task="spam", kind="threshold", positive_label="spam")
PIECES = ["win a free cruise", "[SYM:LIST_ID]"]


def key(**over: object) -> str:
    args: dict[str, object] = {
        "tenant": "acme", "route": ROUTE, "rule": RULE, "rescore": True, "pieces": PIECES,
    } | over  # fmt: skip
    return Campaigns.key(**args)  # type: ignore[arg-type]


def test_the_key_changes_with_everything_the_answer_depends_on() -> None:
    base = key()
    assert key() == base  # deterministic
    others = [
        key(tenant="globex"), key(tenant=None),
        key(route=SimpleNamespace(**{**vars(ROUTE), "version": "4"})),
        key(route=SimpleNamespace(**{**vars(ROUTE), "variant": "fp32"})),
        key(route=SimpleNamespace(**{**vars(ROUTE), "model": "spam_v4"})),
        key(rule=dataclasses.replace(RULE, review_at=0.4)),
        key(rescore=False),
        key(pieces=["win a free cruise"]),  # a symbol fewer
        key(pieces=["win a free cruise ", "[SYM:LIST_ID]"]),
    ]  # fmt: skip
    assert base not in others and len(set(others)) == len(others)


def test_bounded_least_recently_used_first() -> None:
    memory = Campaigns(entries=3, ttl_s=60)
    for i in range(3):
        memory.put(f"k{i}", i, [0.1, 0.9], now=0.0)
    assert memory.get("k0", now=1.0) == 0  # k0 used: k1 is now the oldest
    for i in range(3, 1000):  # a stream of distinct messages
        memory.put(f"k{i}", i, [0.1, 0.9], now=2.0)
        assert len(memory) <= 3
    assert memory.get("k1", now=3.0) is None and memory.get("k999", now=3.0) == 999


def test_entries_expire_and_anomalies_are_never_kept() -> None:
    memory = Campaigns(entries=10, ttl_s=5)
    memory.put("a", "answer", [0.2, 0.8], now=100.0)
    assert memory.get("a", now=104.0) == "answer"
    assert memory.get("a", now=106.0) is None and len(memory) == 0
    memory.put("nan", "x", [math.nan, 0.5], now=0.0)
    memory.put("inf", "x", [0.0, math.inf], now=0.0)
    assert len(memory) == 0


def test_off_unless_configured() -> None:
    from textgate.config import GatewayConfig

    assert Campaigns.from_config(GatewayConfig()) is None
    on = Campaigns.from_config(GatewayConfig(campaign_entries=5, campaign_ttl_s=30))
    assert on is not None and (on.entries, on.ttl_s) == (5, 30)
    with pytest.raises(Exception, match="campaign_entries"):
        GatewayConfig(campaign_entries=-1)

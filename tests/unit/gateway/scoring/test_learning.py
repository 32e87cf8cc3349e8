"""The tenant-learning step: it moves the score, re-decides the action, leaves lists alone."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from textgate import feedback, tenant_bayes
from textgate.config import Config, FeedbackConfig
from textgate.gateway.records.prometheus import Metrics
from textgate.gateway.scoring import learning, steps
from textgate.gateway.scoring.desk import Desk
from textgate.gateway.scoring.learning import Learned
from textgate.gateway.scoring.policy import Verdict
from textgate.gateway.scoring.senders import Listed

HAM = "the weekly newsletter of the allotment society, plots and seeds for members"
SPAM = "you won a prize claim your reward now click the link"


@dataclass(frozen=True)
class R:
    id: int
    task: str
    tenant: str | None
    label: str
    text: str


def learned_for(tenant: str | None, n: int = 12, minimum: int = 10) -> Learned:
    layers = tenant_bayes.Learning(["ham"])
    rows = [R(i, "spam", tenant, "ham", f"{HAM} issue {i}") for i in range(n)]
    rows += [R(100 + i, "spam", tenant, "spam", f"{SPAM} code {i}") for i in range(n)]
    layers.rebuild(rows)
    return Learned(layers, minimum, 2.0)


def run(
    learned: Learned | None, tenant: str | None, text: str, v: Verdict, **kw: object
) -> steps.Item:
    rule = Config().policy.for_task("spam")
    item = steps.Item(text, text, None, v, **kw)  # type: ignore[arg-type]
    steps.tenant_learning(steps.Scope("spam", rule, None, Metrics(), tenant, learned), [item])
    return item


def test_the_tenants_corrections_re_decide_the_action() -> None:
    item = run(learned_for("a"), "a", HAM + " issue 99", Verdict("review", 0.9))
    assert item.verdict.action == "allow" and item.verdict.score < 0.85
    info = item.result["tenant_learning"]
    assert info["corrections"] == 24 and info["weight"] > 0 and info["log_odds"] < 0
    assert info["version"].startswith("24-")
    spam = run(learned_for("a"), "a", SPAM + " code 99", Verdict("allow", 0.8))
    assert spam.verdict.action in ("review", "quarantine") and spam.verdict.score > 0.85


def test_another_tenant_and_the_default_one_are_untouched() -> None:
    for tenant in ("b", None):
        item = run(learned_for("a"), tenant, HAM, Verdict("review", 0.9))
        assert item.verdict == Verdict("review", 0.9) and item.result == {}


def test_weight_zero_below_the_minimum_changes_nothing() -> None:
    item = run(learned_for("a", n=4), "a", HAM, Verdict("review", 0.9))
    assert item.verdict == Verdict("review", 0.9)
    assert item.result["tenant_learning"]["weight"] == 0.0


def test_a_sender_list_decision_is_never_overridden() -> None:
    listed = Listed("block", "spam.example", "blocked")
    item = run(learned_for("a"), "a", HAM, Verdict("quarantine", 0.9), listed=listed)
    assert item.verdict == Verdict("quarantine", 0.9)


def test_a_floor_stays_a_floor() -> None:
    rule = Config().policy.for_task("spam")
    found = learning.signal(learned_for("a"), "a", "spam", HAM)
    # review at a score the thresholds call allow: a floor (malformed, a label rule) put it there
    v = learning.verdict(rule, Verdict("review", 0.5), found, None)
    assert v.action == "review" and v.score < 0.5


def test_the_desk_learns_live_and_picks_up_another_process(tmp_path: Path) -> None:
    asyncio.run(_desk_learns(tmp_path))


async def _desk_learns(tmp_path: Path) -> None:
    cfg = FeedbackConfig(path=tmp_path / "fb.sqlite3", tenant_learning=True, learning_poll_s=0.001)
    desk = Desk(lambda: cfg)
    await desk.start_learning()
    desk.store.add(task="spam", label="spam", text=SPAM, source="http", tenant="a")
    layer = desk.learning.layer("a", "spam")
    assert layer is not None and layer.n == 1  # live, through the store's watcher
    other = feedback.FeedbackStore(cfg.path)  # textgate learn, beside the gateway
    other.add(task="spam", label="ham", text=HAM, source="learn", tenant="a")
    other.close()
    learned = await desk.learned()
    assert learned is not None
    layer = learned.layers.layer("a", "spam")
    assert layer is not None and layer.docs == [1, 1]
    assert desk.store.remove(text_sha256=feedback.sha256(SPAM), tenant="a") == 1
    assert layer.docs == [1, 0]
    desk.close()


def test_a_tenant_with_a_layer_is_scored_off_the_event_loop(monkeypatch: object) -> None:
    """Hashing and re-centring run in a worker thread for a tenant with a layer, so they
    never hold other requests; a tenant without one stays on the loop (no thread hop)."""
    import threading

    seen: list[tuple[str | None, bool]] = []

    def record(scope: steps.Scope, items: object) -> None:
        seen.append((scope.tenant_name, threading.current_thread() is threading.main_thread()))

    monkeypatch.setattr(steps, "STEPS", (record, *steps.STEPS))  # type: ignore[attr-defined]
    rule = Config().policy.for_task("spam")
    learned = learned_for("a")

    async def score(tenant: str) -> steps.Item:
        item = steps.Item(HAM, HAM + " issue 99", None, Verdict("review", 0.9))
        await steps.run_async(steps.Scope("spam", rule, None, Metrics(), tenant, learned), [item])
        return item

    moved = asyncio.run(score("a"))
    kept = asyncio.run(score("b"))
    assert seen == [("a", False), ("b", True)]
    assert moved.verdict.action == "allow" and kept.verdict.action == "review"

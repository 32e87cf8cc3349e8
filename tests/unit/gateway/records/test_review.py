"""The review store: one row per request id, filters, retention bounds counted, decisions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from textgate.errors import ReviewStoreError
from textgate.gateway.records import review_store
from textgate.gateway.records.review_records import keep_results
from textgate.gateway.records.review_store import Filters, ReviewMetrics, ReviewStore


def result(rid: str, action: str = "review", score: float = 0.9) -> dict[str, Any]:
    return {
        "request_id": rid,
        "label": "spam",
        "action": action,
        "score": score,
        "probabilities": {"ham": 1 - score, "spam": score},
        "model": {"name": "spam", "version": "3"},
        "normalization": {"link_domains": ["bad.example"], "sender": "a@b.example"},
    }


def keep(store: ReviewStore, rid: str, *, now: float = 1000.0, size: int = 10, **kw: Any) -> bool:
    return store.keep(
        request_id=rid,
        task="spam",
        tenant=kw.pop("tenant", None),
        result=result(rid, **kw),
        text="t" * size,
        raw=b"",
        now=now,
    )


def dropped(registry: CollectorRegistry, reason: str) -> float:
    value = registry.get_sample_value("textgate_review_dropped_total", {"reason": reason})
    return value or 0.0


def test_keep_get_and_find_newest_first_with_filters(tmp_path: Path) -> None:
    store = ReviewStore(tmp_path / "r.sqlite3")
    assert keep(store, "a", score=0.86, tenant="acme")
    assert keep(store, "b", action="quarantine", score=0.97)
    assert not keep(store, "a")  # the same request id is kept once
    assert [h.request_id for h in store.find()] == ["b", "a"]
    assert [h.request_id for h in store.find(Filters(tenant="acme"))] == ["a"]
    assert [h.request_id for h in store.find(Filters(action="quarantine"))] == ["b"]
    assert [h.request_id for h in store.find(Filters(min_score=0.9))] == ["b"]
    assert [h.request_id for h in store.find(Filters(max_score=0.9))] == ["a"]
    held = store.get("a")
    assert held is not None and held.tenant == "acme" and held.model_version == "3"
    assert held.notes["link_domains"] == ["bad.example"] and held.explanation is None
    assert store.counts() == {"total": 2, "open": 2, "decided": 0, "review": 1, "quarantine": 1}


def test_mark_is_first_come(tmp_path: Path) -> None:
    store = ReviewStore(tmp_path / "r.sqlite3")
    keep(store, "a")
    assert store.mark("a", "spam", "admin")
    assert not store.mark("a", "ham", "admin")
    held = store.get("a")
    assert held is not None and held.decision == "spam" and held.decided_by == "admin"
    assert store.count(Filters(decided=False)) == 0 and store.count(Filters(decided=True)) == 1


def test_retention_by_age_count_and_bytes_is_counted(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    store = ReviewStore(
        tmp_path / "r.sqlite3",
        max_age_days=1,
        max_messages=3,
        max_bytes=2000,
        metrics=ReviewMetrics(registry),
    )
    keep(store, "old", now=0.0)
    keep(store, "new", now=review_store.DAY_S + 1)
    assert [h.request_id for h in store.find()] == ["new"]
    assert dropped(registry, "age") == 1
    for i in range(3):
        keep(store, f"n{i}", now=review_store.DAY_S + 2)
    assert store.count() == 3 and dropped(registry, "count") == 1
    assert store.get("new") is None  # the oldest went first
    keep(store, "big", now=review_store.DAY_S + 3, size=1995)
    assert dropped(registry, "bytes") == 2 and store.get("big") is not None
    assert sum(h.size for h in store.find(limit=-1)) <= 2000


def test_keep_results_keeps_only_the_configured_actions(tmp_path: Path) -> None:
    import asyncio

    store = ReviewStore(tmp_path / "r.sqlite3")
    raw = [b"Subject: =?utf-8?q?Hello_there?=\r\nFrom: x@y.example\r\n\r\nbody", "plain text"]
    results = [result("m1", action="quarantine"), result("m2", action="allow")]
    n = asyncio.run(
        keep_results(store, ("review", "quarantine"), "spam", raw, None, results, ["a", "b"])
    )
    assert n == 1
    held = store.get("m1")
    assert held is not None and held.subject == "Hello there" and held.sender == "a@b.example"
    replay = asyncio.run(keep_results(store, ("quarantine",), "spam", raw, None, results, []))
    assert replay == 0  # an idempotent replay has no normalized texts: kept the first time


def test_an_unusable_path_is_a_review_store_error(tmp_path: Path) -> None:
    (tmp_path / "dir.sqlite3").mkdir()
    with pytest.raises(ReviewStoreError, match="review store"):
        ReviewStore(tmp_path / "dir.sqlite3")


def test_a_reload_bounds_moves_or_turns_off_the_store(tmp_path: Path) -> None:
    from textgate.config import Config
    from textgate.gateway.runtime import Gateway

    def config(review: dict[str, Any]) -> Config:
        return Config.from_dict(
            {
                "client": {"endpoints": ["127.0.0.1:9"]},
                "gateway": {"parse_workers": 0},
                "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
                "review": review,
            }
        )

    a, b = tmp_path / "a.sqlite3", tmp_path / "b.sqlite3"
    gw = Gateway(config({"path": str(a)}))
    first = gw.review
    assert first is not None
    assert gw._swap_review(config({"path": str(a), "max_messages": 5})) is None
    assert gw.review is first and first.max_messages == 5  # same file: new bounds
    assert gw._swap_review(config({"path": str(b)})) is first  # closed later by the caller
    assert gw.review is not None and gw.review.path == b
    assert gw.review.metrics is first.metrics  # one set of metrics in the registry
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    moved = gw.review
    with pytest.raises(ReviewStoreError):
        gw._swap_review(config({"path": str(blocker / "review.sqlite3")}))
    assert gw.review is moved  # a store that cannot open leaves the old one
    assert gw._swap_review(config({})) is moved and gw.review is None
    first.close()
    moved.close()

"""The feedback store (durable, tenant flood cap, console reads) and folding into training data."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from textgate import feedback
from textgate.data import Table
from textgate.errors import FeedbackError, Overloaded


def _store(tmp_path: Path, cap: int = 3) -> feedback.FeedbackStore:
    return feedback.FeedbackStore(tmp_path / "fb.sqlite3", max_per_tenant_per_hour=cap)


def test_corrections_survive_reopening_and_keep_the_previous_verdict(tmp_path: Path) -> None:
    store = _store(tmp_path)
    seen = feedback.Seen("spam", b"raw", "acme", ("ham", "spam"), "spam", "3", "ham", 0.2, "allow")
    c = store.add(task="spam", label="spam", text="Win now", source="http", tenant="acme",
                  raw=b"raw", request_id="r1", previous=seen)  # fmt: skip
    store.close()
    again = _store(tmp_path)
    got = again.get(c.id)
    assert got == c and got.previous_action == "allow" and got.model_version == "3"
    assert again.count(tenant="acme") == 1 and again.count(label="ham") == 0
    assert [x.id for x in again.find(tenant="acme")] == [c.id]


def test_a_tenant_flood_is_refused_others_are_not(tmp_path: Path) -> None:
    store = _store(tmp_path, cap=3)
    for i in range(3):
        store.add(task="spam", label="spam", text=f"t{i}", source="http", tenant="a", now=1000.0)
    with pytest.raises(Overloaded, match="at most 3"):
        store.add(task="spam", label="spam", text="t4", source="http", tenant="a", now=1001.0)
    store.add(task="spam", label="ham", text="ok", source="http", tenant="b", now=1001.0)
    store.add(task="spam", label="spam", text="later", source="http", tenant="a", now=1000.0 + 3601)
    assert store.count(tenant="a") == 4


def test_remove_and_paging(tmp_path: Path) -> None:
    store = _store(tmp_path, cap=100)
    ids = [store.add(task="spam", label="spam", text=f"t{i}", source="spamd").id for i in range(5)]
    page = store.find(limit=2)
    assert [c.id for c in page] == ids[:-3:-1]
    assert [c.id for c in store.find(before_id=page[-1].id, limit=10)] == ids[-3::-1]
    assert store.remove(text_sha256=feedback.sha256("t0")) == 1 and store.count() == 4


def test_not_a_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FeedbackError, match="no such file"):
        feedback.read_all(tmp_path / "missing.sqlite3")
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(FeedbackError, match="junk.sqlite3"):
        feedback.read_all(junk)


def test_recent_is_bounded_by_count_and_bytes() -> None:
    recent = feedback.Recent(max_items=2, max_bytes=10)

    def seen(raw: bytes) -> feedback.Seen:
        return feedback.Seen("spam", raw, None, ("ham", "spam"), "m", "1", "ham", 0.1, "allow")

    recent.remember("a", seen(b"1234"))
    recent.remember("b", seen(b"1234"))
    recent.remember("c", seen(b"1234"))
    assert recent.get("a") is None and len(recent) == 2
    recent.remember("d", seen(b"123456789"))
    assert recent.get("b") is None and recent.get("d") is not None


def test_fold_dedups_weights_caps_and_relabels(tmp_path: Path) -> None:
    store = _store(tmp_path, cap=100)
    store.add(task="spam", label="ham", text="free cruise", source="http", tenant="a")
    store.add(task="spam", label="spam", text="free cruise", source="http", tenant="a")  # newer
    for i in range(4):
        store.add(task="spam", label="spam", text=f"flood {i}", source="http", tenant="b")
    store.add(task="spam", label="phish", text="odd", source="http", tenant="c")
    base = Table(texts=("free cruise", "hello"), labels=("ham", "ham"),
                 label_names=("ham", "spam"), source="x")  # fmt: skip
    folded, report = feedback.fold(base, store.find(limit=-1), weight=2, cap_per_tenant=2)
    assert report.duplicates == 1 and report.over_cap == 2 and report.unknown_label == 1
    assert report.used == 3 and report.replaced == 1
    pairs = list(zip(folded.texts, folded.labels, strict=True))
    assert pairs.count(("free cruise", "spam")) == 2 and ("free cruise", "ham") not in pairs
    assert ("hello", "ham") in pairs and sum(t.startswith("flood") for t in folded.texts) == 4


def _grouped(n_synthetic: int = 40) -> Table:
    """A mail-like table: two real groups and a training-only (synthetic-*) one."""
    rows = [(f"real ham {i}", "ham", "enron/ham") for i in range(6)]
    rows += [(f"real spam {i}", "spam", "trec/spam") for i in range(6)]
    rows += [(f"made ham {i}", "ham", "synthetic-modern/ham") for i in range(n_synthetic)]
    texts, labels, groups = zip(*rows, strict=True)
    return Table(texts=texts, labels=labels, label_names=("ham", "spam"), source="x",
                 groups=groups, symbols=tuple((f"S{i}",) for i in range(len(texts))))  # fmt: skip


def _fold_grouped(tmp_path: Path, weight: int = 2) -> tuple[Table, Table]:
    store = _store(tmp_path, cap=100)
    store.add(task="spam", label="spam", text="real ham 0", source="http", tenant="acme")
    store.add(task="spam", label="spam", text="new pitch", source="http", tenant="acme")
    store.add(task="spam", label="ham", text="new note", source="spamd")
    base = _grouped()
    folded, _ = feedback.fold(base, store.find(limit=-1), weight=weight)
    return base, folded


def test_fold_keeps_each_base_rows_group_and_symbols(tmp_path: Path) -> None:
    base, folded = _fold_grouped(tmp_path)
    assert len(folded.groups) == len(folded.symbols) == len(folded.texts)
    before = {t: (g, s) for t, g, s in zip(base.texts, base.groups, base.symbols, strict=True)}
    after = zip(folded.texts, folded.groups, folded.symbols, strict=True)
    kept = {t: (g, s) for t, g, s in after if not g.startswith("feedback/")}
    assert kept == {t: v for t, v in before.items() if t != "real ham 0"}


def test_fold_gives_feedback_rows_a_group_per_tenant(tmp_path: Path) -> None:
    _, folded = _fold_grouped(tmp_path, weight=2)
    rows = list(zip(folded.texts, folded.groups, folded.symbols, strict=True))
    assert rows.count(("new pitch", "feedback/acme", ())) == 2
    assert rows.count(("real ham 0", "feedback/acme", ())) == 2
    assert rows.count(("new note", "feedback/default", ())) == 2
    plain = Table(texts=("a", "b"), labels=("ham", "spam"), label_names=("ham", "spam"),
                  source="x")  # fmt: skip
    c = feedback.Correction(1, 0.0, "spam", "t", "spam", "c", "", None, None, "http",
                            None, None, None, None, None)  # fmt: skip
    ungrouped, _ = feedback.fold(plain, [c])
    assert ungrouped.groups == () and ungrouped.symbols == ()  # no groups made up


def test_per_group_cap_still_applies_after_fold(tmp_path: Path) -> None:
    from textgate.train.dataset import balance_groups

    _, folded = _fold_grouped(tmp_path, weight=2)
    capped = balance_groups(folded, 3)
    counts = {g: sum(n.values()) for g, n in capped.group_counts().items()}
    # source groups are capped at 3; feedback groups stay whole (two corrections x weight 2:
    # fold already capped them per tenant, and a cap by hash would keep one correction's
    # both copies and drop the other's)
    assert counts == {
        "enron/ham": 3,
        "feedback/acme": 4,
        "feedback/default": 2,
        "synthetic-modern/ham": 3,
        "trec/spam": 3,
    }


def test_synthetic_rows_stay_training_only_after_fold(tmp_path: Path) -> None:
    from textgate import data

    base, folded = _fold_grouped(tmp_path)
    synthetic = {t for t, g in zip(base.texts, base.groups, strict=True) if g.startswith("synth")}
    by_hash = data.split(dataclasses.replace(base, groups=()))  # the hash alone, no rule
    assert synthetic - set(by_hash.train.texts)  # so the test below tests the rule
    splits = data.split(folded)
    assert synthetic <= set(splits.train.texts)
    assert not synthetic & (set(splits.validation.texts) | set(splits.test.texts))

"""held_mail: the MTA's release command, run with a checked queue id and nothing else."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
from pathlib import Path

import pytest

from textgate import feedback
from textgate.errors import InvalidInput, MailReleaseError
from textgate.gateway.records import held_mail, review_records
from textgate.gateway.records.event_sink import EventSink
from textgate.gateway.records.review_store import ReviewStore

PY = sys.executable  # an absolute path, as review.release_command requires


@pytest.mark.parametrize("value", ["B0396248347", "4XyZ1abcDEFghij", "2B7MabcD012345"])
def test_postfix_and_sendmail_queue_ids_are_kept(value: str) -> None:
    assert held_mail.queue_id(value) == value


@pytest.mark.parametrize("value", ["", "ab1", "-H ALL", "../x", "A1B2C3;rm", "ÄÖÜ12345", None])
def test_anything_else_is_not_a_queue_id(value: str | None) -> None:
    assert held_mail.queue_id(value) is None


def test_the_queue_id_is_the_only_value_put_into_the_command() -> None:
    command = ("/usr/sbin/postsuper", "-c", "/etc/postfix", "-H", "{queue_id}")
    assert held_mail.argv(command, "B0396248347")[-1] == "B0396248347"
    with pytest.raises(MailReleaseError, match="not an MTA queue id"):
        held_mail.argv(command, "ALL")  # "postsuper -H ALL" would release every held message


def _run(command: tuple[str, ...], timeout_s: float = 10) -> None:
    asyncio.run(held_mail.release(command, "B0396248347", timeout_s))


def test_a_command_that_exits_0_releases(tmp_path: Path) -> None:
    out = tmp_path / "argv"
    code = "import sys, pathlib; pathlib.Path(sys.argv[1]).write_text(sys.argv[2])"
    _run((PY, "-c", code, str(out), "{queue_id}"))
    assert out.read_text() == "B0396248347"


def test_a_failing_missing_or_hanging_command_is_a_specific_error() -> None:
    fails = "import sys; sys.stderr.write('postsuper: fatal: no such message'); sys.exit(1)"
    with pytest.raises(MailReleaseError, match="exited 1 for B0396248347: postsuper: fatal"):
        _run((PY, "-c", fails, "{queue_id}"))
    with pytest.raises(MailReleaseError, match="cannot run the release command /nonexistent"):
        _run(("/nonexistent/postsuper", "{queue_id}"))
    with pytest.raises(MailReleaseError, match="did not finish in 0.5 s"):
        _run((PY, "-c", "import time; time.sleep(30)", "{queue_id}"), timeout_s=0.5)


def _held_store(tmp_path: Path, action: str = "quarantine") -> ReviewStore:
    store = ReviewStore(tmp_path / "review.sqlite3")
    result = {
        "request_id": "r1",
        "label": "spam",
        "action": action,
        "score": 0.99,
        "probabilities": {"ham": 0.01, "spam": 0.99},
        "model": {"name": "spam", "version": "1"},
    }
    store.keep(
        request_id="r1",
        task="spam",
        tenant=None,
        result=result,
        text="t",
        raw=b"x",
        queue_id="Q1234A",
    )
    return store


def _decide(store: ReviewStore, tmp_path: Path, release: object) -> int | None:
    corrections = feedback.FeedbackStore(tmp_path / "feedback.sqlite3")
    held = store.get("r1")
    assert held is not None and held.queue_id == "Q1234A"
    return asyncio.run(
        review_records.decide(
            store, corrections, EventSink(), held, "release", label="ham", by="admin",
            release=release,  # type: ignore[arg-type]
        )
    )  # fmt: skip


def test_a_release_runs_the_command_first_and_a_failure_writes_nothing(tmp_path: Path) -> None:
    store = _held_store(tmp_path)

    async def broken(queue_id: str) -> None:
        raise MailReleaseError(f"postsuper exited 1 for {queue_id}")

    with pytest.raises(MailReleaseError, match="Q1234A"):
        _decide(store, tmp_path, broken)
    held = store.get("r1")
    assert held is not None and held.decision is None  # the reviewer can release again
    assert feedback.FeedbackStore(tmp_path / "feedback.sqlite3").count() == 0
    released: list[str] = []

    async def works(queue_id: str) -> None:
        released.append(queue_id)

    assert _decide(store, tmp_path, works) is not None
    assert released == ["Q1234A"] and (store.get("r1") or held).decision == "release"
    assert _decide(store, tmp_path, works) is None and released == ["Q1234A"]  # a repeat


def test_only_quarantined_mail_is_released(tmp_path: Path) -> None:
    store = _held_store(tmp_path, action="review")

    async def never(queue_id: str) -> None:
        raise AssertionError("a review verdict's message is not held by the MTA")

    with pytest.raises(InvalidInput, match="only quarantined mail"):
        _decide(store, tmp_path, never)


def test_a_version_1_review_file_gains_the_queue_id_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    ddl = review_store_v1_ddl()
    old.executescript(ddl)
    old.execute("PRAGMA user_version=1")
    old.close()
    store = ReviewStore(path)
    result = {"request_id": "r2", "label": "spam", "action": "quarantine", "score": 0.9,
              "probabilities": {}, "model": {}}  # fmt: skip
    assert store.keep(
        request_id="r2",
        task="spam",
        tenant=None,
        result=result,
        text="t",
        raw=b"",
        queue_id="ABCDE1",
    )
    assert (store.get("r2") or pytest.fail("not kept")).queue_id == "ABCDE1"
    store.close()
    assert ReviewStore(path).get("r2") is not None  # and it opens again


def review_store_v1_ddl() -> str:
    from textgate.gateway.records.review_store import _DDL

    return _DDL.replace("    queue_id TEXT,\n", "")

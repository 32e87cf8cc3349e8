"""The parse pool: answers like normalize_email, kills a parse past its budget and still
answers (best effort), and keeps serving afterwards."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.helpers.slow_parse import MARKER, blas_threads, exit_at_once, normalize_or_hang
from textgate.errors import EmptyText, Kind, Overloaded, ParseWorkerError, PayloadTooLarge
from textgate.gateway.scoring.pool import ParsePool, _Worker
from textgate.normalize import Normalized, NormalizeSettings, normalize_email

SETTINGS = NormalizeSettings()
MAIL = b"From: a@example.com\r\nSubject: lunch\r\n\r\nsee you at noon\r\n"
HANG = b"Subject: stuck\r\n" + MARKER + b"\r\n\r\nfree money\r\n"


def with_pool(body: Callable[[ParsePool], Awaitable[Any]], queue_s: float = 2.0) -> Any:
    async def run() -> Any:
        pool = ParsePool(workers=1, budget_s=1.0, queue_s=queue_s, target=normalize_or_hang)
        await pool.start()
        try:
            return await body(pool)
        finally:
            await pool.close()

    return asyncio.run(run())


@pytest.mark.timeout(60)
def test_answers_what_normalize_email_answers() -> None:
    async def body(pool: ParsePool) -> None:
        assert await pool.email(MAIL, SETTINGS) == normalize_email(MAIL, SETTINGS)
        with pytest.raises(EmptyText) as err:
            await pool.email(b"\r\n\r\n", SETTINGS)
        assert err.value.reason == "empty" and err.value.field == "message"
        with pytest.raises(PayloadTooLarge) as big:
            await pool.email(b"Subject: x\r\n\r\n" + b"a" * (SETTINGS.max_body_bytes + 1), SETTINGS)
        assert big.value.limit == SETTINGS.max_body_bytes

    with_pool(body)


def _blas_text(given: str | None) -> str:
    async def run() -> str:
        pool = ParsePool(workers=1, budget_s=30.0, target=blas_threads)
        await pool.start()
        try:
            return (await pool.email(MAIL, SETTINGS)).text
        finally:
            await pool.close()

    saved = os.environ.pop("OPENBLAS_NUM_THREADS", None)
    try:
        if given is not None:
            os.environ["OPENBLAS_NUM_THREADS"] = given
        return asyncio.run(run())
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)
        if saved is not None:
            os.environ["OPENBLAS_NUM_THREADS"] = saved


@pytest.mark.timeout(120)
def test_workers_run_numpy_blas_on_one_thread_unless_the_operator_says_otherwise() -> None:
    # numpy's default (a thread per core) cost each worker ~15 ms of CPU a message on a
    # busy two-core box (config/serving.py, SERIAL_BLAS)
    assert _blas_text(None).endswith("env 1 used 1")
    assert _blas_text("2").startswith("blas env 2 used ")


@pytest.mark.timeout(60)
def test_the_worker_names_the_language_the_service_would() -> None:
    from textgate.signals.language import detect

    async def body(pool: ParsePool) -> None:
        parsed = await pool.parse(MAIL, SETTINGS)
        assert parsed.normalized == normalize_email(MAIL, SETTINGS)
        assert parsed.language == detect(parsed.normalized.text)

    with_pool(body)


@pytest.mark.timeout(60)
def test_a_parse_past_its_budget_is_killed_and_still_answered() -> None:
    async def body(pool: ParsePool) -> None:
        result = await pool.email(HANG, SETTINGS)
        assert result.notes.best_effort and result.notes.defects == ("time_budget",)
        assert result.text == "stuck free money" and pool.timeouts == 1
        # The killed worker is replaced; once the new one has started (seconds on a loaded
        # machine), the next message is parsed normally.
        for _ in range(600):
            if pool.idle:
                break
            await asyncio.sleep(0.05)
        assert pool.idle == 1
        again = await pool.email(MAIL, SETTINGS)
        assert again.text == "lunch see you at noon" and not again.notes.best_effort

    with_pool(body)


@pytest.mark.timeout(60)
def test_a_message_behind_a_hung_one_is_refused_as_overloaded_not_read_best_effort() -> None:
    # A best-effort read would give an innocent message the suspect's defects (and the
    # policy's malformed_action): a few slow messages could push other mail to review.
    async def body(pool: ParsePool) -> None:
        hung, queued = await asyncio.gather(
            pool.email(HANG, SETTINGS), pool.email(MAIL, SETTINGS), return_exceptions=True
        )
        assert isinstance(hung, Normalized) and hung.notes.defects == ("time_budget",)
        assert isinstance(queued, Overloaded) and "queue_timeout_s" in queued.message
        assert queued.retry_after_s == 1 and queued.kind == Kind.OVERLOADED

    with_pool(body, queue_s=0.3)


@pytest.mark.timeout(120)
def test_a_message_that_waited_for_a_worker_still_gets_its_whole_budget() -> None:
    async def body(pool: ParsePool) -> None:
        # the hung parse is killed after 1 s; its replacement starts and reads the queued
        # message normally, however long the wait was
        hung, queued = await asyncio.gather(pool.email(HANG, SETTINGS), pool.email(MAIL, SETTINGS))
        assert hung.notes.defects == ("time_budget",)
        assert not queued.notes.best_effort and queued.text == "lunch see you at noon"

    with_pool(body, queue_s=90.0)


@pytest.mark.timeout(60)
def test_with_no_worker_able_to_start_mail_is_read_best_effort_at_once() -> None:
    async def body(pool: ParsePool) -> None:
        def cannot_start() -> _Worker:
            raise ParseWorkerError("no worker", hint="test")

        pool._spawn = cannot_start  # type: ignore[method-assign]
        await pool.email(HANG, SETTINGS)  # its worker is killed, and none replaces it
        for _ in range(400):
            if pool._unstartable:
                break
            await asyncio.sleep(0.05)
        answered = await asyncio.wait_for(pool.email(MAIL, SETTINGS), 5)
        assert answered.notes.best_effort and answered.notes.defects == ("no_parse_worker",)
        assert answered.text == "lunch see you at noon"

    with_pool(body, queue_s=30.0)


@pytest.mark.timeout(60)
def test_a_worker_joins_the_pool_only_once_it_has_started() -> None:
    # start() returns with every worker warmed up, so the first message's budget pays
    # for its parse, not for a Python start and textgate's imports
    async def body(pool: ParsePool) -> None:
        assert pool.idle == 1
        first = await pool.email(MAIL, SETTINGS)
        assert not first.notes.best_effort and first.text == "lunch see you at noon"

    with_pool(body)


def test_a_worker_that_cannot_start_is_a_named_error() -> None:
    ctx = multiprocessing.get_context("spawn")
    with pytest.raises(ParseWorkerError, match="did not start") as err:
        _Worker(ctx, exit_at_once)
    assert "parse_workers: 0" in str(err.value)  # the fix is named


def test_a_worker_killed_by_two_threads_closes_its_pipe_once() -> None:
    # A tainted worker's replacement (spare thread) and pool.close() (event loop) can kill
    # the same worker at once; a second close of the pipe's descriptor is EBADF at best, and
    # at worst closes the file that reused the number.
    class Slow:
        def kill(self) -> None:
            pass

        def join(self, timeout: float) -> None:
            time.sleep(0.2)  # the first kill is still here when the second one starts

    class Counting:
        closes = 0

        def close(self) -> None:
            Counting.closes += 1

    worker = _Worker.__new__(_Worker)
    worker.process, worker.conn = Slow(), Counting()  # type: ignore[assignment]
    worker._lock, worker._killed = threading.Lock(), False
    threads = [threading.Thread(target=worker.kill) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Counting.closes == 1

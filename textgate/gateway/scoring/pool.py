"""E-mail normalization off the event loop: worker processes and a time budget per message.

The guards in ``textgate.guards`` keep the known superlinear paths of the stdlib parser
out; this pool is the second line for the ones nobody has found yet. A message is parsed
in one of ``workers`` spawned processes; if its answer is not back within ``budget_s`` of
a worker taking it, the worker is killed and replaced, and the message is read by
``normalize.best_effort`` with the defect ``time_budget``. So a hostile parse costs one
worker for at most the budget, never the event loop, and still gets a verdict.

Waiting for a worker is not part of the budget. A message that finds every worker busy
waits up to ``queue_s`` (``gateway.queue_timeout_s``, the limiter's own bound) and is then
refused as ``Overloaded`` (HTTP 429, spamd and milter tempfail: the MTA retries), never
read best effort: a best-effort read is the suspect's fate, and an innocent message behind
a hostile one would otherwise get it too (and the policy's ``malformed_action`` with it),
so a few slow messages could push other people's mail to review. Only when no worker can be
started at all are messages read best effort at once (``no_parse_worker``): answered,
never lost.

The worker also names the language of the normalized text (``Parsed.language``): every raw
message's result names it, and detection costs 0.25-1 ms a message that the event loop
need not spend.

Processes, not threads: a thread stuck in a C-level regex or parser loop cannot be
stopped, and it holds the GIL the event loop needs. Spawned, not forked: the gateway
process has gRPC and event-loop threads that a fork would copy half-way.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from textgate import normalize
from textgate.config.serving import serial_blas
from textgate.errors import InputError, Overloaded, ParseWorkerError
from textgate.normalize import Normalized, NormalizeSettings
from textgate.signals import language
from textgate.signals.language import Language

Target = Callable[[bytes, NormalizeSettings], Normalized]
_JOIN_S = 2.0
# A spawned worker starts a Python and imports textgate before it can parse: ~0.3 s on a
# quiet machine, seconds on a loaded one. It joins the idle workers only once it says so,
# so no message's budget pays for a start (which would send it, and the worker that then
# replaces the "stuck" one, to best effort in turn).
_READY = b"ready"
_START_S = 120.0
_WARM_UP = (
    b"From: warm-up@example.com\r\nSubject: =?utf-8?q?warm-up?=\r\nMIME-Version: 1.0\r\n"
    b"Content-Type: multipart/alternative; boundary=b\r\n\r\n--b\r\n"
    b"Content-Type: text/plain; charset=iso-8859-1\r\n\r\nwarm-up\r\n--b\r\n"
    b"Content-Type: text/html\r\n\r\n<p>warm-up</p>\r\n--b--\r\n"
)


@dataclass(frozen=True)
class Parsed:
    """A message as the pool read it: normalized, and the language of its text (None: not
    known here; the service detects it on the loop, as it does without a pool)."""

    normalized: Normalized
    language: Language | None = None


def _language(text: str) -> Language | None:
    try:
        return language.detect(text)
    except Exception:  # the service detects again on the loop, and fails there as before
        return None


def _serve(conn: Connection, target: Target) -> None:
    """The worker loop: (raw, settings) in, ("ok", Normalized, Language | None) or
    ("error", class, message, state) out."""
    # The first parse imports what the stdlib's e-mail package loads lazily (parser
    # policies, codecs, the HTML reader), and the first detection loads the language model:
    # done here, before the worker says it is ready.
    with contextlib.suppress(Exception):
        _language(target(_WARM_UP, NormalizeSettings()).text)
    conn.send_bytes(_READY)
    while True:
        try:
            raw, settings = pickle.loads(conn.recv_bytes())
        except EOFError:
            return
        try:
            normalized = target(raw, settings)
            reply: tuple[Any, ...] = ("ok", normalized, _language(normalized.text))
        except InputError as exc:
            # Exceptions with keyword-only fields do not unpickle; send class and state.
            reply = ("error", type(exc), exc.message, dict(vars(exc)))
        conn.send_bytes(pickle.dumps(reply))


def _default_target(raw: bytes, settings: NormalizeSettings) -> Normalized:
    return normalize.normalize_email(raw, settings)


class _Worker:
    def __init__(self, ctx: Any, target: Target) -> None:
        self.conn, child = ctx.Pipe()
        self.process: BaseProcess = ctx.Process(
            target=_serve, args=(child, target), daemon=True, name="textgate-parse"
        )
        self.process.start()
        child.close()
        # A tainted worker is killed by a spare thread while close() may kill it too: two
        # closes of one pipe would close whatever file later reused its descriptor.
        self._lock = threading.Lock()
        self._killed = False
        self._await_ready()

    def _await_ready(self) -> None:
        """Blocking (run in a thread): until the worker has started, or a clear error."""
        try:
            ready = self.conn.poll(_START_S) and self.conn.recv_bytes() == _READY
        except (EOFError, OSError):
            ready = False
        if not ready:
            code = self.process.exitcode
            self.kill()
            raise ParseWorkerError(
                f"an e-mail parse worker did not start within {_START_S:g} s"
                + (f" (exit code {code})" if code is not None else ""),
                hint="the gateway's log has the worker's error; gateway.parse_workers: 0 "
                "parses in the request's thread instead",
            )

    def ask(
        self, raw: bytes, settings: NormalizeSettings, timeout: float
    ) -> tuple[Any, ...] | None:
        """Blocking (run in a thread): the reply, or None when the budget ran out."""
        self.conn.send_bytes(pickle.dumps((raw, settings)))
        if not self.conn.poll(timeout):
            return None
        reply: tuple[Any, ...] = pickle.loads(self.conn.recv_bytes())
        return reply

    def kill(self) -> None:
        with self._lock:
            if self._killed:
                return
            self._killed = True
        self.process.kill()
        self.process.join(_JOIN_S)
        self.conn.close()


class ParsePool:
    """``await pool.email(raw, settings)``: ``normalize_email`` in a worker, within
    ``budget_s``. Settings travel with each message, so a config reload needs no new pool."""

    def __init__(
        self,
        *,
        workers: int = 2,
        budget_s: float = 1.0,
        queue_s: float = 2.0,
        retry_after_s: int = 1,
        target: Target = _default_target,
    ) -> None:
        self.workers = workers
        self.budget_s = budget_s
        self.queue_s, self.retry_after_s = queue_s, retry_after_s
        self.target = target
        self.timeouts = 0  # messages that ran out of budget (a metric reads this)
        self._unstartable = 0  # replacements that could not start: workers lost for good
        self._ctx = multiprocessing.get_context("spawn")
        self._idle: asyncio.Queue[_Worker] | None = None
        self._all: list[_Worker] = []
        # One thread waits on each worker; fallbacks and respawns have their own, so they
        # never queue behind stuck parses.
        self._threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="parse")
        self._spare = ThreadPoolExecutor(max_workers=2, thread_name_prefix="parse-spare")

    @property
    def idle(self) -> int:
        """Started workers waiting for a message (a replacement counts once it is ready)."""
        return self._idle.qsize() if self._idle is not None else 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._idle = asyncio.Queue()
        serial_blas(os.environ)  # spawned workers inherit it (config/serving.py says why)
        # started side by side: each waits for its own warm-up
        spawns = (loop.run_in_executor(self._threads, self._spawn) for _ in range(self.workers))
        for worker in await asyncio.gather(*spawns):
            self._idle.put_nowait(worker)

    def _spawn(self) -> _Worker:
        worker = _Worker(self._ctx, self.target)
        self._all.append(worker)
        return worker

    async def close(self) -> None:
        for worker in list(self._all):
            worker.kill()
        self._all.clear()
        self._threads.shutdown(wait=False, cancel_futures=True)
        self._spare.shutdown(wait=False, cancel_futures=True)

    async def email(self, raw: bytes, settings: NormalizeSettings) -> Normalized:
        return (await self.parse(raw, settings)).normalized

    async def parse(self, raw: bytes, settings: NormalizeSettings) -> Parsed:
        if self._idle is None:
            raise RuntimeError("ParsePool.start() was not awaited")
        loop = asyncio.get_running_loop()
        worker = await self._worker()
        if worker is None:
            return await self._fallback(raw, settings, "no_parse_worker")
        reply: tuple[Any, ...] | None = None
        try:
            budget = self.budget_s
            reply = await loop.run_in_executor(self._threads, worker.ask, raw, settings, budget)
        finally:
            if reply is None:  # out of budget, or cancelled mid-parse: the worker is tainted
                loop.run_in_executor(self._spare, self._replace, worker, loop)
            else:
                self._idle.put_nowait(worker)
        if reply is None:
            self.timeouts += 1
            return await self._fallback(raw, settings, "time_budget")
        if reply[0] == "error":
            raise _rebuild(reply[1], reply[2], reply[3])
        return Parsed(reply[1], reply[2])

    async def _worker(self) -> _Worker | None:
        """An idle worker, waiting up to ``queue_s`` for one; None when none can start."""
        assert self._idle is not None
        if not self._idle.empty():  # what get() returns at once, without wait_for's task
            return self._idle.get_nowait()
        if self._unstartable >= self.workers:
            return None
        try:
            return await asyncio.wait_for(self._idle.get(), self.queue_s)
        except TimeoutError:
            raise Overloaded(
                f"every e-mail parse worker ({self.workers}) stayed busy for "
                f"{self.queue_s:g} s (gateway.queue_timeout_s)",
                retry_after_s=self.retry_after_s,
                hint="retry later; a busy site raises gateway.parse_workers",
            ) from None

    def _replace(self, worker: _Worker, loop: asyncio.AbstractEventLoop) -> None:
        worker.kill()
        if worker in self._all:
            self._all.remove(worker)
        if self._idle is not None and not loop.is_closed():
            try:
                fresh = self._spawn()  # back in the idle queue once it has started
            except ParseWorkerError:
                # one worker fewer for good; with none left, messages are read best
                # effort at once (no_parse_worker): answered, never lost
                self._unstartable += 1
                return
            if loop.is_closed():
                fresh.kill()
                return
            loop.call_soon_threadsafe(self._idle.put_nowait, fresh)  # Queue is not thread-safe

    async def _fallback(self, raw: bytes, settings: NormalizeSettings, defect: str) -> Parsed:
        def read() -> Parsed:
            n = normalize.best_effort(raw, settings, defects=(defect,))
            return Parsed(n, _language(n.text))

        return await asyncio.get_running_loop().run_in_executor(self._spare, read)


def _rebuild(cls: type[InputError], message: str, state: dict[str, Any]) -> InputError:
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    exc.__dict__.update(state)
    return exc

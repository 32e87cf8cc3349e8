"""Coalesce concurrent requests: one batcher (``Lane``) per Triton model.

A gRPC call per HTTP request costs the gateway and Triton a round of work per request;
one call with a batch dimension costs it once. Pieces from concurrent requests therefore
queue in their model's lane and go to Triton together:

- idle lane (fewer than ``max_inflight`` calls out): the queue is sent at once, no wait;
- busy lane: the queue grows until a call returns (then it is sent, up to ``max_batch``
  texts per call) or until its oldest job has waited ``max_wait_ms`` (then it is sent
  anyway, beside the busy ones): the wait a request can add is bounded.

Each job keeps its own deadline (it stops waiting at it, and is dropped from the queue if
not sent yet), its own answer rows and its own errors: a call Triton rejects is retried one
job at a time, so one bad text fails only its own request.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from textgate.errors import TritonError, TritonTimeout, TritonUnavailable


@dataclass
class _Job:
    texts: Sequence[str]
    deadline: float  # monotonic
    request_id: str
    headers: Mapping[str, str]
    future: asyncio.Future[np.ndarray]
    queued_at: float = field(default_factory=time.monotonic)


@dataclass
class CoalesceStats:
    calls: int = 0  # Triton calls made
    jobs: int = 0  # jobs (request parts) answered through them
    texts: int = 0
    split: int = 0  # rejected calls retried job by job


class Lane:
    """The batcher of one Triton model."""

    def __init__(self, owner: Coalescer, model: str, max_batch: int) -> None:
        self.owner = owner
        self.model = model
        self.max_batch = max(1, max_batch)
        self.queue: deque[_Job] = deque()
        self.inflight = 0
        self._timer: asyncio.TimerHandle | None = None

    def submit(self, job: _Job) -> None:
        self.queue.append(job)
        self.pump()

    def pump(self, *, force: bool = False) -> None:
        """Send what is queued while the lane has room (or ``force``: the wait bound)."""
        while self.queue and (force or self.inflight < self.owner.max_inflight):
            jobs = self._take()
            if not jobs:
                break
            self.inflight += 1
            task = asyncio.get_running_loop().create_task(self._send(jobs))
            self.owner.tasks.add(task)
            task.add_done_callback(self.owner.tasks.discard)
            force = False
        self._arm()

    def _take(self) -> list[_Job]:
        jobs: list[_Job] = []
        n = 0
        while self.queue:
            job = self.queue[0]
            if job.future.done():  # gave up (deadline, cancelled) before being sent
                self.queue.popleft()
                continue
            if jobs and n + len(job.texts) > self.max_batch:
                break
            jobs.append(self.queue.popleft())
            n += len(job.texts)
        return jobs

    def _arm(self) -> None:
        """A timer for the oldest queued job's wait bound while the lane is busy."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self.queue:
            return
        wait = self.queue[0].queued_at + self.owner.max_wait_s - time.monotonic()
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(max(0.0, wait), lambda: self.pump(force=True))

    async def _send(self, jobs: list[_Job]) -> None:
        try:
            await self._call(jobs)
        finally:
            self.inflight -= 1
            self.pump()

    async def _call(self, jobs: list[_Job]) -> None:
        texts = [t for job in jobs for t in job.texts]
        remaining = max(job.deadline for job in jobs) - time.monotonic()
        stats = self.owner.stats
        stats.calls += 1
        try:
            if remaining <= 0:
                raise TritonTimeout(f"no answer from Triton for '{self.model}' within the deadline")
            first = jobs[0]
            rid = first.request_id if len(jobs) == 1 else f"{first.request_id}+{len(jobs) - 1}"
            pred = await self.owner.client.infer(
                self.model, texts, request_id=rid, headers=first.headers, timeout_s=remaining
            )
        except (TritonTimeout, TritonUnavailable) as exc:
            _fail(jobs, exc)  # the engine, not a text: every job of the call is affected
            return
        except TritonError as exc:
            if len(jobs) == 1:
                _fail(jobs, exc)
                return
            stats.split += 1  # which job's text was it? ask again, one job per call
            await asyncio.gather(*(self._call([job]) for job in jobs))
            return
        except Exception as exc:  # never leave a waiting request hanging
            _fail(jobs, exc)
            return
        probs = np.asarray(pred.probabilities)
        start = 0
        for job in jobs:
            rows = probs[start : start + len(job.texts)]
            start += len(job.texts)
            if not job.future.done():
                job.future.set_result(rows)
        stats.jobs += len(jobs)
        stats.texts += len(texts)


def _fail(jobs: Sequence[_Job], exc: BaseException) -> None:
    for job in jobs:
        if not job.future.done():
            job.future.set_exception(exc)


def _timeout(model: str) -> TritonTimeout:
    return TritonTimeout(f"no answer from Triton for '{model}' within the deadline")


def _expire(future: asyncio.Future[np.ndarray], model: str) -> None:
    """The job's deadline: it stops waiting (still queued: _take drops it)."""
    if not future.done():
        future.set_exception(_timeout(model))


class Coalescer:
    """Lanes by model name; ``infer`` is what a request awaits instead of the client."""

    def __init__(
        self, client: Any, *, max_batch: int = 64, max_wait_ms: float = 5.0, max_inflight: int = 2
    ) -> None:
        self.client = client
        self.max_batch = max_batch
        self.max_wait_s = max_wait_ms / 1000.0
        self.max_inflight = max(1, max_inflight)
        self.lanes: dict[str, Lane] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.stats = CoalesceStats()

    @classmethod
    def from_config(cls, client: Any, gw: Any) -> Coalescer | None:
        if not gw.coalesce:
            return None
        return cls(
            client,
            max_batch=gw.coalesce_max_batch,
            max_wait_ms=gw.coalesce_max_wait_ms,
            max_inflight=gw.coalesce_max_inflight,
        )

    async def infer(
        self,
        model: str,
        texts: Sequence[str],
        *,
        max_batch_size: int,
        deadline: float,
        request_id: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> np.ndarray:
        """The probabilities of ``texts`` (one job: at most ``max_batch_size`` texts)."""
        lane = self.lanes.get(model)
        if lane is None:
            lane = self.lanes[model] = Lane(self, model, min(self.max_batch, max_batch_size))
        loop = asyncio.get_running_loop()
        future: asyncio.Future[np.ndarray] = loop.create_future()
        lane.submit(_Job(texts, deadline, request_id, headers or {}, future))
        remaining = deadline - time.monotonic()
        if remaining <= 0:  # as wait_for with no time left: no wait at all
            future.cancel()  # still queued: _take drops it; already sent: its rows are unused
            raise _timeout(model)
        # The job's own future with a timer, not wait_for(shield(...)): that made a task, a
        # shield future and their callbacks a request. The future is this job's alone, so
        # failing it at the deadline cancels no call the other jobs share.
        timer = loop.call_later(remaining, _expire, future, model)
        try:
            return await future  # a cancelled request cancels its future: _take drops it
        finally:
            timer.cancel()

    async def close(self) -> None:
        for lane in self.lanes.values():
            if lane._timer is not None:
                lane._timer.cancel()
        for task in list(self.tasks):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

"""Bounded in-flight work: a fixed number of texts talk to Triton, a bounded number of
requests wait.

A request weighs its number of pieces (texts, or chunks of long texts): 200 requests of
64 texts each are 12,800 units of work, not 200, and counting requests let them all in at
once (then time out together). A request heavier than the whole bound runs alone. Waiters
are served in arrival order, so a heavy request is not starved by a stream of light ones.
Beyond the queue bound, or after waiting ``queue_timeout_s``, a request fails with
``Overloaded`` (429 with Retry-After) at once: a queue that grows without bound only turns
overload into timeouts for everyone.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import AsyncIterator

from textgate.config import GatewayConfig
from textgate.errors import Overloaded


class Limiter:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self.capacity = config.max_in_flight
        self.used = 0  # weight of the requests holding a slot
        self.running = 0
        self._waiters: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    @contextlib.asynccontextmanager
    async def slot(self, weight: int = 1) -> AsyncIterator[float]:
        """Hold ``weight`` units of the bound; yields the seconds spent waiting."""
        cfg = self.config
        w = min(max(1, weight), self.capacity)
        start = time.perf_counter()
        if self._waiters or self.used + w > self.capacity:
            if self.waiting >= cfg.max_queue:
                raise self._overloaded(f"{self.used} in flight and {self.waiting} waiting")
            await self._queue(w)
        else:
            self.used += w  # taken without yielding, so the checks above stay exact
        self.running += 1
        try:
            yield time.perf_counter() - start
        finally:
            self.running -= 1
            self.used -= w
            self._wake()

    async def _queue(self, w: int) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (w, future)
        self._waiters.append(entry)
        try:
            await asyncio.wait_for(asyncio.shield(future), self.config.queue_timeout_s)
        except TimeoutError:
            if future.done():  # granted at the last moment: give it back
                self.used -= w
                self._wake()
            else:
                self._waiters.remove(entry)
                self._wake()  # a heavy head that gave up may unblock lighter ones
            raise self._overloaded(f"no slot within {self.config.queue_timeout_s} s") from None
        except BaseException:
            if future.done():
                self.used -= w
            elif entry in self._waiters:
                self._waiters.remove(entry)
            self._wake()
            raise

    def _wake(self) -> None:
        """Grant slots to waiters in arrival order while the head fits."""
        while self._waiters and self.used + self._waiters[0][0] <= self.capacity:
            w, future = self._waiters.popleft()
            if future.done():
                continue
            self.used += w
            future.set_result(None)

    def _overloaded(self, why: str) -> Overloaded:
        return Overloaded(f"gateway overloaded: {why}", retry_after_s=self.config.retry_after_s)

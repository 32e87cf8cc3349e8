"""Bounded in-flight work: a fixed number of requests talk to Triton, a bounded number wait.

Beyond both bounds, or after waiting ``queue_timeout_s``, a request fails with
``Overloaded`` (429 with Retry-After) at once: a queue that grows without bound only turns
overload into timeouts for everyone.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from textgate.config import GatewayConfig
from textgate.errors import Overloaded


class Limiter:
    def __init__(self, config: GatewayConfig) -> None:
        self.config = config
        self._slots = asyncio.Semaphore(config.max_in_flight)
        self.waiting = 0
        self.running = 0

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[float]:
        """Hold one in-flight slot; yields the seconds spent waiting for it."""
        cfg = self.config
        if self._slots.locked() and self.waiting >= cfg.max_queue:
            raise self._overloaded(f"{cfg.max_in_flight} in flight and {self.waiting} waiting")
        start = time.perf_counter()
        if not self._slots.locked():
            # A free slot is taken without yielding, so the count above stays exact.
            await self._slots.acquire()
        else:
            await self._queue()
        self.running += 1
        try:
            yield time.perf_counter() - start
        finally:
            self.running -= 1
            self._slots.release()

    async def _queue(self) -> None:
        self.waiting += 1
        try:
            await asyncio.wait_for(self._slots.acquire(), self.config.queue_timeout_s)
        except TimeoutError:
            raise self._overloaded(f"no slot within {self.config.queue_timeout_s} s") from None
        finally:
            self.waiting -= 1

    def _overloaded(self, why: str) -> Overloaded:
        return Overloaded(f"gateway overloaded: {why}", retry_after_s=self.config.retry_after_s)

"""A TCP listener for the mail protocols (spamd, milter): bind, cap, track, stop.

Each connection runs as its own task; ``stop`` closes the socket and cancels the tasks still
open, and every connection's writer is closed however its handler ends. The limits every
mail protocol has live here, once: the connection cap (``max_connections``), the count of
connections open (``active``), the read timeout (``timeout_s``) and the metrics hook
(``count(command, code)``).

A connection beyond the cap is the protocol's to answer: spamd answers "busy" at once and
closes (``refuse``); a milter's MTA keeps the connection and sends transaction after
transaction, so its connection is served, told it is ``busy``, and counted as open
(``busy_stays``). Subclasses write ``handle`` (one connection) and may set
``stream_limit`` (the longest line a reader takes).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

_ASYNCIO_DEFAULT_LIMIT = 2**16


def no_count(_command: str, _code: str) -> None:
    return None


class Listener:
    stream_limit = _ASYNCIO_DEFAULT_LIMIT
    busy_stays = False  # True: a connection beyond the cap is served (told busy), not refused

    def __init__(
        self,
        *,
        max_connections: int = 32,
        timeout_s: float = 30.0,
        count: Callable[[str, str], None] = no_count,
    ) -> None:
        self.max_connections = max_connections
        self.timeout_s = timeout_s
        self.count = count  # metrics: (command, answer code)
        self.active = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        """Listen; the bound port (``port`` 0 picks a free one)."""
        self._server = await asyncio.start_server(self._accept, host, port, limit=self.stream_limit)
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, busy: bool
    ) -> None:
        raise NotImplementedError

    async def refuse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer a connection beyond the cap (``busy_stays`` False); the writer is closed
        after."""
        raise NotImplementedError

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._capped(reader, writer)
        finally:
            with contextlib.suppress(Exception):
                writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _capped(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        busy = self.active >= self.max_connections
        if busy and not self.busy_stays:
            await self.refuse(reader, writer)
            return
        self.active += 1
        try:
            await self.handle(reader, writer, busy=busy)
        finally:
            self.active -= 1

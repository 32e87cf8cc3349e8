"""A TCP listener for the mail protocols (spamd, milter): bind, track, stop.

Each connection runs as its own task; ``stop`` closes the socket and cancels the tasks still
open, and every connection's writer is closed however its handler ends. Subclasses write
``handle`` (one connection) and may set ``stream_limit`` (the longest line a reader takes).
"""

from __future__ import annotations

import asyncio
import contextlib

_ASYNCIO_DEFAULT_LIMIT = 2**16


class Listener:
    stream_limit = _ASYNCIO_DEFAULT_LIMIT

    def __init__(self) -> None:
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

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self.handle(reader, writer)
        finally:
            with contextlib.suppress(Exception):
                writer.close()
            if task is not None:
                self._tasks.discard(task)

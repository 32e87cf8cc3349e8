from __future__ import annotations

import asyncio

import pytest

from textgate.config import GatewayConfig
from textgate.errors import Overloaded
from textgate.gateway.limiter import Limiter


def test_beyond_in_flight_and_queue_is_429() -> None:
    async def main() -> list[str]:
        limiter = Limiter(GatewayConfig(max_in_flight=1, max_queue=1, retry_after_s=4))
        release = asyncio.Event()
        outcomes: list[str] = []

        async def work() -> None:
            try:
                async with limiter.slot():
                    await release.wait()
                outcomes.append("ok")
            except Overloaded as exc:
                assert exc.retry_after_s == 4
                outcomes.append("429")

        tasks = [asyncio.create_task(work()) for _ in range(3)]
        await asyncio.sleep(0.05)
        release.set()
        await asyncio.gather(*tasks)
        return outcomes

    assert sorted(asyncio.run(main())) == ["429", "ok", "ok"]


def test_queue_timeout_is_429() -> None:
    async def main() -> None:
        limiter = Limiter(GatewayConfig(max_in_flight=1, max_queue=5, queue_timeout_s=0.05))
        async with limiter.slot():
            with pytest.raises(Overloaded, match="no slot"):
                async with limiter.slot():
                    pass
        assert limiter.waiting == 0 and limiter.running == 0

    asyncio.run(main())

from __future__ import annotations

import asyncio

import pytest

from textgate.config import GatewayConfig
from textgate.errors import Overloaded
from textgate.gateway.scoring.limiter import Limiter


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


def test_a_request_weighs_its_pieces() -> None:
    async def main() -> None:
        limiter = Limiter(GatewayConfig(max_in_flight=8, max_queue=10, queue_timeout_s=0.05))
        async with limiter.slot(6):
            assert limiter.used == 6
            async with limiter.slot(2):  # fits beside it
                assert limiter.used == 8
            with pytest.raises(Overloaded, match="no slot"):
                async with limiter.slot(3):  # 6 + 3 > 8: waits, then 429
                    pass
        async with limiter.slot(500):  # heavier than the bound: runs alone
            assert limiter.used == 8
        assert limiter.used == 0 and limiter.waiting == 0 and limiter.running == 0

    asyncio.run(main())


def test_waiters_are_served_in_order_so_heavy_requests_are_not_starved() -> None:
    async def main() -> list[str]:
        limiter = Limiter(GatewayConfig(max_in_flight=4, max_queue=10, queue_timeout_s=5))
        order: list[str] = []
        hold = asyncio.Event()

        async def run(name: str, weight: int, wait: asyncio.Event | None = None) -> None:
            async with limiter.slot(weight):
                order.append(name)
                if wait is not None:
                    await wait.wait()

        first = asyncio.create_task(run("light-0", 2, hold))
        await asyncio.sleep(0)
        heavy = asyncio.create_task(run("heavy", 4))
        await asyncio.sleep(0)
        lights = [asyncio.create_task(run(f"light-{i}", 1)) for i in (1, 2)]
        await asyncio.sleep(0.01)
        assert order == ["light-0"]  # the light ones queue behind the heavy one
        hold.set()
        await asyncio.gather(first, heavy, *lights)
        return order

    assert asyncio.run(main()) == ["light-0", "heavy", "light-1", "light-2"]

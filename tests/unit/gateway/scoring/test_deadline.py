"""One Triton deadline per request: the re-score uses what the fast pass left, and a request
past its deadline is a 504 without another call (200 x 64 texts got 23 x 504 at 10 s when
each call had a fresh 5 s)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from textgate.config import Config
from textgate.errors import TritonTimeout
from textgate.gateway.records.prometheus import Metrics
from textgate.gateway.scoring.routing import Route
from textgate.gateway.scoring.service import Context, Service


class SlowClient:
    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.timeouts: list[float] = []

    async def infer(self, model: str, texts: Any, *, timeout_s: float, **_: Any) -> Any:
        self.timeouts.append(timeout_s)
        await asyncio.sleep(self.delay_s)
        return SimpleNamespace(probabilities=np.full((len(texts), 2), 0.5, np.float32))


def test_the_rescore_shares_the_requests_deadline() -> None:
    config = Config.from_dict({"client": {"timeout_s": 0.5}})
    client = SlowClient(0.2)
    rt = SimpleNamespace(config=config, client=client)
    route = Route(task="spam", model="spam", labels=("ham", "spam"), version="1",
                  variant="int8", max_batch_size=1)  # fmt: skip
    service = Service(Metrics(), events=None)  # type: ignore[arg-type]
    ctx = Context(request_id="r1")

    async def go() -> None:
        await service._infer(rt, "spam", route, ["a", "b"], ctx)  # type: ignore[arg-type]
        with pytest.raises(TritonTimeout):
            await service._infer(rt, "spam_fp32", route, ["a", "b"], ctx)  # type: ignore[arg-type]

    asyncio.run(go())
    # every call got what was left of the one deadline, never a fresh client.timeout_s
    assert all(b < a for a, b in zip(client.timeouts, client.timeouts[1:], strict=False))
    assert client.timeouts[0] <= 0.5 and len(client.timeouts) == 3

"""Coalescing concurrent requests (issue 12 §2): one Triton call for many requests, while
every request keeps its own rows, errors and deadline."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from textgate.config import Config
from textgate.errors import TritonError, TritonTimeout
from textgate.gateway.records.prometheus import Metrics
from textgate.gateway.scoring.coalesce import Coalescer
from textgate.gateway.scoring.routing import Route
from textgate.gateway.scoring.service import Context, Service


class FakeTriton:
    """Answers each text with [len, 1 - len] / 1000 after ``delay_s``; refuses 'BAD'."""

    def __init__(self, delay_s: float = 0.05) -> None:
        self.delay_s = delay_s
        self.calls: list[list[str]] = []
        self.request_ids: list[str] = []
        self.open = 0
        self.most_open = 0

    async def infer(self, model: str, texts: Any, *, request_id: str = "", **_: Any) -> Any:
        self.calls.append(list(texts))
        self.request_ids.append(request_id)
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.open -= 1
        if "BAD" in texts:
            raise TritonError("Triton rejected 'spam': bad input")
        n = np.array([len(t) for t in texts], np.float32) / 1000
        return SimpleNamespace(probabilities=np.stack([n, 1 - n], axis=1))


def expected(texts: list[str]) -> np.ndarray:
    n = np.array([len(t) for t in texts], np.float32) / 1000
    return np.stack([n, 1 - n], axis=1)


def _job(co: Coalescer, texts: list[str], rid: str, timeout_s: float = 5.0) -> Any:
    return co.infer(
        "spam", texts, max_batch_size=64, deadline=time.monotonic() + timeout_s, request_id=rid
    )


def test_requests_arriving_while_triton_is_busy_share_one_call() -> None:
    client = FakeTriton()
    co = Coalescer(client, max_inflight=1, max_wait_ms=1000)
    texts = [["a"], ["bb", "ccc"], ["dddd"], ["e" * 5, "f" * 6, "g" * 7]]

    async def go() -> list[Any]:
        return await asyncio.gather(*(_job(co, t, f"r{i}") for i, t in enumerate(texts)))

    got = asyncio.run(go())
    # The first is sent at once (idle), the other three wait for it and go together.
    assert client.calls == [["a"], ["bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg"]]
    for rows, t in zip(got, texts, strict=True):
        assert np.array_equal(rows, expected(t))  # each request its own rows, in order
    assert client.request_ids == ["r0", "r1+2"]  # Triton's log names the batch's first
    assert co.stats.calls == 2 and co.stats.jobs == 4


def test_the_batch_bound_splits_a_long_queue() -> None:
    client = FakeTriton()
    co = Coalescer(client, max_batch=3, max_inflight=1, max_wait_ms=1000)

    async def go() -> None:
        await asyncio.gather(*(_job(co, [f"t{i}"], f"r{i}") for i in range(7)))

    asyncio.run(go())
    assert [len(c) for c in client.calls] == [1, 3, 3]


def test_one_bad_text_fails_only_its_own_request() -> None:
    client = FakeTriton()
    co = Coalescer(client, max_inflight=1, max_wait_ms=1000)

    async def go() -> list[Any]:
        jobs = [["warm"], ["good one"], ["BAD"], ["also good"]]
        return await asyncio.gather(
            *(_job(co, t, f"r{i}") for i, t in enumerate(jobs)), return_exceptions=True
        )

    warm, good, bad, also = asyncio.run(go())
    assert isinstance(bad, TritonError)
    assert np.array_equal(good, expected(["good one"]))
    assert np.array_equal(also, expected(["also good"]))
    assert np.array_equal(warm, expected(["warm"]))
    assert co.stats.split == 1  # the shared call failed once, then one call per job


def test_a_deadline_holds_while_the_request_waits_in_the_batcher() -> None:
    client = FakeTriton(delay_s=1.0)
    co = Coalescer(client, max_inflight=1, max_wait_ms=1000)

    async def go() -> tuple[Any, Any, float]:
        slow = asyncio.ensure_future(_job(co, ["occupies the lane"], "r0"))
        await asyncio.sleep(0.01)
        t = time.monotonic()
        with pytest.raises(TritonTimeout, match="deadline"):
            await _job(co, ["waits"], "r1", timeout_s=0.1)
        waited = time.monotonic() - t
        return await slow, client.calls, waited

    first, calls, waited = asyncio.run(go())
    assert waited < 0.9  # answered at its own deadline, not when the busy call returned
    assert calls == [["occupies the lane"]]  # dropped from the queue: never sent
    assert np.array_equal(first, expected(["occupies the lane"]))


def test_the_added_wait_is_bounded_while_triton_is_busy() -> None:
    client = FakeTriton(delay_s=0.5)
    co = Coalescer(client, max_inflight=1, max_wait_ms=20)

    async def go() -> None:
        await asyncio.gather(_job(co, ["first"], "r0"), _job(co, ["second"], "r1"))

    asyncio.run(go())
    # The second did not wait for the first call: it went beside it after 20 ms.
    assert client.calls == [["first"], ["second"]] and client.most_open == 2


def test_the_service_sends_through_the_coalescer_with_each_requests_id() -> None:
    client = FakeTriton()
    config = Config.from_dict({})
    rt = SimpleNamespace(config=config, client=client, coalescer=Coalescer(client, max_inflight=1))
    route = Route(task="spam", model="spam", labels=("ham", "spam"), version="1",
                  variant="int8", max_batch_size=8)  # fmt: skip
    service = Service(Metrics(), events=None)  # type: ignore[arg-type]

    async def go() -> list[Any]:
        ctxs = [Context(request_id=f"req-{i}") for i in range(3)]
        return await asyncio.gather(
            *(service._infer(rt, "spam", route, [f"t{i}" * (i + 1)], c) for i, c in enumerate(ctxs))  # type: ignore[arg-type]
        )

    got = asyncio.run(go())
    assert client.request_ids == ["req-0", "req-1+1"]
    for i, rows in enumerate(got):
        assert np.array_equal(rows, expected([f"t{i}" * (i + 1)]))

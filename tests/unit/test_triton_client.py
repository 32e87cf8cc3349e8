"""TritonClient's retry, ejection and deadline rules, with fake gRPC connections."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from textgate.config import ClientConfig
from textgate.errors import TritonError, TritonTimeout, TritonUnavailable
from textgate.triton_client import TritonClient


class FakeError(Exception):
    def __init__(self, status: str) -> None:
        super().__init__(status)
        self._status = status

    def status(self) -> str:
        return f"StatusCode.{self._status}"

    def message(self) -> str:
        return f"fake {self._status}"


class MissingModel(FakeError):
    def message(self) -> str:
        return "Request for unknown model: 'spam' has no available versions"


class FakeResult:
    def __init__(self, n: int) -> None:
        self.n = n

    def as_numpy(self, name: str) -> Any:
        if name == "label":
            return np.array([[b"ham"]] * self.n, dtype=object)
        return np.tile(np.array([[0.7, 0.3]], dtype=np.float32), (self.n, 1))


class FakeConn:
    def __init__(self, behaviour: list[str]) -> None:
        self.behaviour = behaviour
        self.calls: list[dict[str, Any]] = []

    async def infer(self, model: str, inputs: list[Any], **kw: Any) -> FakeResult:
        self.calls.append(kw)
        what = self.behaviour.pop(0) if self.behaviour else "ok"
        if what == "MISSING":  # what Triton says for a model it does not hold
            raise MissingModel("NOT_FOUND")
        if what != "ok":
            raise FakeError(what)
        return FakeResult(inputs[0].shape()[0])

    async def is_server_ready(self, **kw: Any) -> bool:
        return True

    async def close(self) -> None:
        pass


def client(*behaviours: list[str], **cfg: Any) -> tuple[TritonClient, list[FakeConn]]:
    c = TritonClient([f"h{i}:1" for i in range(len(behaviours))], ClientConfig(**cfg))
    conns = [FakeConn(b) for b in behaviours]
    for ep, conn in zip(c.endpoints, conns, strict=True):
        ep.client = conn
    return c, conns


def test_unavailable_is_retried_on_another_endpoint_and_ejected() -> None:
    c, (a, b) = client(["UNAVAILABLE"], [], retries=1)
    c._next = 1  # the first pick is endpoint 0

    pred = asyncio.run(c.infer("spam", ["x", "y"], request_id="r1"))
    assert pred.probabilities.shape == (2, 2)
    assert len(a.calls) == 1 and len(b.calls) == 1
    assert c.endpoints[0].ejected and not c.endpoints[1].ejected
    assert b.calls[0]["parameters"] == {"textgate_request_id": "r1"}
    assert c.retries == 1


def test_other_errors_are_not_retried() -> None:
    c, (a, b) = client(["INVALID_ARGUMENT"], [], retries=1)
    c._next = 1
    with pytest.raises(TritonError, match="rejected") as info:
        asyncio.run(c.infer("spam", ["x"]))
    assert not isinstance(info.value, TritonUnavailable)
    assert len(a.calls) + len(b.calls) == 1


def test_deadline_is_a_timeout() -> None:
    c, _ = client(["DEADLINE_EXCEEDED"])
    with pytest.raises(TritonTimeout):
        asyncio.run(c.infer("spam", ["x"]))


def test_every_endpoint_down_is_unavailable() -> None:
    c, _ = client(["UNAVAILABLE"], ["UNAVAILABLE"], retries=3)
    with pytest.raises(TritonUnavailable, match="Triton unavailable"):
        asyncio.run(c.infer("spam", ["x"]))
    assert c.healthy() == []


def test_probe_readmits_an_ejected_endpoint() -> None:
    c, _ = client([])
    c.endpoints[0].ejected = True
    asyncio.run(c.probe())
    assert c.healthy() == ["h0:1"]


def test_a_replica_without_the_model_is_retried_elsewhere_then_ejected() -> None:
    c, (a, b) = client(["MISSING"], [], retries=1)
    c._next = 1  # the first pick is endpoint 0
    pred = asyncio.run(c.infer("spam", ["x"]))
    assert pred.endpoint == "h1:1" and len(a.calls) == len(b.calls) == 1
    assert c.endpoints[0].ejected and "serves another model set" in c.endpoints[0].last_error
    assert c.healthy() == ["h1:1"] and c.retries == 1


def test_a_model_missing_everywhere_is_a_rejection_and_ejects_nobody() -> None:
    c, _ = client(["MISSING"], ["MISSING"], retries=1)
    with pytest.raises(TritonError, match="unknown model") as info:
        asyncio.run(c.infer("spam", ["x"]))
    assert not isinstance(info.value, TritonUnavailable)
    assert c.healthy() == ["h0:1", "h1:1"]
    single, _ = client(["MISSING"], retries=1)
    with pytest.raises(TritonError, match="rejected"):
        asyncio.run(single.infer("spam", ["x"]))
    assert single.healthy() == ["h0:1"]


def test_admit_hook_decides_whether_a_returning_endpoint_gets_traffic() -> None:
    c, _ = client([])
    c.endpoints[0].ejected = True
    asked: list[str] = []

    async def refuse(url: str) -> str | None:
        asked.append(url)
        return "replica not reconciled"

    c.admit = refuse
    asyncio.run(c.probe())
    assert c.healthy() == [] and c.endpoints[0].last_error == "replica not reconciled"

    async def accept(url: str) -> str | None:
        return None

    c.admit = accept
    asyncio.run(c.probe())
    assert c.healthy() == ["h0:1"] and asked == ["h0:1"]
    asyncio.run(c.probe())  # a healthy endpoint is not asked again
    assert asked == ["h0:1"]

"""The bench's gateway policies: the shipped ones, with only the cascade switched."""

from __future__ import annotations

import dataclasses
import json

import pytest

from textgate.bench.procs import policies
from textgate.config import Config


@pytest.mark.parametrize("cascade", [False, True])
def test_the_bench_gateway_gets_the_shipped_policies_with_the_cascade_as_told(
    cascade: bool,
) -> None:
    loaded = Config.from_dict(json.loads(json.dumps({"policy": {"tasks": policies(cascade)}})))
    shipped = Config().policy.tasks
    assert len(loaded.policy.tasks) == len(shipped)
    for got, want in zip(loaded.policy.tasks, shipped, strict=True):
        assert got == dataclasses.replace(want, cascade=cascade)

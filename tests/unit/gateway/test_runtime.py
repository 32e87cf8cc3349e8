"""The runtime (``Gateway``): /readyz has hysteresis once ready."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from textgate.config import Config
from textgate.gateway import runtime
from textgate.gateway.scoring.routing import Route, Router


def _route(name: str) -> Route:
    return Route(task=name, model=name, labels=("ham", "spam"), version="1", variant="fp32",
                 max_batch_size=8)  # fmt: skip


class FlakyClient:
    def __init__(self, answers: list[bool]) -> None:
        self.answers = answers

    async def models_ready(self, models: Any) -> dict[str, bool]:
        return dict.fromkeys(models, self.answers.pop(0))


def test_readyz_needs_several_failed_probes_once_ready(tmp_path: Path) -> None:
    config = {
        "gateway": {"parse_workers": 0},
        "client": {"endpoints": ["127.0.0.1:9"]},
        "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
    }
    gw = runtime.Gateway(Config.from_dict(config))
    gw.runtime.router = Router({"spam": _route("spam")})
    gw.runtime.client = FlakyClient([False, True, False, False, True, False, False, False])  # type: ignore[assignment]

    async def probes(n: int) -> list[bool]:
        return [(await gw.ready())[0] for _ in range(n)]

    # never ready yet: down at once; then one or two slow probes do not flip it; three do
    assert asyncio.run(probes(8)) == [False, True, True, True, True, True, True, False]
    gw.events.outbox.close()

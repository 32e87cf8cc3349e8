"""The release hook: the shadow log honours ``events.store_text``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from textgate.config import Config
from textgate.gateway import runtime
from textgate.gateway.scoring.routing import Route


def _route(name: str) -> Route:
    return Route(task=name, model=name, labels=("ham", "spam"), version="1", variant="fp32",
                 max_batch_size=8)  # fmt: skip


@pytest.mark.parametrize("store", [False, True])
def test_the_shadow_log_honours_store_text(tmp_path: Path, store: bool) -> None:
    import json

    import numpy as np

    from textgate.gateway.scoring.release_hook import ReleaseHook

    config = Config.from_dict(
        {
            "gateway": {"parse_workers": 0},
            "client": {"endpoints": ["127.0.0.1:9"]},
            "release": {"repository": str(tmp_path / "repo")},
            "events": {"store_text": store, "outbox_path": str(tmp_path / "ev.db")},
        }
    )
    gw = runtime.Gateway(config)
    hook = gw.releases
    assert isinstance(hook, ReleaseHook)

    class Client:
        async def infer(self, model: str, texts: list[str]) -> Any:
            return type("P", (), {"probabilities": np.array([[0.9, 0.1]] * len(texts))})()

    gw.runtime.client = Client()  # type: ignore[assignment]
    asyncio.run(hook._shadow(_route("spam"), 2, ["secret text"], [[0.8, 0.2]]))
    line = (hook.manager.dir / "shadow" / "spam.jsonl").read_text(encoding="utf-8")
    row = json.loads(line)
    assert ("secret text" in line) is store
    assert ("text_sha256" in row) is not store
    assert hook.manager.shadow_log.texts("spam") == (["secret text"] if store else [])
    gw.events.outbox.close()

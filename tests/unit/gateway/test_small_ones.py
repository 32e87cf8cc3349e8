"""The small ones of issue 10 §6: version-pinned ensembles are not tasks, /readyz has
hysteresis, the shadow log honours store_text, the default outbox is absolute and has
one writer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from textgate.config import Config, EventsConfig, default_outbox_path
from textgate.errors import OutboxError, UnknownTask
from textgate.gateway import runtime
from textgate.gateway.records.outbox import Outbox
from textgate.gateway.scoring.routing import Route, Router


def _route(name: str) -> Route:
    return Route(task=name, model=name, labels=("ham", "spam"), version="1", variant="fp32",
                 max_batch_size=8)  # fmt: skip


class Releases:
    def __init__(self, serving: int = 1) -> None:
        self.serving = serving

    def tasks(self) -> list[str]:
        return ["spam"]

    def pick(self, task: str, key: str) -> int | None:
        return self.serving if task == "spam" else None

    def canary_key(self, task: str) -> str:
        return "request_id"


def test_version_pinned_ensembles_are_not_routable_nor_listed() -> None:
    router = Router(
        {"spam": _route("spam_v1"), "spam_v1": _route("spam_v1"), "spam_v2": _route("spam_v2"),
         "sentiment": _route("sentiment")},
        Releases(),
    )  # fmt: skip
    assert router.route("spam").model == "spam_v1"
    assert router.public() == ["sentiment", "spam"]
    for pinned in ("spam_v1", "spam_v2"):
        with pytest.raises(UnknownTask) as err:
            router.route(pinned)
        assert err.value.message.endswith("(served: sentiment, spam)")  # tasks, not versions
    # Without releases a name like model_v2 is an ordinary task.
    assert Router({"model_v2": _route("model_v2")}).route("model_v2").model == "model_v2"


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


def test_the_default_outbox_path_is_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TEXTGATE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative-cache")
    assert default_outbox_path().is_absolute()
    monkeypatch.setenv("TEXTGATE_CACHE_DIR", str(tmp_path))
    assert EventsConfig().outbox_path == tmp_path.resolve() / "events.sqlite3"


def test_a_second_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "o.db"
    with Outbox(path, publishing=False):
        with pytest.raises(OutboxError, match="locked by another process") as err:
            Outbox(path, publishing=False)
        assert "outbox_path" in (err.value.hint or "")
    with Outbox(path, publishing=False):  # released on close
        pass


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

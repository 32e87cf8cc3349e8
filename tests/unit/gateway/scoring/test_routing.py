"""Routing: version-pinned ensembles are not tasks (a release serves them under the task)."""

from __future__ import annotations

import pytest

from textgate.errors import UnknownTask
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

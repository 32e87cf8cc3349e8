"""The watch after a promotion (issue 41 §5), against a real tritonserver and gateway: a
promoted version that fails where the one it replaced did not is rolled back by itself
when ``release.post_watch_rollback`` is set, with its event and metric."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = [pytest.mark.triton, pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "t" * 32
TRITON_KEY = "k" * 32


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "lifecycle_switch_post",
        ROOT / "benchmarks" / "studies" / "lifecycle" / "lifecycle_switch.py",
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["lifecycle_switch_post"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def served(tiny_bundles: dict[str, Path], tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    settings = {
        "watch_interval_s": 0.3,
        "watch_min_requests": 10,
        "max_p99_ratio": 1000.0,  # a shared 2-core box: latency is not what is judged here
        "post_watch_s": 600.0,
        "post_watch_rollback": True,
    }
    with _bench().serve(tiny_bundles["spam"], tmp_path, TOKEN, api_key=TRITON_KEY, **settings) as (
        url,
        triton_http,
    ):
        yield url, triton_http, tmp_path


def _admin(url: str, op: str, body: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return httpx.post(f"{url}/admin/{op}", json=body, headers=headers, timeout=120)


def _serving(url: str) -> str:
    got = httpx.post(f"{url}/v1/classify/spam", json={"text": "hello"}, timeout=30)
    return str(got.json()["results"][0]["model"]["version"]) if got.status_code == 200 else "-"


def test_a_promoted_version_that_fails_is_rolled_back(
    served: tuple[str, str, Path], tiny_bundles: dict[str, Path]
) -> None:
    url, triton_http, root = served
    for i in range(15):  # the serving version's outcomes: the reference after the switch
        assert httpx.post(f"{url}/v1/classify/spam", json={"text": f"a{i}"}).status_code == 200
    added = _admin(url, "release/add", {"bundle": str(tiny_bundles["spam"]), "task": "spam"})
    version = added.json()["version"]
    promoted = _admin(url, "release/promote", {"task": "spam", "force": True, "reason": "test"})
    assert promoted.status_code == 200, promoted.text
    assert _serving(url) == str(version)
    # The new version breaks behind the gateway's back: its requests fail from now on.
    req = urllib.request.Request(
        f"http://{triton_http}/v2/repository/models/spam_v{version}_model/unload",
        data=b"{}", method="POST", headers={"textgate-admin-key": TRITON_KEY},
    )  # fmt: skip
    urllib.request.urlopen(req, timeout=30).close()
    codes = [
        httpx.post(f"{url}/v1/classify/spam", json={"text": f"b{i}"}).status_code for i in range(15)
    ]
    assert any(c >= 500 for c in codes)
    deadline = time.monotonic() + 20
    while _serving(url) != "1" and time.monotonic() < deadline:
        time.sleep(0.3)
    assert _serving(url) == "1", "the promoted version was not rolled back"
    assert [
        httpx.post(f"{url}/v1/classify/spam", json={"text": "x"}).status_code for _ in range(10)
    ] == [200] * 10
    metrics = httpx.get(f"{url}/metrics").text
    assert 'textgate_release_post_watch_alerts_total{task="spam"} 1.0' in metrics
    with sqlite3.connect(root / "events.sqlite3") as db:
        events = [json.loads(r[0]) for r in db.execute("SELECT payload FROM events")]
    auto = [e for e in events if e.get("op") == "auto-rollback"]
    assert auto and "after its promotion" in auto[-1]["reason"], auto

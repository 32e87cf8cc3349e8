"""``textgate serve`` (embedded Triton) runs on a release repository: versions added and
promoted through the admin API are still serving after the gateway restarts."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = [pytest.mark.triton, pytest.mark.slow]

TOKEN = "s" * 32


@contextmanager
def serve(bundle: Path, root: Path) -> Iterator[str]:
    """``textgate serve --bundle BUNDLE --port 0`` in a process; yields its URL; SIGTERM."""
    env = {
        **os.environ,
        "COLUMNS": "200",
        "TEXTGATE_CACHE_DIR": str(root / "cache"),  # the default release repository lives here
        "TEXTGATE_GATEWAY__ADMIN_TOKEN": TOKEN,
        "TEXTGATE_EVENTS__OUTBOX_PATH": str(root / "events.sqlite3"),
        "TEXTGATE_TRITON__EXIT_TIMEOUT_S": "2",
    }
    cmd = [sys.executable, "-m", "textgate.cli", "serve", "--bundle", str(bundle), "--port", "0"]
    with open(root / "serve.log", "ab") as err:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env, cwd=root
        )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        log = (root / "serve.log").read_text(errors="replace")[-3000:]
        assert "textgate gateway on http://" in line, line + log
        yield line.split(" on ", 1)[1].strip()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _admin(url: str, op: str, body: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return httpx.post(f"{url}/admin/release/{op}", json=body, headers=headers, timeout=300)


def _answered_by(url: str) -> dict[str, str]:
    r = httpx.post(f"{url}/v1/classify/spam", json={"text": "win a prize"}, timeout=30)
    assert r.status_code == 200, r.text
    return dict(r.json()["results"][0]["model"])


def _triton_model_api_is_closed(url: str) -> None:
    """The embedded Triton's model API refuses callers without this run's key."""
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    endpoint = httpx.get(f"{url}/v1/models").json()["endpoints"][0]["endpoint"]
    assert endpoint.startswith("127.0.0.1:")
    client = grpcclient.InferenceServerClient(endpoint)
    try:
        with pytest.raises(InferenceServerException, match="restricted"):
            client.unload_model("spam_v2")
    finally:
        client.close()


def test_serve_keeps_a_promoted_version_across_restarts(
    tiny_bundles: dict[str, Path], tmp_path: Path
) -> None:
    v2 = shutil.copytree(tiny_bundles["spam"], tmp_path / "spam-v2")
    with serve(tiny_bundles["spam"], tmp_path) as url:
        assert _answered_by(url)["name"] == "spam_v1"  # the bundle became release v1
        r = _admin(url, "add", {"bundle": str(v2), "task": "spam"})
        assert r.status_code == 200 and r.json()["version"] == 2, r.text
        r = _admin(url, "promote", {"task": "spam", "force": True, "reason": "test"})
        assert r.status_code == 200 and r.json()["serving"] == 2, r.text
        assert _answered_by(url)["name"] == "spam_v2"
        _triton_model_api_is_closed(url)
    with serve(tiny_bundles["spam"], tmp_path) as url:
        assert _answered_by(url) == {"name": "spam_v2", "version": "2", "variant": "fp32"}
        rows = httpx.get(
            f"{url}/admin/release/versions", headers={"Authorization": f"Bearer {TOKEN}"}
        ).json()["versions"]
        assert {r["version"]: (r["state"], r["load"]) for r in rows} == {
            1: ("standby", "READY"),
            2: ("serving", "READY"),
        }
    repos = list((tmp_path / "cache" / "releases").iterdir())
    assert len(repos) == 1 and (repos[0] / "spam_v2" / "config.pbtxt").is_file()

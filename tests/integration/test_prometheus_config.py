"""deploy/prometheus/prometheus.yml as shipped, in a real Prometheus: it starts, loads every
recording and alert rule, and evaluates them without errors (the compose targets do not
resolve here: they are simply down)."""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path

import httpx

from tests.helpers.deploy_checks import PROMETHEUS
from tests.helpers.servers import prometheus


def test_the_shipped_config_loads_and_evaluates_every_rule(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(PROMETHEUS, conf, ignore=shutil.ignore_patterns("tests"))
    text = (
        (conf / "prometheus.yml")
        .read_text()
        .replace("evaluation_interval: 15s", "evaluation_interval: 1s")
    )
    (conf / "prometheus.yml").write_text(text)
    # 60 s each to start and to evaluate: a loaded 2-core box starts it slowly
    with prometheus(conf / "prometheus.yml", tmp_path, ready_timeout_s=60) as prom:
        url, proc = prom.url, prom.proc
        deadline = time.monotonic() + 60
        rules: list[dict[str, object]] = []
        while time.monotonic() < deadline:  # until every rule was evaluated once
            assert proc.poll() is None, prom.log.read_text()[-2000:]
            # ValueError: "Service Unavailable" (not JSON) while Prometheus is starting
            with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                groups = httpx.get(f"{url}/api/v1/rules", timeout=2).json()["data"]["groups"]
                rules = [r for g in groups for r in g["rules"]]
                if rules and all(r.get("health") != "unknown" for r in rules):
                    break
            time.sleep(0.5)
        assert len(rules) == 28, rules
        bad = [(r["name"], r.get("lastError")) for r in rules if r.get("health") != "ok"]
        assert bad == []
        jobs: set[str] = set()
        while time.monotonic() < deadline + 10 and len(jobs) < 2:  # discovery syncs apart
            with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
                targets = httpx.get(f"{url}/api/v1/targets", timeout=5).json()["data"]
                jobs = {t["labels"]["job"] for t in targets["activeTargets"]}
            time.sleep(0.5)
        assert jobs == {"gateway", "triton"}

"""Every dashboard panel returns data from a live Prometheus that scrapes a real gateway and
a real tritonserver under a short, light load (issue 13: a panel that shows nothing fails).

Also: the live metrics carry the labels the rules read, and the alert rules load and stay
quiet on a healthy service. One tritonserver, one gateway (in a thread), one Prometheus.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import servers
from tests.helpers.deploy_checks import DASHBOARDS, concrete, dashboard_queries
from tests.helpers.gateway_fixtures import RunningGateway, run_gateway, two_variant_repo
from tests.helpers.servers import RunningPrometheus, run_prometheus
from textgate.triton import TritonServer

pytestmark = [pytest.mark.slow, pytest.mark.triton]

STRICT = {  # P(spam) of the tiny random model is near 0.5: this tenant re-scores every text
    "name": "strict",
    "tasks": [{"task": "spam", "review_at": 0.49, "quarantine_at": 0.99, "rescore_band": 0.05}],
}
RATE_WINDOW = "20s"  # what Grafana's $__rate_interval becomes here (1 s scrapes)


@pytest.fixture(scope="module")
def triton(
    tiny_bundles: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TritonServer]:
    """A tritonserver of this module's own, on purpose: the strict tenant re-scores on
    ``spam_fp32`` beside an int8 default, a repository the session's ``triton_server`` lacks."""
    repo = two_variant_repo(tiny_bundles, tmp_path_factory.mktemp("obs"))
    with servers.triton(repo) as server:
        yield server


@pytest.fixture(scope="module")
def gateway(
    triton: TritonServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    tmp = tmp_path_factory.mktemp("obs-gw")
    config = {
        "policy": {"tenants": [STRICT]},
        "events": {"outbox_path": str(tmp / "events.sqlite3")},
        "client": {"health_interval_s": 0.3},
    }
    with run_gateway(config, [triton.grpc_url]) as gw:
        yield gw


def _hostport(url: str) -> str:
    return url.split("//", 1)[1].split("/", 1)[0]


@pytest.fixture(scope="module")
def prometheus(
    gateway: RunningGateway, triton: TritonServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPrometheus]:
    jobs = {"gateway": [_hostport(gateway.url)], "triton": [_hostport(triton.metrics_url)]}
    with run_prometheus(jobs, tmp_path_factory.mktemp("prom")) as prom:
        assert prom.wait('min(up{job=~"gateway|triton"}) == 1'), "targets not scraped"
        yield prom


class Load:
    """A light closed loop (one request at a time, ~20/s at most): good, strict-tenant and
    bad requests, so every panel (errors and re-scores included) has something to show."""

    def __init__(self, url: str) -> None:
        self.url, self.stop, self.sent = url, threading.Event(), 0
        self.thread = threading.Thread(target=self._run, daemon=True, name="load")

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=10) as c:
            while not self.stop.is_set():
                self._one(c)
                self.sent += 1
                time.sleep(0.05)

    def _one(self, c: httpx.Client) -> None:
        kind = self.sent % 6
        if kind == 0:
            c.post("/v1/classify/spam", json={"text": "x"}, headers={"X-Tenant": "strict"})
        elif kind == 1:
            c.post("/v1/classify/sentiment", json={"texts": ["good", "bad film"]})
        elif kind == 2:
            c.post("/v1/classify/no-such-task", json={"text": "x"})  # 404, task "unknown"
        else:
            c.post("/v1/classify/spam", json={"text": f"win a prize {self.sent}"})

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self.thread.join(timeout=15)


def test_every_dashboard_panel_returns_data(
    gateway: RunningGateway, prometheus: RunningPrometheus
) -> None:
    queries = [(p.name, title, expr) for p in DASHBOARDS for title, expr in dashboard_queries(p)]
    assert len(queries) >= 15
    with Load(gateway.url) as load:
        # data for every rate window: load for a full window plus a few scrapes
        prometheus.wait(f"sum(increase(textgate_served_total[{RATE_WINDOW}])) > 100", 60)
        empty = [
            f"{name}: {title!r}: {expr}"
            for name, title, expr in queries
            if not prometheus.wait(concrete(expr, RATE_WINDOW), timeout_s=10)
        ]
    assert load.sent > 0
    assert empty == [], "panels with no data:\n" + "\n".join(empty)


def test_live_metrics_carry_the_labels_the_rules_read(
    gateway: RunningGateway, prometheus: RunningPrometheus
) -> None:
    with Load(gateway.url):
        prometheus.wait('textgate_requests_total{task="unknown",status="404"}', 30)
        tasks = {s["metric"]["task"] for s in prometheus.query("textgate_requests_total")}
        tenants = {s["metric"]["tenant"] for s in prometheus.query("textgate_requests_total")}
        # the recording rules evaluate and the SLO alerts see a healthy service
        assert prometheus.wait('task:textgate_availability_errors:ratio_rate5m{task="spam"}')
        firing = prometheus.query('ALERTS{alertstate="firing"}')
    assert tasks == {"spam", "sentiment", "unknown"}
    assert tenants == {"none", "strict"}
    assert firing == []


def test_compose_health_checks_ask_endpoints_the_real_services_serve(
    gateway: RunningGateway, triton: TritonServer, prometheus: RunningPrometheus
) -> None:
    """deploy/compose.yaml's health checks, sent to the real gateway, Triton and Prometheus
    (only the ports differ here): each answers 200 when ready. Grafana and Kafka's images
    cannot run on this machine; their checks are the images' documented ones."""
    from tests.helpers.deploy_checks import COMPOSE, compose_model, health_url

    services: dict[str, Any] = compose_model(COMPOSE)["services"]  # type: ignore[assignment]
    base = {
        "gateway": gateway.url,
        "triton": f"http://{triton.http_url}",
        "prometheus": prometheus.url,
    }
    for name, url in base.items():
        _, path = health_url(services[name]["healthcheck"]["test"])
        r = httpx.get(url + path, timeout=10)
        assert r.status_code == 200, f"{name}: GET {path} -> {r.status_code} {r.text[:200]}"


def test_kubernetes_probes_ask_endpoints_the_real_services_serve(
    gateway: RunningGateway, triton: TritonServer
) -> None:
    from tests.helpers.deploy_checks import KUBERNETES, manifests

    base = {"textgate-gateway": gateway.url, "textgate-triton": f"http://{triton.http_url}"}
    checked = 0
    for path in sorted(KUBERNETES.glob("*.yaml")):
        for doc in manifests(path):
            if doc.get("kind") not in ("Deployment", "StatefulSet"):
                continue
            name = doc["metadata"]["name"]  # type: ignore[index]
            for c in doc["spec"]["template"]["spec"]["containers"]:  # type: ignore[index]
                for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                    if probe in c:
                        r = httpx.get(base[name] + c[probe]["httpGet"]["path"], timeout=10)
                        assert r.status_code == 200, f"{path.name} {name} {probe}: {r.status_code}"
                        checked += 1
    assert checked == 5

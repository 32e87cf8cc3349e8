"""deploy/compose.yaml: valid for Compose v2, health checks on endpoints the services serve,
start order on health, and config files that exist and parse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.deploy_checks import (
    COMPOSE,
    COMPOSE_GPU,
    DEPLOY,
    compose,
    compose_model,
    health_url,
)
from textgate.config import Config


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return dict(compose_model(COMPOSE)["services"])  # type: ignore[arg-type]


def test_compose_files_pass_config_q() -> None:
    compose(COMPOSE)
    compose(COMPOSE, COMPOSE_GPU)


def test_every_service_has_a_health_check_and_waits_for_health(services: dict[str, Any]) -> None:
    assert set(services) == {"triton", "gateway", "kafka", "prometheus", "grafana"}
    for name, svc in services.items():
        assert svc.get("healthcheck", {}).get("test"), f"{name}: no health check"
        for dep, how in svc.get("depends_on", {}).items():
            assert how["condition"] == "service_healthy", f"{name} -> {dep}"
    assert set(services["gateway"]["depends_on"]) == {"triton", "kafka"}


def test_gateway_health_check_asks_its_readiness_route(services: dict[str, Any]) -> None:
    from textgate.gateway.app import create_app

    port, path = health_url(services["gateway"]["healthcheck"]["test"])
    routes = {getattr(r, "path", None) for r in create_app().routes}
    assert path == "/readyz" and path in routes
    cfg = Config.from_file(DEPLOY / "textgate.compose.yaml")  # the mounted config parses
    assert port == cfg.gateway.port
    assert cfg.client.endpoints == ("triton:8001",)
    assert {p["target"] for p in services["gateway"]["ports"]} == {port}


def test_triton_health_check_asks_readiness_on_its_http_port(services: dict[str, Any]) -> None:
    port, path = health_url(services["triton"]["healthcheck"]["test"])
    assert (port, path) == (8000, "/v2/health/ready")  # served: tests/integration
    assert {p["target"] for p in services["triton"]["ports"]} == {8000, 8001, 8002}


def test_kafka_health_check_asks_its_client_listener(services: dict[str, Any]) -> None:
    kafka = services["kafka"]
    test = " ".join(kafka["healthcheck"]["test"])
    assert "kafka-broker-api-versions.sh" in test and "127.0.0.1:9092" in test
    assert "PLAINTEXT://:9092" in kafka["environment"]["KAFKA_LISTENERS"]
    assert kafka["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"  # KRaft


def test_mounted_files_exist_and_scrape_the_services(services: dict[str, Any]) -> None:
    for name, svc in services.items():
        for vol in svc.get("volumes", []):
            if vol["type"] == "bind" and not vol["source"].endswith("/repository"):
                assert Path(vol["source"]).exists(), f"{name}: {vol['source']} missing"
    prom = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    targets = {
        t for job in prom["scrape_configs"] for c in job["static_configs"] for t in c["targets"]
    }
    assert targets == {"gateway:8080", "triton:8002"}


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            "services:\n  web:\n    image: x\n    healthchek:\n      test: [CMD, 'true']\n",
            "healthchek",
        ),
        ("servces:\n  web:\n    image: x\n", "servces"),
        (
            "services:\n  web:\n    image: x\n    depends_on:\n"
            "      db:\n        condition: service_healthy\n",
            "db",
        ),
    ],
    ids=["unknown-service-key", "unknown-top-key", "undefined-dependency"],
)
def test_a_bad_compose_file_fails_naming_file_and_key(
    tmp_path: Path, text: str, named: str
) -> None:
    bad = tmp_path / "compose.yaml"
    bad.write_text(text)
    with pytest.raises(AssertionError) as err:
        compose(bad)
    assert str(bad) in str(err.value) and named in str(err.value)


def test_grafana_provisioning_points_at_the_mounted_dashboards_and_prometheus(
    services: dict[str, Any],
) -> None:
    grafana = DEPLOY / "grafana" / "provisioning"
    provider = yaml.safe_load((grafana / "dashboards" / "textgate.yaml").read_text())
    source = yaml.safe_load((grafana / "datasources" / "prometheus.yaml").read_text())
    mounts = {Path(v["source"]).name: v["target"] for v in services["grafana"]["volumes"]}
    assert provider["providers"][0]["options"]["path"] == mounts["dashboards"]
    assert mounts["provisioning"] == "/etc/grafana/provisioning"
    port, _ = health_url(services["prometheus"]["healthcheck"]["test"])
    assert source["datasources"][0]["url"] == f"http://prometheus:{port}"
    assert source["datasources"][0]["uid"] == "prometheus"  # what every panel names

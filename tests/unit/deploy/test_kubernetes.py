"""deploy/kubernetes: every manifest valid offline (Kubernetes schemas, strict), and the
objects fit together: probes on served paths and named ports, selectors that select,
ServiceMonitor ports that exist, the Secret key the gateway reads, a config that parses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from deploy_checks import KUBERNETES, manifests, prometheus_rule, validate_manifest

from textgate.config import Config

FILES = sorted(p for p in KUBERNETES.glob("*.yaml") if p.name != "kustomization.yaml")


def objects() -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for p in FILES for d in manifests(p)}


def containers(deployment: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from deployment["spec"]["template"]["spec"]["containers"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_manifest_is_valid(path: Path) -> None:
    docs = manifests(path)
    assert docs
    for doc in docs:
        validate_manifest(path, doc)


def test_the_kinds_the_issue_asks_for_are_there() -> None:
    kinds = {kind for kind, _ in objects()}
    assert kinds >= {
        "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler",
        "ConfigMap", "Secret", "ServiceMonitor", "InferenceService", "PrometheusRule",
    }  # fmt: skip


def test_kustomization_lists_every_manifest_but_the_kserve_alternative() -> None:
    kust = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    assert sorted(kust["resources"]) == sorted(p.name for p in FILES if p.name != "kserve.yaml")


def test_probes_ask_served_paths_on_named_ports() -> None:
    from textgate.gateway.app import create_app

    routes = {getattr(r, "path", None) for r in create_app().routes}
    objs = objects()
    gateway = next(containers(objs[("Deployment", "textgate-gateway")]))
    triton = next(containers(objs[("Deployment", "textgate-triton")]))
    assert gateway["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert gateway["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert triton["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert triton["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    for c in (gateway, triton):
        names = {p["name"] for p in c["ports"]}
        for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
            if probe in c:
                assert c[probe]["httpGet"]["port"] in names, f"{c['name']} {probe}"
        assert c["resources"]["requests"] and c["resources"]["limits"]
    assert {"/readyz", "/healthz", "/metrics"} <= routes


def test_selectors_select_and_monitors_scrape_named_ports() -> None:
    objs = objects()
    deployments = [d for (k, _), d in objs.items() if k == "Deployment"]

    def selected(match: dict[str, str]) -> list[dict[str, Any]]:
        return [
            d for d in deployments
            if match.items() <= d["spec"]["template"]["metadata"]["labels"].items()
        ]  # fmt: skip

    for (kind, name), obj in objs.items():
        if kind == "Service":
            assert selected(obj["spec"]["selector"]), f"Service {name} selects no pods"
            targets = {p["name"] for d in selected(obj["spec"]["selector"]) for c in containers(d)
                       for p in c["ports"]}  # fmt: skip
            assert {p["targetPort"] for p in obj["spec"]["ports"]} <= targets
        if kind == "PodDisruptionBudget":
            assert selected(obj["spec"]["selector"]["matchLabels"]), f"PDB {name}"
        if kind == "ServiceMonitor":
            match = obj["spec"]["selector"]["matchLabels"]
            services = [
                s for (k, _), s in objs.items()
                if k == "Service" and match.items() <= s["metadata"]["labels"].items()
            ]  # fmt: skip
            assert services, f"ServiceMonitor {name} selects no Service"
            ports = {p["name"] for s in services for p in s["spec"]["ports"]}
            assert {e["port"] for e in obj["spec"]["endpoints"]} <= ports
    hpa = objs[("HorizontalPodAutoscaler", "textgate-gateway")]["spec"]
    assert ("Deployment", hpa["scaleTargetRef"]["name"]) in objs
    assert hpa["metrics"][0]["pods"]["metric"]["name"] == "textgate_in_flight"  # a real metric


def test_config_map_parses_and_the_secret_key_exists() -> None:
    objs = objects()
    cfg = Config.from_dict(
        yaml.safe_load(objs[("ConfigMap", "textgate-config")]["data"]["textgate.yaml"])
    )
    gateway = next(containers(objs[("Deployment", "textgate-gateway")]))
    assert cfg.gateway.port == gateway["ports"][0]["containerPort"]
    assert cfg.client.endpoints == ("textgate-triton:8001",)
    ref = gateway["env"][0]["valueFrom"]["secretKeyRef"]
    secret = objs[("Secret", ref["name"])]
    assert ref["key"] in secret["stringData"] and len(secret["stringData"][ref["key"]]) >= 16


BAD_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: broken}
spec:
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers:
        - name: x
          image: x:1
          readinessprobe: {httpGet: {path: /readyz, port: 8080}}
"""
BAD_MONITOR = """
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata: {name: broken}
spec:
  selector: {matchLabels: {app: x}}
  endpoints: [{port: http, intervall: 15s}]
"""
BAD_ISVC = """
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: broken}
spec:
  predictor: {model: {modelFormat: {name: triton}, storageUri: "pvc://m/", protocolVersion: v3}}
"""


@pytest.mark.parametrize(
    ("text", "named"),
    [(BAD_DEPLOYMENT, "readinessprobe"), (BAD_MONITOR, "intervall"), (BAD_ISVC, "protocolVersion")],
    ids=["deployment-unknown-field", "servicemonitor-unknown-field", "kserve-bad-value"],
)
def test_a_wrong_field_fails_naming_file_and_key(tmp_path: Path, text: str, named: str) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text(text)
    with pytest.raises(AssertionError) as err:
        for doc in manifests(bad):
            validate_manifest(bad, doc)
    assert str(bad) in str(err.value) and named in str(err.value) and "/broken" in str(err.value)


def test_the_prometheus_rule_is_the_rule_files() -> None:
    shipped = (KUBERNETES / "prometheusrule.yaml").read_text(encoding="utf-8")
    assert shipped == prometheus_rule(), "stale: regenerate it with the command at its top"

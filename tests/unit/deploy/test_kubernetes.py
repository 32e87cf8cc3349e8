"""deploy/kubernetes: every manifest valid offline (Kubernetes schemas, strict), and the
objects fit together: probes on served paths and named ports, selectors that select,
ServiceMonitor ports that exist, the Secret key the gateway reads, a config that parses,
every claim a pod uses defined, and the gateway's outbox on a claim per pod that outlives
the pod (a StatefulSet with its headless Service, a PDB and HPA that act on it, a grace
period longer than the gateway's shutdown)."""

from __future__ import annotations

import inspect
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from hashlib import sha256
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from tests.helpers.deploy_checks import KUBERNETES, manifests, prometheus_rule, validate_manifest
from textgate.config import Config

FILES = sorted(p for p in KUBERNETES.glob("*.yaml") if p.name != "kustomization.yaml")


def objects() -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for p in FILES for d in manifests(p)}


WORKLOADS = ("Deployment", "StatefulSet")


def containers(workload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from workload["spec"]["template"]["spec"]["containers"]


def all_containers(workload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    pod = workload["spec"]["template"]["spec"]
    yield from pod.get("initContainers", [])
    yield from pod["containers"]


def gateway_set() -> dict[str, Any]:
    return objects()[("StatefulSet", "textgate-gateway")]


def config_map_config() -> Config:
    text = objects()[("ConfigMap", "textgate-config")]["data"]["textgate.yaml"]
    return Config.from_dict(yaml.safe_load(text))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_manifest_is_valid(path: Path) -> None:
    docs = manifests(path)
    assert docs
    for doc in docs:
        validate_manifest(path, doc)


def test_the_kinds_the_issue_asks_for_are_there() -> None:
    objs = objects()
    kinds = {kind for kind, _ in objs}
    assert kinds >= {
        "StatefulSet", "Deployment", "Service", "PersistentVolumeClaim", "PodDisruptionBudget",
        "HorizontalPodAutoscaler", "ConfigMap", "Secret", "ServiceMonitor", "InferenceService",
        "PrometheusRule",
    }  # fmt: skip
    # The gateway keeps state (its outbox): a StatefulSet; Triton reads a shared volume.
    assert ("StatefulSet", "textgate-gateway") in objs
    assert ("Deployment", "textgate-gateway") not in objs
    assert ("Deployment", "textgate-triton") in objs


def test_kustomization_lists_every_manifest_but_the_kserve_alternative() -> None:
    kust = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    assert sorted(kust["resources"]) == sorted(p.name for p in FILES if p.name != "kserve.yaml")


def test_probes_ask_served_paths_on_named_ports() -> None:
    from textgate.gateway.app import create_app

    routes = {getattr(r, "path", None) for r in create_app().routes}
    objs = objects()
    gateway = next(containers(objs[("StatefulSet", "textgate-gateway")]))
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
    workloads = [d for (k, _), d in objs.items() if k in WORKLOADS]

    def selected(match: dict[str, str]) -> list[dict[str, Any]]:
        return [
            d for d in workloads
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
            # One Service per monitor: a second one (the headless) would scrape each pod twice.
            assert len(services) == 1, f"ServiceMonitor {name} selects {len(services)} Services"
            ports = {p["name"] for s in services for p in s["spec"]["ports"]}
            assert {e["port"] for e in obj["spec"]["endpoints"]} <= ports
    hpa = objs[("HorizontalPodAutoscaler", "textgate-gateway")]["spec"]
    assert (hpa["scaleTargetRef"]["kind"], hpa["scaleTargetRef"]["name"]) in objs
    assert hpa["metrics"][0]["pods"]["metric"]["name"] == "textgate_in_flight"  # a real metric


def test_config_map_parses_and_the_secret_key_exists() -> None:
    objs = objects()
    cfg = config_map_config()
    gateway = next(containers(objs[("StatefulSet", "textgate-gateway")]))
    assert cfg.gateway.port == gateway["ports"][0]["containerPort"]
    assert cfg.client.endpoints == ("textgate-triton:8001",)
    ref = gateway["env"][0]["valueFrom"]["secretKeyRef"]
    secret = objs[("Secret", ref["name"])]
    assert ref["key"] in secret["stringData"] and len(secret["stringData"][ref["key"]]) >= 16


def test_every_claim_a_pod_uses_is_defined() -> None:
    objs = objects()
    claims = {name for kind, name in objs if kind == "PersistentVolumeClaim"}
    used = 0
    for (kind, name), obj in objs.items():
        if kind not in WORKLOADS:
            continue
        pod = obj["spec"]["template"]["spec"]
        templates = {t["metadata"]["name"] for t in obj["spec"].get("volumeClaimTemplates", [])}
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for v in volumes.values():
            if "persistentVolumeClaim" in v:
                used += 1
                claim = v["persistentVolumeClaim"]["claimName"]
                assert claim in claims, f"{kind} {name}: claim {claim} is defined nowhere"
        for c in all_containers(obj):
            for m in c.get("volumeMounts", []):
                assert m["name"] in volumes or m["name"] in templates, f"{name}: {m['name']}"
    isvc = objs[("InferenceService", "textgate")]["spec"]["predictor"]["model"]["storageUri"]
    assert isvc.startswith("pvc://") and isvc[len("pvc://") :].split("/")[0] in claims
    assert used >= 1
    # Triton pods share the model volume and only read it.
    models = objs[("PersistentVolumeClaim", "textgate-models")]["spec"]
    assert "ReadOnlyMany" in models["accessModes"]
    triton = objs[("Deployment", "textgate-triton")]["spec"]["template"]["spec"]
    claim = next(v for v in triton["volumes"] if "persistentVolumeClaim" in v)
    assert claim["persistentVolumeClaim"]["readOnly"] is True


def test_the_outbox_is_a_claim_per_pod_at_the_configured_path() -> None:
    gateway = gateway_set()
    outbox_dir = str(PurePosixPath(config_map_config().events.outbox_path).parent)
    mounts = {m["mountPath"]: m["name"] for m in next(containers(gateway))["volumeMounts"]}
    assert outbox_dir in mounts, f"nothing mounted at {outbox_dir}"
    name = mounts[outbox_dir]
    claim_templates = gateway["spec"].get("volumeClaimTemplates", [])
    templates = {t["metadata"]["name"]: t["spec"] for t in claim_templates}
    assert name in templates, f"the outbox volume {name!r} is not a volumeClaimTemplate"
    volumes = {v["name"] for v in gateway["spec"]["template"]["spec"].get("volumes", [])}
    assert name not in volumes  # a pod volume of that name (an emptyDir) would shadow it
    assert templates[name]["accessModes"] == ["ReadWriteOnce"]  # one outbox per pod
    # A scale-down or a deleted StatefulSet keeps the claims: their events are still owed.
    retention = gateway["spec"].get("persistentVolumeClaimRetentionPolicy")
    assert retention == {"whenDeleted": "Retain", "whenScaled": "Retain"}


def test_the_headless_service_governs_the_statefulset() -> None:
    objs = objects()
    gateway = gateway_set()["spec"]
    headless = objs[("Service", gateway["serviceName"])]["spec"]
    assert headless.get("clusterIP") == "None", f"{gateway['serviceName']} is not headless"
    assert headless["selector"].items() <= gateway["template"]["metadata"]["labels"].items()
    client = objs[("Service", "textgate-gateway")]["spec"]
    assert client.get("clusterIP") != "None"  # clients keep a load-balanced address
    assert gateway["serviceName"] != "textgate-gateway"


def test_the_pdb_and_the_hpa_act_on_the_statefulset() -> None:
    objs = objects()
    gateway = gateway_set()["spec"]
    pdb = objs[("PodDisruptionBudget", "textgate-gateway")]["spec"]
    assert pdb["selector"]["matchLabels"] == gateway["selector"]["matchLabels"]
    assert pdb.get("maxUnavailable") == 1 and "minAvailable" not in pdb
    hpa = objs[("HorizontalPodAutoscaler", "textgate-gateway")]["spec"]
    target = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "textgate-gateway"}
    assert hpa["scaleTargetRef"] == target


def test_the_grace_period_outlasts_the_gateway_shutdown() -> None:
    """SIGTERM comes after preStop; then uvicorn finishes its requests (bounded by the
    config's timeouts) and the publisher its Kafka round (Publisher.stop's bound, a code
    default: the config has no drain timeout) before the outbox closes."""
    from textgate.gateway.records.publisher import Publisher

    cfg = config_map_config()
    workload = gateway_set()
    pod = workload["spec"]["template"]["spec"]
    gateway = next(containers(workload))
    pre_stop = gateway.get("lifecycle", {}).get("preStop", {}).get("exec", {}).get("command")
    assert pre_stop and pre_stop[0] == "sleep", "no preStop sleep: Services still route here"
    gw = cfg.gateway
    requests_s = gw.header_timeout_s + gw.body_timeout_s + gw.queue_timeout_s + cfg.client.timeout_s
    drain_s = inspect.signature(Publisher.stop).parameters["timeout_s"].default
    assert isinstance(drain_s, float) and cfg.events.kafka.bootstrap_servers
    needed = float(pre_stop[1]) + requests_s + drain_s
    assert pod["terminationGracePeriodSeconds"] > needed, f"needs more than {needed} s"


def test_the_model_fetch_checks_the_digest_and_triton_serves_what_it_chose(
    tmp_path: Path,
) -> None:
    """The init container's script and Triton's command, run here by sh with the volume
    paths moved under tmp_path and tritonserver replaced by echo."""
    for exe in ("sh", "curl", "sha256sum", "tar", "grep"):
        assert shutil.which(exe), f"{exe} not found: apt-get install {exe}"
    objs = objects()
    data = objs[("ConfigMap", "textgate-config")]["data"]
    assert data.get("models-url") == "" and data.get("models-sha256") == ""  # the claim as is
    triton = objs[("Deployment", "textgate-triton")]
    for c in all_containers(triton):  # every ConfigMap key a container reads exists
        for e in c.get("env", []):
            ref = e.get("valueFrom", {}).get("configMapKeyRef")
            if ref:
                assert ref["key"] in objs[("ConfigMap", ref["name"])]["data"], ref
    pod = triton["spec"]["template"]["spec"]
    fetch = next(c for c in pod["initContainers"] if c["name"] == "fetch-models")
    server = next(c for c in pod["containers"] if c["name"] == "triton")
    fetched = tmp_path / "fetched"
    fetched.mkdir()

    def sh(c: dict[str, Any], url: str, digest: str = "") -> subprocess.CompletedProcess[str]:
        assert c["command"] == ["/bin/sh", "-c"]
        script = c["args"][0].replace("/fetched", str(fetched)).replace("exec tritonserver", "echo")
        env = {"PATH": "/usr/bin:/bin", "MODELS_URL": url, "MODELS_SHA256": digest}
        return subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True,
                              timeout=60, check=False)  # fmt: skip

    repo = tmp_path / "repository" / "spam"
    repo.mkdir(parents=True)
    (repo / "config.pbtxt").write_text('name: "spam"\n')
    tarball = tmp_path / "repository.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(repo, arcname="spam")
    url, good = tarball.as_uri(), sha256(tarball.read_bytes()).hexdigest()

    done = sh(fetch, "")
    assert done.returncode == 0 and not any(fetched.iterdir())
    assert "--model-repository=/models " in sh(server, "").stdout
    assert sh(fetch, url, "").returncode != 0  # a URL without a digest
    assert sh(fetch, url, "0" * 64).returncode != 0  # the wrong digest
    assert not (fetched / "repository" / "spam").exists()
    done = sh(fetch, url, good)
    assert done.returncode == 0, done.stderr
    assert (fetched / "repository" / "spam" / "config.pbtxt").is_file()
    assert not (fetched / "repository.tar.gz").exists()
    served = sh(server, url).stdout
    assert f"--model-repository={fetched}/repository " in served and "--load-model=*" in served


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

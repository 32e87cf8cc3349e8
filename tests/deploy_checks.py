"""Runners for the linters and validators that check deploy/ (shared by unit and integration
tests). Each returns the tool's output and raises ``AssertionError`` naming the file when the
tool rejects it; a missing tool fails with the command that installs it (no skip: CI has it).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
    exe = tool("promtool", "apt-get install prometheus (scripts/bootstrap.sh DEB_PACKAGES)")
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

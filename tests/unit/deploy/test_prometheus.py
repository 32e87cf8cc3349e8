"""deploy/prometheus: rules that parse, unit tests that fire and stay quiet, a valid config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.helpers.deploy_checks import PROMETHEUS, RULE_FILES, check_rules, promtool

TESTS = sorted((PROMETHEUS / "tests").glob("*.yaml"))


def alerts() -> list[str]:
    doc = yaml.safe_load((PROMETHEUS / "alerts.yaml").read_text())
    return [r["alert"] for g in doc["groups"] for r in g["rules"] if "alert" in r]


def test_rule_files_pass_promtool_check() -> None:
    out = check_rules(*RULE_FILES)
    assert "SUCCESS: 16 rules found" in out and "SUCCESS: 12 rules found" in out


def test_promtool_rule_tests_pass() -> None:
    done = promtool("test", "rules", *TESTS)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    fires: set[str] = set()
    quiet: set[str] = set()
    for path in TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (fires if check["exp_alerts"] else quiet).add(check["alertname"])
    names = set(alerts())
    assert len(names) == 12
    assert names - fires == set(), "alerts no test fires"
    assert names - quiet == set(), "alerts no test keeps quiet"


def test_prometheus_config_is_valid() -> None:
    done = promtool("check", "config", PROMETHEUS / "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("groups:\n  - name: g\n    rules:\n      - alert: A\n        exprr: up == 0\n", "exprr"),
        ("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up ==\n", "expr"),
        ("groups: [\n", "yaml"),
    ],
    ids=["unknown-key", "bad-promql", "not-yaml"],
)
def test_a_broken_rules_file_fails_naming_file_and_key(
    tmp_path: Path, text: str, named: str
) -> None:
    bad = tmp_path / "broken.rules.yaml"
    bad.write_text(text)
    with pytest.raises(AssertionError) as err:
        check_rules(bad)
    message = str(err.value)
    assert str(bad) in message
    assert named in message.lower()

"""deploy/grafana: the checked-in dashboards are what the generator makes, and parse."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.deploy_checks import DASHBOARDS, GRAFANA, check_promql, dashboard_queries

pytest.importorskip("grafana_foundation_sdk", reason="dev extra: grafana-foundation-sdk")


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate", GRAFANA / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_checked_in_dashboards_equal_a_fresh_generation() -> None:
    fresh = generator().render()
    assert sorted(fresh) == [p.name for p in DASHBOARDS]
    for path in DASHBOARDS:
        assert path.read_text(encoding="utf-8") == fresh[path.name], (
            f"{path} is stale: run python deploy/grafana/generate.py"
        )


def test_generator_check_mode_reports_a_stale_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = generator()
    monkeypatch.setattr(gen, "OUT", tmp_path)
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0
    (tmp_path / "textgate-triton.json").write_text("{}")
    assert gen.main(["--check"]) == 1
    assert "textgate-triton.json: stale" in capsys.readouterr().err


def test_every_panel_query_parses(tmp_path: Path) -> None:
    for path in DASHBOARDS:
        queries = dashboard_queries(path)
        assert len(queries) >= 4
        check_promql(path, queries, tmp_path)
        doc = json.loads(path.read_text())
        assert {p["datasource"]["uid"] for p in doc["panels"]} == {"prometheus"}


def test_a_dashboard_that_does_not_parse_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"panels": [')
    with pytest.raises(AssertionError, match=r"broken\.json: not a dashboard JSON"):
        dashboard_queries(bad)
    bad.write_text('{"title": "x"}')
    with pytest.raises(AssertionError, match=r"broken\.json: key 'panels'"):
        dashboard_queries(bad)


def test_a_panel_with_bad_promql_names_the_file_and_panel(tmp_path: Path) -> None:
    bad = tmp_path / "bad-query.json"
    panel = {"title": "Broken rate", "targets": [{"expr": "sum(rate(x[$__rate_interval])"}]}
    bad.write_text(json.dumps({"panels": [panel]}))
    with pytest.raises(AssertionError, match=r"bad-query\.json: panel 'Broken rate'"):
        check_promql(bad, dashboard_queries(bad), tmp_path)

"""A build the time budget cut says so and exits BUDGET_CUT_EXIT; the demo then builds the small
fixed recipe (scripts/build_default.sh) instead of serving a partly trained model (issue 38)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from textgate import cli, data
from textgate.commands import bundles

ROOT = Path(__file__).parents[2]


def _manifest(stopped: str, recipe: str = "full") -> dict[str, Any]:
    return {
        "task": "spam",
        "training": {
            "recipe": recipe,
            "stopped": stopped,
            "cut_by_time_budget": stopped == "time_budget",
            "steps_run": 129 if stopped == "time_budget" else 256,
            "steps_planned": 256,
            "max_minutes": 60,
        },
    }


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """``textgate build`` with the build itself replaced: each call takes the next manifest
    queued in ``seen[0]["queue"]`` and records the options it was given."""
    from textgate import build

    seen: list[dict[str, Any]] = [{"queue": []}]

    def fake_build(task: str, out: Path, **kwargs: Any) -> dict[str, Any]:
        seen.append({"task": task, "options": kwargs["train_options"]})
        manifest: dict[str, Any] = seen[0]["queue"].pop(0)
        return manifest

    table = data.build_table([(1, "a", "ham"), (2, "b", "spam")], source="mem")
    monkeypatch.setattr(build, "build", fake_build)
    monkeypatch.setattr(bundles, "load_table", lambda _args: table)
    return seen


def _said(text: str) -> str:
    """The panel's words on one line: no borders, no wrapping."""
    return " ".join(text.replace("│", " ").split())


def test_a_cut_build_says_so_in_a_red_panel_and_exits_apart(
    builds: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    builds[0]["queue"].append(_manifest("time_budget"))
    code = cli.main(["build", "spam", "-o", str(tmp_path / "b"), "--json"])
    assert code == bundles.BUDGET_CUT_EXIT == 75
    said = _said(capsys.readouterr().err)
    assert "TRAINING CUT BY THE TIME BUDGET" in said
    assert "129 of 256 planned steps" in said
    assert "not cached" in said and "--recipe small" in said


def test_a_completed_build_exits_zero_and_small_is_passed_on(
    builds: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    builds[0]["queue"] += [_manifest("completed"), _manifest("time_budget", recipe="small")]
    assert cli.main(["build", "spam", "-o", str(tmp_path / "b"), "--json"]) == 0
    assert "TIME BUDGET" not in capsys.readouterr().err
    code = cli.main(["build", "spam", "-o", str(tmp_path / "b"), "--json", "--recipe", "small"])
    assert code == bundles.BUDGET_CUT_EXIT
    assert builds[-1]["options"].recipe == "small"
    # the small recipe cut too: no advice to build what was just built
    assert "--recipe small" not in _said(capsys.readouterr().err)


def test_an_unknown_recipe_is_one_message(tmp_path: Path) -> None:
    assert cli.main(["build", "spam", "-o", str(tmp_path / "b"), "--recipe", "tiny"]) == 4


# --- scripts/build_default.sh: the demo's fallback decision --------------------------------


def _fake_textgate(tmp_path: Path, full: int, small: int) -> Path:
    """A ``textgate`` that logs its arguments and exits ``full`` or, with --recipe small,
    ``small``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "textgate"
    script.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> "{tmp_path / "calls.log"}"\n'
        f'case "$*" in *"--recipe small"*) exit {small};; esac\n'
        f"exit {full}\n"
    )
    script.chmod(0o755)
    return bin_dir


def _demo_build(tmp_path: Path, full: int, small: int = 0) -> tuple[int, list[str], str]:
    bin_dir = _fake_textgate(tmp_path, full, small)
    run = subprocess.run(
        ["bash", "-c", "set -euo pipefail; . scripts/build_default.sh; build_default spam out"],
        cwd=ROOT,
        env={**os.environ, "BIN": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    log = tmp_path / "calls.log"
    calls = log.read_text().splitlines() if log.is_file() else []
    return run.returncode, calls, run.stderr


def test_the_demo_builds_the_small_recipe_only_when_the_budget_cut_the_full_one(
    tmp_path: Path,
) -> None:
    code, calls, said = _demo_build(tmp_path, full=75)
    assert code == 0
    assert calls == ["build spam -o out", "build spam -o out --recipe small"]
    assert "small fixed recipe" in said


@pytest.mark.parametrize(
    ("full", "small", "code", "n_calls"),
    [
        (0, 0, 0, 1),  # the full recipe fitted: served as built
        (3, 0, 3, 1),  # any other failure is the build's, never retried small
        (75, 75, 75, 2),  # the small recipe cut too: the demo stops, serving nothing
    ],
)
def test_the_demo_otherwise_keeps_the_builds_outcome(
    tmp_path: Path, full: int, small: int, code: int, n_calls: int
) -> None:
    got, calls, _ = _demo_build(tmp_path, full=full, small=small)
    assert (got, len(calls)) == (code, n_calls)


def test_the_demo_scripts_use_the_fallback_and_its_code_is_the_clis() -> None:
    helper = (ROOT / "scripts" / "build_default.sh").read_text()
    assert f"BUDGET_CUT_EXIT={bundles.BUDGET_CUT_EXIT}\n" in helper
    for name in ("demo.sh", "demo_sentiment.sh"):
        assert "build_default spam " in (ROOT / "scripts" / name).read_text()

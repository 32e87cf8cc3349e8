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

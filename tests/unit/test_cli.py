from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from textgate import cli, errors


def _subcommands() -> list[str]:
    parser = cli.build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(actions[0].choices)


def test_core_subcommands_exist() -> None:
    assert {"data"} <= set(_subcommands())


@pytest.mark.parametrize("name", _subcommands())
def test_every_subcommand_has_help_with_an_example(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main([name, "--help"])
    assert info.value.code == 0
    assert "example:" in capsys.readouterr().out


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "usage:" in capsys.readouterr().out


def test_every_error_class_has_an_exit_code() -> None:
    def walk(cls: type) -> list[type]:
        return [cls, *(c for sub in cls.__subclasses__() for c in walk(sub))]

    # Each family maps to its own code; only the base falls through to the generic 1.
    for cls in walk(errors.TextgateError)[1:]:
        mapped = next(c for c in cls.__mro__ if c in cli.EXIT_CODES)
        assert mapped is not errors.TextgateError, cls.__name__


def test_data_error_is_one_message_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"text,label\nfine,a\ncaf\xe9,b\n")
    proc = subprocess.run(
        [sys.executable, "-m", "textgate.cli", "data", "--task", "x", "--data", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == cli.EXIT_CODES[errors.DataError]
    assert "Traceback" not in proc.stderr
    assert "bad.csv" in proc.stderr and "byte offset" in proc.stderr
    assert "fix:" in proc.stderr


def test_data_report_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "d.csv"
    good.write_text("text,label\n" + "".join(f"t{i},{'ab'[i % 2]}\n" for i in range(50)))
    assert cli.main(["data", "--task", "x", "--data", str(good), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"rows": 50' in out and '"data_hash"' in out

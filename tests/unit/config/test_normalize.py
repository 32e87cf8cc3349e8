"""The ``normalize`` section: set from YAML or the environment, checked at start, and what
the gateway normalizes with."""

from __future__ import annotations

from pathlib import Path

import pytest

from textgate import cli
from textgate.config import Config
from textgate.errors import ConfigError
from textgate.gateway.runtime import Gateway
from textgate.normalize import NormalizeSettings


def _yaml(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "textgate.yaml"
    outbox = tmp_path / "events.sqlite3"
    head = f"client:\n  endpoints: [127.0.0.1:1]\nevents:\n  outbox_path: {outbox}\n"
    path.write_text(head + body, encoding="utf-8")
    return path


def test_yaml_normalize_section_reaches_the_gateway(tmp_path: Path) -> None:
    path = _yaml(
        tmp_path,
        "gateway:\n  max_body_bytes: 4096\nnormalize:\n  long_text: chunk\n  max_parts: 7\n",
    )
    settings = Gateway(Config.from_file(path)).runtime.preparer.settings
    assert isinstance(settings, NormalizeSettings)
    assert (settings.long_text, settings.max_parts) == ("chunk", 7)
    assert settings.max_body_bytes == 4096  # the body limit stays the gateway's


def test_without_the_section_the_gateway_normalizes_as_before(tmp_path: Path) -> None:
    settings = Gateway(Config.from_file(_yaml(tmp_path, ""))).runtime.preparer.settings
    assert settings == NormalizeSettings(max_body_bytes=Config().gateway.max_body_bytes)


def test_environment_overrides_the_section() -> None:
    cfg = Config.from_dict(
        {"normalize": {"long_text": "chunk"}},
        env={"TEXTGATE_NORMALIZE__MAX_CHUNKS": "4", "TEXTGATE_NORMALIZE__KEEP_LINK_DOMAINS": "no"},
    )
    assert (cfg.normalize.long_text, cfg.normalize.max_chunks) == ("chunk", 4)
    assert cfg.normalize.keep_link_domains is False


@pytest.mark.parametrize(
    ("section", "key", "problem"),
    [
        ({"long_text": "wrap"}, "normalize.long_text", "is not one of 'truncate', 'chunk'"),
        ({"max_parts": 0}, "normalize.max_parts", "must be at least 1"),
        ({"chunk_chars": 64, "chunk_overlap": 64}, "normalize.chunk_overlap", "0..chunk_chars-1"),
        ({"lang_text": "chunk"}, "normalize.lang_text", "unknown key"),
        # One body limit: gateway.max_body_bytes; a second one here would be ignored.
        ({"max_body_bytes": 10}, "normalize.max_body_bytes", "unknown key"),
    ],
)
def test_bad_normalize_settings_are_refused_naming_the_key(
    section: dict[str, object], key: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as info:
        Config.from_dict({"normalize": section})
    assert info.value.key == key
    assert problem in info.value.message


def test_serve_refuses_a_bad_normalize_section_at_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _yaml(tmp_path, "normalize:\n  long_text: wrap\n")
    assert cli.main(["serve", "--config", str(path)]) == cli.EXIT_CODES[ConfigError]
    err = " ".join(capsys.readouterr().err.split())  # rich wraps long lines
    assert "normalize.long_text" in err and "'truncate', 'chunk'" in err

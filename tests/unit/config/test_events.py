"""The events section: the default outbox path is absolute."""

from __future__ import annotations

from pathlib import Path

import pytest

from textgate.config import EventsConfig, default_outbox_path


def test_the_default_outbox_path_is_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TEXTGATE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative-cache")
    assert default_outbox_path().is_absolute()
    monkeypatch.setenv("TEXTGATE_CACHE_DIR", str(tmp_path))
    assert EventsConfig().outbox_path == tmp_path.resolve() / "events.sqlite3"

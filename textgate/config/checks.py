"""The two checks every section's ``__post_init__`` uses; keys are relative to the section
(the loader prefixes the section's name)."""

from __future__ import annotations

from textgate.errors import ConfigError


def require(ok: bool, key: str, problem: str, hint: str | None = None) -> None:
    if not ok:
        raise ConfigError(key, problem, hint=hint)


def check_port(value: int, key: str) -> None:
    require(0 <= value <= 65535, key, f"port {value} is outside 0..65535 (0 picks a free port)")

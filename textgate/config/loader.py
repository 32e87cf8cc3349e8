"""How a section dataclass is filled from YAML and the environment.

``build`` walks a section's type hints: nested sections recurse, ``Literal``s must match,
tuples accept lists (or a comma-separated string from the environment), scalars are checked;
unknown keys are refused. Environment values are raw strings (``_EnvValue``), parsed as
YAML unless the field takes a string.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml

from textgate.errors import ConfigError

ENV_PREFIX = "TEXTGATE_"


def plain(value: Any) -> Any:
    """asdict() output with Paths and tuples turned into YAML-friendly values."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def env_tree(env: Mapping[str, str]) -> dict[str, Any]:
    """TEXTGATE_A__B__C=v -> {"a": {"b": {"c": "v"}}}; other variables are ignored."""
    tree: dict[str, Any] = {}
    for name, value in env.items():
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        parts = [p.lower() for p in name[len(ENV_PREFIX) :].split("__")]
        node = tree
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(".".join(parts), f"environment variable {name} conflicts")
        node[parts[-1]] = _EnvValue(value)
    return tree


class _EnvValue(str):
    """A raw string from the environment: parsed as YAML unless the field is a string."""


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def build(cls: type[Any], data: Any, prefix: str) -> Any:
    where = prefix.rstrip(".") or "<root>"
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(where, f"must be a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(
            f"{prefix}{unknown[0]}", "unknown key", hint=f"known keys: {', '.join(sorted(names))}"
        )
    kwargs = {key: _coerce(value, hints[key], f"{prefix}{key}") for key, value in data.items()}
    try:
        return cls(**kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{prefix}{exc.key}", _problem(exc), hint=exc.hint) from None


def _problem(exc: ConfigError) -> str:
    return exc.message.split(": ", 1)[1] if ": " in exc.message else exc.message


def _coerce(value: Any, tp: Any, key: str) -> Any:
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return build(tp, value, f"{key}.")
    if isinstance(value, _EnvValue) and tp is not str and not _accepts_str(tp):
        value = _parse_env(value, key)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _coerce(value, inner[0], key)
    if origin is Literal:
        if value not in args:
            raise ConfigError(key, f"{value!r} is not one of {', '.join(map(repr, args))}")
        return value
    if origin is tuple:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list | tuple):
            raise ConfigError(key, f"expected a list, got {value!r}")
        return tuple(_coerce(v, args[0], f"{key}[{i}]") for i, v in enumerate(value))
    return _scalar(value, tp, key)


def _accepts_str(tp: Any) -> bool:
    return tp is Path or Path in typing.get_args(tp) or str in typing.get_args(tp)


def _parse_env(value: str, key: str) -> Any:
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError as exc:
        raise ConfigError(key, f"cannot parse environment value {value!r}") from exc


def _scalar(value: Any, tp: Any, key: str) -> Any:
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(key, f"expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise ConfigError(key, f"expected an integer, got {value!r}")
        try:
            return int(value)
        except ValueError:
            raise ConfigError(key, f"expected an integer, got {value!r}") from None
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ConfigError(key, f"expected a number, got {value!r}")
        try:
            return float(value)
        except ValueError:
            raise ConfigError(key, f"expected a number, got {value!r}") from None
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(key, f"expected a string, got {value!r}")
        return str(value)
    if tp is Path:
        if not isinstance(value, str | Path):
            raise ConfigError(key, f"expected a path, got {value!r}")
        return Path(value).expanduser()
    raise ConfigError(key, f"unsupported type {tp!r}")  # a programming error in a section

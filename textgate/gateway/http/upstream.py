"""The private parts of uvicorn and Starlette the gateway stands on, checked at start.

``frontdoor.GuardedProtocol`` overrides methods of uvicorn's private
``httptools_impl.HttpToolsProtocol`` and reads its ``cycle``/``transport``/``loop``;
``fastpath`` calls ``starlette._utils.get_route_path`` and builds Starlette's
``ExceptionMiddleware`` itself. None of that is public API, so an upgrade can change it
without notice: the versions are pinned in ``pyproject.toml``, and ``check()`` (run when the
gateway starts) refuses, naming the package and the fix, an install where the pieces are
missing or their signatures moved — a clear start-up error instead of a front door that
silently stops enforcing its limits.
"""

from __future__ import annotations

import inspect
from importlib import metadata

from textgate.errors import DependencyError

TESTED = {"uvicorn": "0.55.0", "starlette": "1.10.0", "fastapi": "0.165.0"}

# Method -> its parameters (after self) as GuardedProtocol overrides and calls them.
PROTOCOL_METHODS = {
    "connection_made": ("transport",),
    "connection_lost": ("exc",),
    "data_received": ("data",),
    "on_message_begin": (),
    "on_url": ("url",),
    "on_header": ("name", "value"),
    "on_headers_complete": (),
    "on_body": ("body",),
    "on_message_complete": (),
    "on_response_complete": (),
}
STATUS_LINES = (408, 431, 503)


def problems() -> list[str]:
    """What no longer matches; empty when the installed versions fit the gateway's use."""
    found: list[str] = []
    try:
        from uvicorn.protocols.http import httptools_impl
    except ImportError as exc:
        return [f"uvicorn.protocols.http.httptools_impl cannot be imported ({exc})"]
    proto = getattr(httptools_impl, "HttpToolsProtocol", None)
    if proto is None:
        return ["uvicorn's httptools_impl has no HttpToolsProtocol"]
    for name, params in PROTOCOL_METHODS.items():
        method = getattr(proto, name, None)
        if method is None:
            found.append(f"HttpToolsProtocol.{name} is gone")
            continue
        got = tuple(inspect.signature(method).parameters)[1:]
        if got != params:
            found.append(f"HttpToolsProtocol.{name}{got} is not {name}{params}")
    lines = getattr(httptools_impl, "STATUS_LINE", {})
    found += [f"uvicorn's STATUS_LINE has no {s}" for s in STATUS_LINES if s not in lines]
    found += _starlette()
    return found


def _starlette() -> list[str]:
    try:
        from starlette._utils import get_route_path
        from starlette.middleware.exceptions import ExceptionMiddleware
    except ImportError as exc:
        return [f"starlette's private get_route_path or ExceptionMiddleware moved ({exc})"]
    found = []
    if tuple(inspect.signature(get_route_path).parameters) != ("scope",):
        found.append("starlette._utils.get_route_path no longer takes (scope)")
    if "handlers" not in inspect.signature(ExceptionMiddleware.__init__).parameters:
        found.append("starlette's ExceptionMiddleware no longer takes handlers=")
    return found


def installed() -> dict[str, str]:
    out = {}
    for name in TESTED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def check() -> None:
    """Raise ``DependencyError`` when the private API the gateway uses does not fit."""
    found = problems()
    if found:
        have = ", ".join(f"{k} {v}" for k, v in installed().items())
        want = ", ".join(f"{k}=={v}" for k, v in TESTED.items())
        raise DependencyError(
            f"the installed web stack ({have}) does not fit the gateway: {'; '.join(found)}",
            hint=f"install the tested versions: pip install {want}",
        )

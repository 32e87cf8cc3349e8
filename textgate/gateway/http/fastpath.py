"""``POST /v1/classify/{task}`` straight to its endpoint, past FastAPI's router.

The route is registered as usual (OpenAPI, and the fallback for anything this does not
take); this middleware sends the requests that match it exactly to the same endpoint
function. What the skipped layers did for it is done here: the route's match (the same
``{task}`` segment on the same route path, POST only: another method, a trailing slash or
an extra segment still goes through the router for its 405/307/404), the scope keys they set
(``path_params``, ``endpoint``, ``route``, ``router``) and the app's exception handlers
(Starlette's own ``ExceptionMiddleware`` with the handlers the app would have given it, so
every error is answered as before and one without a handler still reaches the 500 layer).

Why: the router, FastAPI's request handler (dependency solving for a path string and the
``Request``, two exit stacks) and the exception layer were a large share of the event
loop's CPU on a single-text request (docs/benchmarks.md, "The gateway's CPU per request",
measured with ``benchmarks/studies/serving/gateway_cpu.py``).
"""

from __future__ import annotations

import re
from typing import Any

from starlette._utils import get_route_path
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.requests import Request

PATH = "/v1/classify/{task}"
_MATCH = re.compile(r"^/v1/classify/(?P<task>[^/]+)$")  # Starlette's regex for PATH


class ClassifyFastPath:
    def __init__(self, app: Any) -> None:
        self.app = app
        self._route: Any = None
        self._handled: Any = None  # the endpoint inside the app's exception handlers

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        match = _MATCH.match(get_route_path(scope))
        if match is None or not self._ready(scope["app"]):
            await self.app(scope, receive, send)
            return
        scope.setdefault("router", scope["app"].router)
        scope["endpoint"] = self._route.endpoint
        scope["route"] = self._route
        scope["path_params"] = {**scope.get("path_params", {}), "task": match.group("task")}
        await self._handled(scope, receive, send)

    def _ready(self, app: Any) -> bool:
        """Resolved once: the classify route and the app's exception handlers around it."""
        if self._handled is None:
            routes = [r for r in app.router.routes if getattr(r, "path", None) == PATH]
            if len(routes) != 1 or "POST" not in getattr(routes[0], "methods", ()):
                return False
            self._route = routes[0]
            # As Starlette's build_middleware_stack splits them: 500/Exception belong to
            # ServerErrorMiddleware (outside), every other handler to ExceptionMiddleware.
            handlers = {
                k: v for k, v in app.exception_handlers.items() if k not in (500, Exception)
            }
            self._handled = ExceptionMiddleware(self._endpoint, handlers=handlers)
        return True

    async def _endpoint(self, scope: Any, receive: Any, send: Any) -> None:
        request = Request(scope, receive, send)
        response = await self._route.endpoint(scope["path_params"]["task"], request)
        await response(scope, receive, send)

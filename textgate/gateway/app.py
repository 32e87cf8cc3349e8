"""The ASGI app, put together: the runtime, the front ends around it, their start and stop.

    app = create_app(Config.load("textgate.yaml"), endpoints=["127.0.0.1:8001"])

The one place that knows every room: the lifespan starts the ``Gateway`` (``runtime.py``),
then the mail listeners (``mailproto/``), and stops them in the reverse order; the HTTP
routes (``http/``) and the console (``console/``) are included here, and the console's
before-body gate and security headers handed to the HTTP middleware. A new front end (an
LMTP listener) is started here and written in its own room.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from fastapi import FastAPI

from textgate import __version__
from textgate.config import Config
from textgate.gateway.console import panel
from textgate.gateway.console import routes as console
from textgate.gateway.console.session import LoginThrottle, SessionFile, Sessions
from textgate.gateway.http import admin, apidocs, corrections, error_handlers, middleware, routes
from textgate.gateway.mailproto import front as mail_front
from textgate.gateway.runtime import Gateway, install_sighup


def _sessions(gw: Gateway) -> Sessions:
    """Console sessions, in a file beside the review store when there is one."""

    def credentials() -> tuple[str | None, dict[str, str]]:
        tenants = gw.config.policy.tenants  # read per call: a reload may rotate keys
        return gw.config.gateway.admin_token, {t.name: t.api_key for t in tenants if t.api_key}

    review = gw.config.review.path
    file = SessionFile(SessionFile.beside(review)) if review is not None else None
    return Sessions(gw.config.review.session_ttl_s, file=file, credentials=credentials)


def create_app(
    config: Config | None = None,
    *,
    endpoints: Sequence[str] = (),
    config_path: Path | None = None,
) -> FastAPI:
    config = config or Config()
    holder: dict[str, Gateway] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        gw = holder.setdefault("gw", Gateway(config, endpoints=endpoints, config_path=config_path))
        app.state.gateway = gw
        app.state.sessions = _sessions(gw)
        app.state.login_throttle = LoginThrottle(
            gw.config.review.login_attempts, gw.config.review.login_window_s
        )
        app.state.rates = panel.Rates()
        await gw.start()
        app.state.rates.sample(gw)  # the live panel's base: rates since startup
        app.state.listeners = listeners = mail_front.Listeners(gw)  # spamd and milter
        await listeners.start()
        install_sighup(gw)
        try:
            yield
        finally:
            await listeners.stop()
            await gw.stop()
            app.state.sessions.close()

    app = FastAPI(
        title="textgate",
        version=__version__,
        description="Text classification (spam, sentiment) on NVIDIA Triton: verdicts, not logits.",
        lifespan=lifespan,
        docs_url=None,  # Swagger UI loads its assets from a CDN: blank offline (apidocs)
        redoc_url=None,
    )
    routes.install(app)
    error_handlers.install(app)
    app.include_router(admin.reload_router)
    app.include_router(admin.router)
    app.include_router(corrections.router)
    app.include_router(console.router)
    app.include_router(apidocs.router)
    middleware.install(
        app,
        gates={"/admin/": admin.check_before_body, "/ui/": console.check_before_body},
        security=console.security_headers,
    )
    return app


def openapi_json() -> str:
    """The schema as committed in docs/openapi.json (stable key order)."""
    return json.dumps(create_app().openapi(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(openapi_json(), end="")

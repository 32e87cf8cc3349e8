"""``/docs`` without a CDN: FastAPI's Swagger UI loads its assets from one (blank offline),
so the gateway serves the API's operations as a plain page built from its own schema."""

from __future__ import annotations

import html

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)


@router.get("/docs")
async def docs_page(request: Request) -> HTMLResponse:
    """The API's operations as plain HTML from the app's own schema (no remote assets)."""
    schema = request.app.openapi()
    rows = []
    for path, ops in sorted(schema.get("paths", {}).items()):
        for method, op in ops.items():
            rows.append(
                f"<tr><td><code>{html.escape(method.upper())}</code></td>"
                f"<td><code>{html.escape(path)}</code></td>"
                f"<td>{html.escape(str(op.get('summary', '')))}</td></tr>"
            )
    title = html.escape(f"{schema['info']['title']} {schema['info']['version']}")
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        "<link rel='stylesheet' href='/ui/static/console.css'></head><body class='docs'>"
        f"<h1>{title}</h1><p>{html.escape(str(schema['info'].get('description', '')))}</p>"
        "<p>The machine-readable schema: <a href='/openapi.json'>/openapi.json</a>; the review "
        "console: <a href='/ui/'>/ui/</a>.</p><table><thead><tr><th>method</th><th>path</th>"
        f"<th>what</th></tr></thead><tbody>{''.join(rows)}</tbody></table></body></html>"
    )
    return HTMLResponse(page)

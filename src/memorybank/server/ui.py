"""The web UI: plain HTML/CSS/JS served from the package (no build step, no CDN).

    GET /           → index.html
    GET /app.js     → the script (also /ui/app.js)
    GET /app.css    → the styles (also /ui/app.css)
    GET /favicon.ico → the icon (also /ui/favicon.ico)
    GET /ui/settings.json → the numbers the pages show by (the relevance a search match needs
                      to be shown without "Show weaker matches": auto-recall's default)

The pages run no inline script or style, as the server's Content-Security-Policy requires
(:mod:`memorybank.server.headers`): every script is a file here, every handler is attached by
``addEventListener``.

:func:`mount_ui` is called last by :func:`memorybank.server.app.create_app`, so every API
route registered before it wins over the static files.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from memorybank.rules.ranking import RECALL_MIN_RELEVANCE

UI_DIR = Path(__file__).with_name("ui")

# The UI's files change with the package version, but browsers may cache them across an
# upgrade: ask them to revalidate each time (they are tiny, and the ETag makes it cheap).
_NO_STALE = {"Cache-Control": "no-cache"}


def mount_ui(app: FastAPI) -> None:
    """Serve the UI at ``/`` (index) and its assets at ``/<name>`` and ``/ui/<name>``."""
    index = UI_DIR / "index.html"
    if not index.is_file():  # pragma: no cover - a broken install, not a runtime condition
        raise RuntimeError(f"the UI files are missing from {UI_DIR}; reinstall memorybank")

    @app.get("/", include_in_schema=False)
    def ui_index() -> FileResponse:
        return FileResponse(index, media_type="text/html", headers=_NO_STALE)

    @app.get("/ui/settings.json", include_in_schema=False)
    def ui_settings() -> JSONResponse:
        return JSONResponse({"search_min_relevance": RECALL_MIN_RELEVANCE}, headers=_NO_STALE)

    for name, media_type in (
        ("app.js", "text/javascript"),
        ("app.css", "text/css"),
        ("favicon.ico", "image/vnd.microsoft.icon"),
    ):
        _asset_route(app, name, media_type)

    app.mount("/ui", StaticFiles(directory=UI_DIR, html=True), name="ui")


def _asset_route(app: FastAPI, name: str, media_type: str) -> None:
    path = UI_DIR / name

    def asset() -> FileResponse:
        return FileResponse(path, media_type=media_type, headers=_NO_STALE)

    app.add_api_route(f"/{name}", asset, methods=["GET"], include_in_schema=False)


__all__ = ["UI_DIR", "mount_ui"]

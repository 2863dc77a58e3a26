"""The OpenAPI schema as a contract, and its documentation pages served offline.

* Every operation is named by its route function (``search``, ``add_user_memory`` …), the
  ``operationId`` a generated client calls it by.
* Every ``/api`` operation takes the ``bearer`` scheme (``Authorization: Bearer mb_…``), or
  none in local mode (an empty alternative).
* Each operation lists the errors it may answer: its own (``responses=errors(…)`` on the
  route), and those of its kind that :func:`contract_schema` adds (401 for ``/api``, 400, 413
  and 415 for a body, 421 for every request, 422 for parameters or a body).
* ``/docs`` (Swagger UI) and ``/redoc`` load their scripts and styles from this server: the
  files come with the ``fastapi-offline`` package, so the pages work with no network. They
  run no inline script, under policies of their own
  (:data:`~memorybank.server.headers.DOCS_POLICY`, ``REDOC_POLICY``).

    >>> operation_id_of(APIRoute("/api/search", lambda: None, name="search"))
    'search'
"""

from __future__ import annotations

import html
from importlib.resources import files
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, Response
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel

from memorybank.server.error_responses import errors
from memorybank.server.headers import DOCS_POLICY, REDOC_POLICY
from memorybank.server.schemas import ExportDocument

#: Where the documentation pages' scripts and styles are served from.
DOCS_ASSETS = "/docs/assets"

#: The security scheme of every ``/api`` operation.
BEARER = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key (`memorybank admin create-key USER`); none in local mode",
    }
}

#: The tag of the routes seed 002 (PageSpace) names, kept at its paths: ``/api/memory/user…`` and
#: ``/api/memory/drive/…``. Every other memory route is ours, under ``/api/memories…``.
SEED_002 = "seed 002"

#: The tags operations are grouped by, in the order the documentation shows them.
TAGS: list[dict[str, Any]] = [
    {"name": "memories", "description": "Save, list, read, change and delete memories"},
    {
        "name": SEED_002,
        "description": "Seed 002's (PageSpace) user and drive memory routes, at its paths",
    },
    {"name": "search", "description": "Hybrid search and the newest memories"},
    {"name": "data", "description": "Export, import and counts"},
    {"name": "forget", "description": "Forgetting in two steps: preview, then confirm"},
    {"name": "consolidate", "description": "Tidy up: merge facts saved twice, after a preview"},
    {"name": "events", "description": "Every change to memory, live (SSE) or in pages"},
    {"name": "webhooks", "description": "Signed deliveries of events to other services"},
    {"name": "stats", "description": "Seed 002's success metrics, for org admins"},
    {"name": "threads", "description": "Conversations, each with memory on or off"},
    {"name": "tools", "description": "Tool definitions, tool calls and the system prompt"},
    {"name": "account", "description": "Who is calling"},
    {"name": "settings", "description": "The caller's own model providers"},
    {"name": "ops", "description": "Liveness and metrics"},
]

_BODY_METHODS = frozenset({"post", "put", "patch"})
_WRITE_METHODS = _BODY_METHODS | {"delete"}


def operation_id_of(route: APIRoute) -> str:
    """A route's ``operationId``: its function's name (unique across the API)."""
    return route.name


def documented(
    model: type[BaseModel] | None, *codes: int, status: int = 200
) -> dict[int | str, dict[str, Any]]:
    """A route's OpenAPI ``responses``: ``model`` for success (``None``: no body, as for a
    204) and its own error ``codes``. The model documents what the route returns; at run time
    the route's answer stays the plain ``dict`` it builds (:func:`contract_schema` keeps the
    model alone in the schema), which FastAPI serialises in pydantic's compiled code: as a
    response model, or with none, every answer would be checked or encoded again in Python
    (a page of 50 memories: 2.0 ms → 4.4 ms a request, measured)."""
    success: dict[str, Any] = {"description": "Success"}
    if model is not None:
        success["model"] = model
    return {status: success, **errors(*codes)}


def _common_errors(path: str, method: str, operation: dict[str, Any]) -> dict[str, Any]:
    """The error answers an operation shares with every other of its kind."""
    codes = [421]  # the host guard sees every request
    if path.startswith("/api"):
        codes.append(401)
    if method in _WRITE_METHODS:
        codes.append(403)  # the guard: a write from another site's page (and roles)
    if method in _BODY_METHODS:
        codes += [413, 415]  # the guard: a body's size and type
    if "requestBody" in operation:
        codes.append(400)
    if "requestBody" in operation or operation.get("parameters"):
        codes.append(422)
    return {str(code): answer for code, answer in errors(*sorted(codes)).items()}


def contract_schema(app: FastAPI) -> dict[str, Any]:
    """The app's OpenAPI schema with the bearer scheme and each operation's errors (built
    once, then cached on the app as FastAPI does)."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    for route in app.routes:
        if isinstance(route, APIRoute) and route.operation_id is None:
            route.operation_id = operation_id_of(route)
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
        tags=app.openapi_tags,
    )
    components = schema.setdefault("components", {})
    components["securitySchemes"] = BEARER
    _add_models(components.setdefault("schemas", {}), ExportDocument)
    for path, methods in schema.get("paths", {}).items():
        for method, operation in methods.items():
            answers = operation.setdefault("responses", {})
            for code, answer in _common_errors(path, method, operation).items():
                # FastAPI documents its own 422 body; ours is {"error": …} like every other.
                if code not in answers or code == "422":
                    answers[code] = {
                        "description": answer["description"],
                        "content": {"application/json": {"schema": {"$ref": _REF_ERROR}}},
                    }
            for code, answer in answers.items():
                if code.startswith("2"):
                    _model_alone(answer)
            if path.startswith("/api"):
                operation["security"] = [{"bearer": []}, {}]
    for unused in ("HTTPValidationError", "ValidationError"):  # FastAPI's 422 body
        components["schemas"].pop(unused, None)
    app.openapi_schema = schema
    return schema


_REF = "#/components/schemas/{model}"
#: The error body's schema, which FastAPI names after the model (the routes' own error
#: answers put it in the components).
_REF_ERROR = "#/components/schemas/ErrorBody"


def _model_alone(node: Any) -> None:
    """Where FastAPI merged a route's documented model (``$ref``) with the schema of its
    return annotation (``dict[str, Any]``: an object, any properties), keep the model."""
    if isinstance(node, dict):
        if "$ref" in node:
            for key in [k for k in node if k != "$ref"]:
                del node[key]
            return
        for value in node.values():
            _model_alone(value)
    elif isinstance(node, list):
        for value in node:
            _model_alone(value)


def _add_models(schemas: dict[str, Any], *models: type[BaseModel]) -> None:
    """Put the schemas of models that routes name by ``$ref`` (bodies they read raw) into
    the components, beside those FastAPI made."""
    for model in models:
        schema = model.model_json_schema(mode="serialization", ref_template=_REF)
        for name, definition in schema.pop("$defs", {}).items():
            schemas.setdefault(name, definition)
        schemas[model.__name__] = schema


#: Swagger UI's start, a script of its own (``/docs/init.js``): the documentation pages run
#: no inline script (:data:`~memorybank.server.headers.DOCS_POLICY`). It reads the schema's
#: address from the page.
SWAGGER_INIT = """\
"use strict";
window.ui = SwaggerUIBundle({
  url: document.getElementById("swagger-ui").dataset.openapiUrl,
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
"""

_SWAGGER_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="{assets}/swagger-ui.css">
<link rel="icon" href="{assets}/favicon.png">
</head>
<body>
<div id="swagger-ui" data-openapi-url="{openapi}"></div>
<script src="{assets}/swagger-ui-bundle.js"></script>
<script src="{root}/docs/init.js"></script>
</body>
</html>
"""

_REDOC_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="{assets}/favicon.png">
</head>
<body>
<redoc spec-url="{openapi}"></redoc>
<script src="{assets}/redoc.standalone.js"></script>
</body>
</html>
"""


def _docs_page(template: str, request: Request, app: FastAPI, title: str, csp: str) -> HTMLResponse:
    """A documentation page, its links under the request's root path, with its own policy."""
    root = html.escape(request.scope.get("root_path", ""), quote=True)
    page = template.format(
        title=html.escape(f"{app.title} - {title}"),
        root=root,
        assets=root + DOCS_ASSETS,
        openapi=root + html.escape(app.openapi_url or "/openapi.json", quote=True),
    )
    return HTMLResponse(page, headers={"Content-Security-Policy": csp})


def mount_docs(app: FastAPI) -> None:
    """Serve Swagger UI at ``/docs`` and ReDoc at ``/redoc``, their assets from this server,
    and the contract schema at ``/openapi.json``."""
    assets = files("fastapi_offline") / "static"
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(assets)), name="docs-assets")
    app.openapi = lambda: contract_schema(app)  # type: ignore[method-assign]

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        return _docs_page(_SWAGGER_PAGE, request, app, "Swagger UI", DOCS_POLICY)

    @app.get("/docs/init.js", include_in_schema=False)
    async def swagger_init() -> Response:
        return Response(SWAGGER_INIT, media_type="text/javascript")

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        return _docs_page(_REDOC_PAGE, request, app, "ReDoc", REDOC_POLICY)


__all__ = [
    "BEARER",
    "DOCS_ASSETS",
    "SEED_002",
    "SWAGGER_INIT",
    "TAGS",
    "contract_schema",
    "documented",
    "mount_docs",
    "operation_id_of",
]

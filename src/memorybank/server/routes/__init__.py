"""The routes of the HTTP API, one module per resource, each with its ``router``.

:data:`ROUTERS` is the order :func:`~memorybank.server.app.create_app` includes them in (and
so the order of the OpenAPI schema's paths)."""

from __future__ import annotations

from fastapi import APIRouter

from memorybank.server.routes import (
    accounts,
    context,
    data,
    forget,
    memories,
    ops,
    providers,
    search,
    threads,
    tools,
)

ROUTERS: tuple[APIRouter, ...] = (
    ops.router,
    accounts.router,
    memories.router,
    search.router,
    data.router,
    forget.router,
    threads.router,
    tools.router,
    context.router,
    providers.router,
)

__all__ = ["ROUTERS"]

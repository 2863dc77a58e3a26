"""The routes of the HTTP API, one module per resource, each with its ``router``.

:data:`ROUTERS` is the order :func:`~memorybank.server.app.create_app` includes them in (and
so the order of the OpenAPI schema's paths)."""

from __future__ import annotations

from fastapi import APIRouter

from memorybank.server.routes import (
    accounts,
    auto_recall,
    bank,
    data,
    events,
    forget,
    memories,
    ops,
    providers,
    search,
    stats,
    threads,
    tidy,
    tools,
    webhooks,
)

ROUTERS: tuple[APIRouter, ...] = (
    ops.router,
    accounts.router,
    bank.router,  # before memories: /api/memories/count is not a memory id
    memories.router,
    search.router,
    data.router,
    forget.router,
    tidy.router,
    threads.router,
    tools.router,
    auto_recall.router,
    providers.router,
    events.router,
    webhooks.router,
    stats.router,
)

__all__ = ["ROUTERS"]

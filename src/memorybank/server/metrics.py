"""Prometheus metrics of the server: requests by route template and status, latencies, and
the number of stored memories. Labels never carry user content, ids or keys: paths are the
route templates (``/api/memories/{memory_id}``), anything unrouted is ``other``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, Metric
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memorybank.providers.embedders.query_cache import QueryVectorCache

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    """One registry per app (several apps may live in one process, as in tests)."""

    def __init__(
        self, memories: Callable[[], float], query_cache: QueryVectorCache | None = None
    ) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "memorybank_http_requests",
            "HTTP requests by route template, method and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "memorybank_http_request_duration_seconds",
            "HTTP request latency by route template and method.",
            ["route", "method"],
            registry=self.registry,
        )
        stored = Gauge(
            "memorybank_memories_stored", "Memories stored (all users).", registry=self.registry
        )
        stored.set_function(memories)
        if query_cache is not None:
            self.registry.register(_QueryCacheCollector(query_cache))

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)


class _QueryCacheCollector:
    """Hits and misses of the search-query vector cache, read when scraped."""

    def __init__(self, cache: QueryVectorCache) -> None:
        self.cache = cache

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "memorybank_query_cache_hits",
            "Searches whose query vector came from the cache (no embedding pass).",
            value=self.cache.hits,
        )
        yield CounterMetricFamily(
            "memorybank_query_cache_misses",
            "Searches that embedded their query.",
            value=self.cache.misses,
        )


def _route_of(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    if isinstance(path, str):
        return path
    if scope.get("path", "").startswith("/mcp"):
        return "/mcp"
    return "other"


class MetricsMiddleware:
    """ASGI middleware counting every HTTP request into :class:`Metrics`."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        start = time.perf_counter()

        async def recording(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recording)
        finally:
            route = _route_of(scope)
            method = str(scope.get("method", ""))
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.latency.labels(route, method).observe(time.perf_counter() - start)


__all__ = ["CONTENT_TYPE", "Metrics", "MetricsMiddleware"]

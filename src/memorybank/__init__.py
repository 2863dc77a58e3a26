"""memorybank: long-term memory for LLM assistants.

>>> import memorybank
>>> with memorybank.open("sqlite:///memories.db") as bank:
...     saved = bank.save("alice", "I prefer TypeScript", "preference")
...     hits = bank.search("alice", "which language does she like?")
>>> saved.content
'User prefers TypeScript'
>>> [hit.memory.content for hit in hits]
['User prefers TypeScript']
"""

from __future__ import annotations

from typing import Any

from memorybank.client import AsyncClient, Client
from memorybank.core.bank import MemoryBank
from memorybank.errors import (
    ConfigurationError,
    EmbeddingModelMismatch,
    MemoryBankError,
    NotFound,
    PermissionDenied,
    ProviderError,
    RoleRequired,
    StoreError,
    ValidationError,
)
from memorybank.factory import build_embedder, build_llm, build_store
from memorybank.model import (
    Caller,
    Category,
    Channel,
    Domain,
    Event,
    EventKind,
    HistoryEvent,
    Memory,
    MemoryFilter,
    Ring,
    SaveInput,
    SaveResult,
    Scope,
    ScopeSet,
    SearchHit,
    Source,
)
from memorybank.settings import Settings

__version__ = "0.1.0"


def open(url: str | None = None, **settings: Any) -> MemoryBank:  # noqa: A001
    """Build the default stack: the store at ``url`` (default: the SQLite file in
    ``$MEMORYBANK_HOME`` or the platform data dir) and the configured embedder (default: the
    bundled all-MiniLM-L6-v2). Other keyword arguments are :class:`Settings` fields. The bank
    limits the writes each user starts through the tools, MCP and the server to
    ``ai_write_rate_per_minute`` (60; ``bank.writes.count``); its own methods are not
    limited.

    >>> import memorybank
    >>> with memorybank.open("sqlite:///memories.db") as bank:
    ...     bank.count("alice")
    0
    """
    config = Settings(url=url, **settings) if url is not None else Settings(**settings)
    embedder = build_embedder(config)
    try:
        store = build_store(config, embedder.dimension)
    except BaseException:
        embedder.close()
        raise
    try:
        return MemoryBank(
            store,
            embedder,
            build_llm(config),
            policy=config.policy,
            retrieval=config.retrieval,
            query_cache_size=config.query_cache_size,
            write_rate_per_minute=config.ai_write_rate_per_minute,
        )
    except BaseException:
        store.close()
        embedder.close()
        raise


__all__ = [
    "AsyncClient",
    "Caller",
    "Category",
    "Channel",
    "Client",
    "ConfigurationError",
    "Domain",
    "EmbeddingModelMismatch",
    "Event",
    "EventKind",
    "HistoryEvent",
    "Memory",
    "MemoryBank",
    "MemoryBankError",
    "MemoryFilter",
    "NotFound",
    "PermissionDenied",
    "ProviderError",
    "Ring",
    "RoleRequired",
    "SaveInput",
    "SaveResult",
    "Scope",
    "ScopeSet",
    "SearchHit",
    "Settings",
    "Source",
    "StoreError",
    "ValidationError",
    "__version__",
    "open",
]

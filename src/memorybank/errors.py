"""The one exception tree of memorybank.

Every error memorybank raises on purpose is a :class:`MemoryBankError`. Adapters (REST, MCP,
tools, CLI) map this tree to their own error shapes in one place each; lower-level errors
(apsw, httpx, onnxruntime) are translated inside the module that calls them. The classes are
defined here, except ``Unauthorized``, ``StateConflict``, ``TooLarge`` and ``MalformedReply``,
which belong to the one adapter that raises them (:mod:`memorybank.server`,
:mod:`memorybank.providers.llm`).

    MemoryBankError
    ├── ValidationError        bad input; says which field and what to fix
    ├── NotFound               no such memory (or not yours: we never say which)
    ├── PermissionDenied       the caller may not do this
    │   └── RoleRequired       their role in the project does not allow it (seed 002)
    ├── ConfigurationError     settings or database do not fit together
    │   └── EmbeddingModelMismatch
    ├── StoreError             the database failed (disk full, read-only, corrupt)
    ├── ProviderError          an embedding or LLM provider failed
    │   └── MalformedReply     the chat model answered, but not with a JSON object (llm)
    ├── RateLimited            too many writes by one user in the last minute (retry_after)
    ├── Unauthorized           no valid API key on a request that needs one (server, 401)
    ├── StateConflict          the request clashes with what is stored (server, 409)
    └── TooLarge               a request body over the configured limit (server, 413)

``tests/test_architecture.py`` checks that this tree is complete and matches the classes.

>>> issubclass(EmbeddingModelMismatch, ConfigurationError)
True
>>> ValidationError("content too short", field="content").field
'content'
"""

from __future__ import annotations


class MemoryBankError(Exception):
    """Base class of every error memorybank raises on purpose."""


class ValidationError(MemoryBankError, ValueError):
    """Input that cannot be accepted. ``field`` names the offending input."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFound(MemoryBankError, LookupError):
    """No memory with that id in the caller's scopes."""


class PermissionDenied(MemoryBankError):
    """The caller is not allowed to do this."""


class RoleRequired(PermissionDenied):
    """The caller's role in the project does not allow this: seed 002's table
    (:mod:`memorybank.rules.permissions`) keeps adding by hand and changing project memory to its
    admins and owners."""


class ConfigurationError(MemoryBankError):
    """Settings, files or the database do not fit together."""


class EmbeddingModelMismatch(ConfigurationError):
    """The database was built with another embedding model than the one configured."""

    def __init__(self, stored: str, configured: str) -> None:
        super().__init__(
            f"this database was embedded with {stored!r} but the configured embedder is "
            f"{configured!r}; run `memorybank reindex` to re-embed every memory with the "
            f"configured model, or configure {stored!r} again"
        )
        self.stored = stored
        self.configured = configured


class StoreError(MemoryBankError):
    """The storage backend failed (disk full, read-only file, lost connection)."""


class ProviderError(MemoryBankError):
    """An embedding or chat provider failed or answered something unusable."""


class RateLimited(MemoryBankError):
    """A user is over one of their limits: more writes in the last minute than the bank's write
    limit allows (:class:`memorybank.rules.limits.RateLimiter`), more webhook test sends a
    minute, or more event streams open at once (:class:`memorybank.rules.limits.OpenLimit`);
    ``retry_after`` is the seconds until one more may fit. Every adapter answers it with that
    hint: REST 429 with ``Retry-After``, tools and MCP ``{"success": false, "error": "… try
    again in N s"}``."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


__all__ = [
    "ConfigurationError",
    "EmbeddingModelMismatch",
    "MemoryBankError",
    "NotFound",
    "PermissionDenied",
    "ProviderError",
    "RateLimited",
    "RoleRequired",
    "StoreError",
    "ValidationError",
]

"""One settings object, read from arguments and ``MEMORYBANK_*`` environment variables.

Defaults are built at the edge (CLI, server, MCP) from :class:`Settings`; the library core
(:class:`memorybank.MemoryBank`) receives finished parts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

import platformdirs
from pydantic import Field, SecretStr, field_validator
from pydantic import ValidationError as PydanticValidationError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from memorybank.errors import ConfigurationError
from memorybank.rules.policy import PolicySettings
from memorybank.rules.ranking import RetrievalSettings


def default_home() -> Path:
    """``$MEMORYBANK_HOME``, or the platform's data directory for memorybank."""
    home = os.environ.get("MEMORYBANK_HOME")
    return Path(home) if home else Path(platformdirs.user_data_dir("memorybank"))


def _problem(error: Any) -> str:
    """One bad value as its variable and what is wrong; values of keys are never shown."""
    name = "__".join(str(part) for part in error["loc"]).upper()
    shown = "" if "KEY" in name else f" (got {error['input']!r})"
    return f"MEMORYBANK_{name}: {error['msg']}{shown}"


class Settings(BaseSettings):
    """Everything configurable, with its environment variable (``MEMORYBANK_`` + name).

    >>> Settings(url="sqlite:////tmp/mb.db").sqlite_path()
    PosixPath('/tmp/mb.db')
    >>> Settings(url="sqlite:///mb.db").sqlite_path()
    PosixPath('mb.db')
    """

    model_config = SettingsConfigDict(env_prefix="MEMORYBANK_", extra="forbid")

    def __init__(self, **values: Any) -> None:
        """Read the environment (and ``values``); a bad value raises a
        :class:`~memorybank.errors.ConfigurationError` naming its variable."""
        try:
            super().__init__(**values)
        except PydanticValidationError as exc:
            problems = "; ".join(_problem(error) for error in exc.errors())
            raise ConfigurationError(f"bad setting: {problems}") from None

    url: str | None = None
    home: Path = Field(default_factory=default_home)

    embedder: Literal["local", "openai"] = "local"
    model_dir: Path | None = None
    model_id: str | None = None
    embedding_base_url: str | None = None
    embedding_model: str | None = None
    embedding_api_key: SecretStr | None = None

    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None

    policy: PolicySettings = Field(default_factory=PolicySettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    sqlite_synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = "FULL"
    vector_cache_mb: int = Field(1024, ge=16)
    # PostgreSQL connections one process may hold (each replica or worker has its own pool).
    pg_pool_size: int = Field(10, ge=1, le=1000)
    # HNSW candidate list of a vector search (pgvector's hnsw.ef_search): recall against speed.
    pg_ef_search: int = Field(100, ge=1, le=1000)
    # Vectors of recent search queries kept per process (0: off), and the embedder's CPU
    # threads per forward pass (default: every core; one per worker process under load).
    query_cache_size: int = Field(2048, ge=0)
    embedder_threads: int | None = Field(None, ge=1)
    # Saves and edits one server process computes at once (default: 3 with the bundled
    # embedder and SQLite, 40 with a remote embedder or PostgreSQL); more wait their turn.
    # Searches, prompt blocks and plain reads run on the event loop itself when both the
    # embedder and the store are in-process (``inline_searches`` unset or true), else in the
    # same pool.
    compute_threads: int | None = Field(None, ge=1, le=1000)
    inline_searches: bool | None = None
    # How many of one user's calls hold compute threads at once (the rest of theirs wait in
    # their own line, issue 34), and how many reads (searches, memory blocks, consolidation
    # previews by the facts they examine) a user may start per minute.
    compute_per_user: int = Field(1, ge=1, le=1000)
    read_rate_per_minute: int = Field(600, ge=1)

    # The server: the key encrypting users' provider keys (else the key file, default
    # $MEMORYBANK_HOME/master.key, created with mode 0600), the largest request body, and how
    # many AI writes (tool calls that write, memory POSTs) a user may make per minute.
    master_key: SecretStr | None = None
    key_file: Path | None = None
    max_request_bytes: int = Field(1024 * 1024, ge=1024)
    ai_write_rate_per_minute: int = Field(60, ge=1)
    # Which requests the server accepts (memorybank.server.guard): host names it answers to
    # besides localhost, 127.0.0.1 and [::1], any port, comma-separated (checked always in
    # local mode, in auth mode once set; browser writes must come from these hosts too); and
    # the bearer token /metrics requires when set (unset: it answers loopback clients only).
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    metrics_token: SecretStr | None = None
    # Users' own provider URLs (bring-your-own keys; memorybank.providers.netguard): public
    # addresses
    # only, plus loopback in local mode (a local Ollama); true also allows private, loopback,
    # link-local and 100.64/10 addresses (never cloud metadata). The operator's own
    # *_BASE_URL providers above are not limited.
    provider_allow_private: bool = False
    # The server merges duplicates in every scope this often (seed 000's weekly tidy-up:
    # 168); 0, the default, leaves it to people ("Tidy up" in the UI, `memorybank
    # consolidate`). See memorybank.core.consolidate.
    consolidate_every_hours: float = Field(0, ge=0, le=24 * 366)
    # Webhooks (memorybank.services.webhook_worker): each server process runs a worker that sends
    # them (off: this process sends none; another replica may). Their URLs follow the rule
    # of users' provider URLs above. A failed attempt is retried after base × 2^(n − 1)
    # seconds, up to max attempts in all.
    webhooks_enabled: bool = True
    webhook_poll_seconds: float = Field(1.0, gt=0, le=60)
    webhook_retry_base_seconds: float = Field(5.0, gt=0)
    webhook_max_attempts: int = Field(8, ge=1, le=50)
    # Deliveries one process sends at once (one at a time per webhook, at most half of them
    # for the webhooks of one project or org), and how long a receiver may take to accept the
    # connection and may then stay silent before the attempt fails (docs/security.md).
    webhook_concurrency: int = Field(8, ge=1, le=256)
    webhook_connect_timeout_seconds: float = Field(3.0, gt=0, le=60)
    webhook_read_timeout_seconds: float = Field(5.0, gt=0, le=120)
    # Webhooks one project (or one org) may have, and test sends per webhook per minute.
    webhook_max_per_project: int = Field(10, ge=1, le=1000)
    webhook_test_sends_per_minute: int = Field(5, ge=1, le=1000)
    # Event streams (GET /api/events) one user may hold open at once in one server process.
    event_streams_per_user: int = Field(5, ge=1, le=1000)

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return [host.strip() for host in value.split(",") if host.strip()]
        return value

    def database_url(self) -> str:
        """The configured URL, or the SQLite file in :attr:`home`."""
        return self.url or f"sqlite:///{self.home / 'memorybank.db'}"

    def sqlite_path(self) -> Path:
        """The file of a ``sqlite:///`` URL (``sqlite:///relative`` and
        ``sqlite:////absolute`` both work, as in SQLAlchemy)."""
        url = self.database_url()
        if not url.startswith("sqlite:///"):
            raise ValueError(f"not a sqlite URL: {url!r}")
        path, _, query = url.removeprefix("sqlite:///").partition("?")
        if query:
            # Not part of the file name (SQLAlchemy's ?mode=ro …): refused, rather than a
            # database quietly made at "memories.db?mode=ro".
            raise ConfigurationError(
                f"sqlite URLs take no query parameters (got '?{query}'): give the file alone, "
                f"sqlite:///{path}; memorybank opens it for reading and writing"
            )
        return Path(path)

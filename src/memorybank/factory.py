"""Builds the configured store and embedder from :class:`~memorybank.settings.Settings`.

An explicit mapping from a URL scheme or a setting to a constructor, rather than string class
paths: every backend is listed here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybank.errors import ConfigurationError
from memorybank.providers.embedders.base import Embedder
from memorybank.settings import Settings
from memorybank.stores.base import Store

if TYPE_CHECKING:
    from pydantic import SecretStr

    from memorybank.providers.llm.client import ChatClient


def build_embedder(settings: Settings) -> Embedder:
    """The bundled local embedder, or an OpenAI-compatible one."""
    if settings.embedder == "openai":
        from memorybank.providers.embedders.openai import OpenAIEmbedder

        if not settings.embedding_base_url or not settings.embedding_model:
            raise ConfigurationError(
                "embedder=openai needs MEMORYBANK_EMBEDDING_BASE_URL and MEMORYBANK_EMBEDDING_MODEL"
            )
        return OpenAIEmbedder(
            settings.embedding_base_url,
            settings.embedding_model,
            api_key=_revealed(settings.embedding_api_key),
        )
    from memorybank.providers.embedders.local import LocalEmbedder

    return LocalEmbedder(
        model_dir=settings.model_dir,
        model_id=settings.model_id,
        intra_op_num_threads=settings.embedder_threads,
    )


def build_llm(settings: Settings) -> ChatClient | None:
    """The OpenAI-compatible chat client, when ``llm_base_url`` and ``llm_model`` are set."""
    if not settings.llm_base_url and not settings.llm_model:
        return None
    if not settings.llm_base_url or not settings.llm_model:
        raise ConfigurationError(
            "an LLM needs both MEMORYBANK_LLM_BASE_URL and MEMORYBANK_LLM_MODEL"
        )
    from memorybank.providers.llm.client import ChatClient

    return ChatClient(
        settings.llm_base_url, settings.llm_model, api_key=_revealed(settings.llm_api_key)
    )


def _revealed(key: SecretStr | None) -> str | None:
    """An API key setting's value, to hand to a provider client."""
    return None if key is None else key.get_secret_value()


def build_store(settings: Settings, dimension: int) -> Store:
    """The store the database URL names."""
    url = settings.database_url()
    if url.startswith("sqlite:///"):
        from memorybank.stores.sqlite import SQLiteStore

        return SQLiteStore(
            settings.sqlite_path(),
            dimension=dimension,
            synchronous=settings.sqlite_synchronous,
            cache_bytes=settings.vector_cache_mb * 1024 * 1024,
        )
    if url.startswith(("postgresql://", "postgres://")):
        from memorybank.stores.postgres import PostgresStore

        return PostgresStore(
            url,
            dimension=dimension,
            max_connections=settings.pg_pool_size,
            ef_search=settings.pg_ef_search,
        )
    raise ConfigurationError(
        f"unsupported database URL {url!r}: use sqlite:///path/to/file.db "
        "or postgresql://user:password@host/dbname"
    )

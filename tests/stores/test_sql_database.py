"""Services that keep tables beside the memories (accounts, usage counters and the success
metrics, webhooks) take the store's declared SQL database (``Store.sql``), and a store that
declares none gets one clear ConfigurationError from each, naming what to set, while the
memory itself keeps working over it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from memorybank import MemoryBank
from memorybank.errors import ConfigurationError
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.providers.netguard import AddressPolicy
from memorybank.services.accounts import Accounts
from memorybank.services.insights import success_metrics
from memorybank.services.webhook_worker import WebhookWorker
from memorybank.services.webhooks import Webhooks
from memorybank.stores.accounts_sql import sql_accounts
from memorybank.stores.base import require_sql
from memorybank.stores.sqlite import SQLiteStore
from memorybank.stores.webhooks_sql import sql_webhooks


@dataclass
class NoMasterKey:
    master_key: SecretStr | None = None
    key_file: Path | None = None


class MemoriesOnly:
    """A store that keeps memories (in a SQLite file it does not share) and declares no SQL
    database, as a store over a vector database alone would."""

    sql = None

    def __init__(self, path: Path, dimension: int) -> None:
        self._memories = SQLiteStore(path, dimension=dimension)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._memories, name)


@pytest.fixture
def bare_bank(tmp_path: Path, embedder: LocalEmbedder) -> Iterator[MemoryBank]:
    with MemoryBank(MemoriesOnly(tmp_path / "m.db", embedder.dimension), embedder) as bank:
        yield bank


FIX = "set MEMORYBANK_URL to sqlite:///… or postgresql://…"


def test_a_sql_store_offers_its_own_database(bank: MemoryBank) -> None:
    assert bank.store.sql is bank.store
    assert require_sql(bank.store, "accounts") is bank.store


def test_accounts_refuse_a_store_without_sql(bare_bank: MemoryBank) -> None:
    with pytest.raises(ConfigurationError) as caught:
        Accounts.open(bare_bank, NoMasterKey())
    assert str(caught.value) == (
        "accounts keep their tables in the store's SQL database, and MemoriesOnly has none: " + FIX
    )
    with pytest.raises(ConfigurationError, match="^accounts keep their tables"):
        sql_accounts(bare_bank.store)


def test_webhooks_refuse_a_store_without_sql(bare_bank: MemoryBank) -> None:
    for make in (
        lambda: Webhooks(bare_bank.store, AddressPolicy()),
        lambda: WebhookWorker(bare_bank.store, AddressPolicy()),
        lambda: sql_webhooks(bare_bank.store),
    ):
        with pytest.raises(ConfigurationError) as caught:
            make()
        assert str(caught.value).startswith("webhooks keep their tables in the store's SQL")
        assert str(caught.value).endswith("MemoriesOnly has none: " + FIX)


def test_usage_stays_in_process_and_metrics_refuse_a_store_without_sql(
    bare_bank: MemoryBank,
) -> None:
    bare_bank.save("u1", "User prefers green tea", category="preference")
    bare_bank.search("u1", "what tea?")
    assert bare_bank.usage.pending()  # counted, with nowhere to write them
    bare_bank.usage.flush()
    assert bare_bank.usage.pending()  # kept: no sink
    with pytest.raises(ConfigurationError) as caught:
        success_metrics(bare_bank)
    assert str(caught.value) == (
        "success metrics keep their tables in the store's SQL database, and MemoriesOnly has "
        "none: " + FIX
    )

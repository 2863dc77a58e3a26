"""Shared setup of the server tests: an app over a real bank with accounts."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import FastAPI

from memorybank import MemoryBank
from memorybank.accounts import Accounts
from memorybank.server.app import create_app
from memorybank.settings import Settings

MASTER = "test-master-key-not-a-secret"


@dataclass
class World:
    """An app with users owner/admin/member/outsider, project apollo, and their keys."""

    app: FastAPI
    accounts: Accounts
    keys: dict[str, str] = field(default_factory=dict)

    def auth(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[user]}"}


def bank_url(bank: MemoryBank) -> str:
    """The database URL of a bank on SQLite or PostgreSQL."""
    from memorybank.stores.postgres import PostgresStore

    if isinstance(bank.store, PostgresStore):
        return bank.store.url
    return f"sqlite:///{bank.store.path}"  # type: ignore[attr-defined]


def settings_for(bank: MemoryBank, **more: object) -> Settings:
    return Settings(url=bank_url(bank), master_key=MASTER, **more)  # type: ignore[arg-type]


def stored_bytes(bank: MemoryBank) -> bytes:
    """Everything the database holds on disk that a leak could hide in: the SQLite file and
    its WAL, or every row of every PostgreSQL table as text."""
    from pathlib import Path

    from memorybank.stores.postgres import PostgresStore

    if isinstance(bank.store, PostgresStore):
        import psycopg

        with psycopg.connect(bank.store.url) as conn:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                ).fetchall()
            ]
            dump = [
                str(conn.execute(f"SELECT string_agg(t::text, '|') FROM {t} AS t").fetchone())
                for t in tables
            ]
        return "\n".join(dump).encode()
    path = Path(bank.store.path)  # type: ignore[attr-defined]
    wal = Path(f"{path}-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def make_world(bank: MemoryBank, *, users: bool = True, **more: object) -> World:
    settings = settings_for(bank, **more)
    accounts = Accounts.open(bank, settings)
    world = World(app=create_app(bank, accounts, settings), accounts=accounts)
    if users:
        for user in ("owner", "admin", "member", "outsider"):
            accounts.create_user(user, name=user.title())
            world.keys[user] = accounts.create_key(user)[1]
        accounts.create_project("apollo", owner="owner", name="Apollo")
        accounts.add_member("apollo", "admin", "admin")
        accounts.add_member("apollo", "member", "member")
    return world

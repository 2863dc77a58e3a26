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


def settings_for(bank: MemoryBank, **more: object) -> Settings:
    return Settings(url=f"sqlite:///{bank.store.path}", master_key=MASTER, **more)  # type: ignore[attr-defined,arg-type]


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

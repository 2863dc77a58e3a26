"""A real server for the client tests: uvicorn on a free port in a thread, over a bank the
test owns, and :class:`ClientPerUser`, which gives the library's tests their users over HTTP."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from memorybank import Client, MemoryBank
from memorybank.server.app import create_app
from memorybank.services import transfer
from memorybank.services.accounts import Accounts
from server_helpers import free_port, settings_for


@contextmanager
def served(bank: MemoryBank, **settings: object) -> Iterator[tuple[str, Accounts]]:
    """``bank`` served over HTTP on 127.0.0.1 (write limit lifted): its URL and accounts."""
    config = settings_for(bank, ai_write_rate_per_minute=1_000_000, **settings)
    accounts = Accounts.open(bank, config)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(bank, accounts, config), host="127.0.0.1", port=port, log_level="warning"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", accounts
    finally:
        server.should_exit = True
        thread.join(10)


#: Where each method of the bank takes the user: second for those addressed by a memory id.
_USER_SECOND = frozenset({"get", "update", "delete", "history", "restore"})


class ClientPerUser:
    """The bank's interface for any user, over HTTP: each user calls through a
    :class:`~memorybank.Client` with their own API key, made on first use, and is made a
    member (admin) of each project they name, as a host application would arrange."""

    def __init__(self, url: str, accounts: Accounts) -> None:
        self.url = url
        self.accounts = accounts
        self.clients: dict[str, Client] = {}

    def client(self, user_id: str) -> Client:
        if user_id not in self.clients:
            self.accounts.create_user(user_id)
            key = self.accounts.create_key(user_id)[1]
            self.clients[user_id] = Client(self.url, key)
        return self.clients[user_id]

    def _join(self, user_id: str, project_id: str | None) -> None:
        if project_id is None:
            return
        if self.accounts.project(project_id) is None:
            self.accounts.create_project(project_id, owner=user_id)
        elif self.accounts.role(project_id, user_id) is None:
            self.accounts.add_member(project_id, user_id, "admin")

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            user_id = args[1] if name in _USER_SECOND else args[0]
            client = self.client(user_id)
            self._join(
                user_id,
                kwargs.get("project_id")
                or (args[1] if name == "clear" and len(args) > 1 else None),
            )
            return getattr(client, name)(*args, **kwargs)

        return call

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


def export_from(target: MemoryBank | ClientPerUser, user_id: str, *args: Any, **kw: Any) -> str:
    """An export through the library (:func:`memorybank.services.transfer.export`) or through
    the client's convenience method of the same name, whichever ``target`` is."""
    if isinstance(target, ClientPerUser):
        return str(target.export(user_id, *args, **kw))
    return transfer.export(target, user_id, *args, **kw)


def import_into(target: MemoryBank | ClientPerUser, user_id: str, *args: Any, **kw: Any) -> Any:
    """An import through the library (:func:`memorybank.services.transfer.import_`) or through
    the client's convenience method of the same name, whichever ``target`` is."""
    if isinstance(target, ClientPerUser):
        return target.import_(user_id, *args, **kw)
    return transfer.import_(target, user_id, *args, **kw)

"""Servers for the client tests: :func:`served`, uvicorn on a free port in a thread over a
bank the test owns; :func:`scripted`, a real HTTP server that answers what the test scripts
(for retries and errors); and :class:`ClientPerUser`, which gives the library's tests their
users over HTTP through either client."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memorybank import AsyncClient, Client, MemoryBank
from memorybank.server.app import create_app
from memorybank.services import transfer
from memorybank.services.accounts import Accounts
from server_helpers import serving_at, settings_for


@contextmanager
def served(bank: MemoryBank, **settings: object) -> Iterator[tuple[str, Accounts]]:
    """``bank`` served over HTTP on 127.0.0.1 (write limit lifted): its URL and accounts."""
    settings = {"read_rate_per_minute": 1_000_000, **settings}
    config = settings_for(bank, ai_write_rate_per_minute=1_000_000, **settings)
    accounts = Accounts.open(bank, config)
    with serving_at(create_app(bank, accounts, config)) as base:
        yield base, accounts


@contextmanager
def scripted(answers: list[tuple[int, dict[str, str], dict[str, Any] | str]]) -> Iterator[Any]:
    """A real HTTP server answering each request with the next (status, headers, body: JSON,
    or a string sent as HTML); it records when each request came."""
    arrivals: list[tuple[float, str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            arrivals.append((time.monotonic(), self.command, self.path))
            status, headers, body = answers.pop(0)
            html = isinstance(body, str)
            data = body.encode() if html else json.dumps(body).encode()
            kind = "text/html" if html else "application/json"
            self.send_response(status)
            for name, value in {**headers, "Content-Type": kind}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_DELETE = do_PATCH = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", arrivals
    finally:
        server.shutdown()
        server.server_close()


#: ``GET /api/me``'s answer for a key of alice's, the first answer a scripted server gives.
ME = (200, {}, {"user_id": "alice", "name": "Alice", "mode": "auth", "projects": []})


#: Where each method of the bank takes the user: second for those addressed by a memory id
#: (or several), third for ``supersede`` (the memory, the newer one, then the user).
_USER_SECOND = frozenset({"get", "update", "delete", "delete_many", "history", "restore"})
_USER_THIRD = frozenset({"supersede"})


class ClientPerUser:
    """The bank's interface for any user, over HTTP: each user calls through a
    :class:`~memorybank.Client` with their own API key, made on first use, and is made a
    member (admin) of each project they name, as a host application would arrange.

    With ``asynchronous``, each user's client is an :class:`~memorybank.AsyncClient` instead,
    and each call is awaited on one event loop of this object's own: the library's contract
    tests, written as blocking calls, run unchanged through the asyncio client."""

    def __init__(self, url: str, accounts: Accounts, *, asynchronous: bool = False) -> None:
        self.url = url
        self.accounts = accounts
        self.clients: dict[str, Client | AsyncClient] = {}
        self.loop = asyncio.Runner() if asynchronous else None

    def client(self, user_id: str) -> Client | AsyncClient:
        if user_id not in self.clients:
            self.accounts.create_user(user_id)
            key = self.accounts.create_key(user_id)[1]
            self.clients[user_id] = (
                Client(self.url, key) if self.loop is None else (AsyncClient(self.url, key))
            )
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
            user_id = args[2 if name in _USER_THIRD else 1 if name in _USER_SECOND else 0]
            client = self.client(user_id)
            self._join(
                user_id,
                kwargs.get("project_id")
                or (args[1] if name == "clear" and len(args) > 1 else None),
            )
            answer = getattr(client, name)(*args, **kwargs)
            return answer if self.loop is None else self.loop.run(answer)

        return call

    def close(self) -> None:
        for client in self.clients.values():
            if isinstance(client, AsyncClient):
                assert self.loop is not None
                self.loop.run(client.aclose())
            else:
                client.close()
        if self.loop is not None:
            self.loop.close()


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

"""The Python clients of a server started with ``memorybank serve``: :class:`Client`
(blocking) and :class:`AsyncClient` (``await``), each :class:`~memorybank.MemoryBank` over HTTP.

Every memory operation of the bank, with the bank's arguments, return types and exceptions,
so code written against one runs against the other: ``save``, ``save_many``, ``search``,
``get``, ``list``, ``count``, ``history``, ``update``, ``supersede``, ``restore``, ``delete``,
``delete_many``, ``clear``; ``keep_both`` and ``open_pairs``, what
:mod:`memorybank.services.pairs` does over a bank; ``events``, what
:func:`memorybank.core.events.read_events` reads of a bank; plus ``export``, ``import_``,
``system_prompt``, ``auto_recall``, ``tool_definitions``, ``call_tool`` and ``me``. (The
bank's ``judge`` and ``close`` are its own; forget plans and org membership are the
server's routes and services.)
What differs is who decides: with accounts, the server acts for
the user its API key belongs to, with that user's role in each project, so a ``user_id`` other
than the key's is a :class:`~memorybank.PermissionDenied`; in local mode (no accounts, no key)
it acts for the ``user_id`` each call names, as the bank does. The bank's
``role``/``created_by``/``actor`` arguments are not taken: the server decides them.

Connection failures and answers 429 and 503 are tried again (``retries`` times, waiting what
``Retry-After`` asks, up to ``max_wait`` seconds); a POST is only retried when the request
never reached the server, so nothing is saved twice.

    >>> with Client("http://127.0.0.1:8000", api_key="mb_…") as memory:  # doctest: +SKIP
    ...     memory.save("alice", "I prefer dark mode", "preference").content
    ...     [hit.memory.content for hit in memory.search("alice", "UI theme")]
    'User prefers dark mode'
    ['User prefers dark mode']

Each method is written once, in :mod:`~memorybank.client.calls`, as the requests it makes and
what it makes of the answers; :mod:`~memorybank.client.sync` and
:mod:`~memorybank.client.asynchronous` only send them. A new endpoint becomes a method of both
clients in a few lines there, plus one line in each client; :meth:`Client.request` reaches any
route meanwhile.
"""

from __future__ import annotations

from memorybank.client.asynchronous import AsyncClient
from memorybank.client.base import RETRY_STATUSES, USER_HEADER
from memorybank.client.sync import Client

__all__ = ["RETRY_STATUSES", "USER_HEADER", "AsyncClient", "Client"]

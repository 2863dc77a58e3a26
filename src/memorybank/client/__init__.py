"""The Python clients of a server started with ``memorybank serve``: :class:`Client`
(blocking) and :class:`AsyncClient` (``await``), each :class:`~memorybank.MemoryBank` over HTTP.

The bank's memory operations that have a route, with the bank's arguments, return types and
exceptions, so code written against one runs against the other: ``save``, ``save_many``,
``search``, ``recent``, ``get``, ``list``, ``count``, ``history``, ``events``, ``update``,
``restore``, ``keep_both``, ``open_pairs``, ``delete``, ``clear``, plus ``export``,
``import_``, ``system_prompt``, ``auto_recall``, ``tool_definitions``, ``call_tool`` and
``me``. The bank's ``supersede`` and
``delete_many`` have no route (over HTTP a save with ``on_conflict="supersede"`` or the
consolidation routes supersede, and ``delete`` removes one memory at a time), nor have its
forget plans and org membership, which the server's own routes and services handle.
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

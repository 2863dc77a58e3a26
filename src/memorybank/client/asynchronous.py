""":class:`AsyncClient`: the clients' methods (:class:`~memorybank.client.calls.Calls`) run
with ``await`` on httpx's ``AsyncClient``, for asyncio applications (FastAPI, agent
frameworks): the same methods, arguments, results and errors as
:class:`~memorybank.client.sync.Client`, each a coroutine.

    >>> async def main() -> None:  # doctest: +SKIP
    ...     async with AsyncClient("http://127.0.0.1:8000", api_key="mb_…") as memory:
    ...         await memory.save("alice", "I prefer dark mode", "preference")
    ...         hits = await memory.search("alice", "UI theme")
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

import httpx

from memorybank.client.base import ClientBase, named_after
from memorybank.client.calls import Call, Calls, Params, Plan
from memorybank.errors import MemoryBankError

P = ParamSpec("P")
T = TypeVar("T")


def _awaiting(
    plan: Callable[Concatenate[Calls, P], Plan[T]],
) -> Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]]:
    """The :class:`AsyncClient` coroutine method that runs ``plan``."""

    async def method(self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(plan(self._calls, *args, **kwargs))

    named_after(method, plan, "AsyncClient")
    return method


class AsyncClient(ClientBase):
    """:class:`~memorybank.Client` with ``await`` (see the module)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        max_wait: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, retries, max_wait)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    async def aclose(self) -> None:
        """Close the connections (``async with`` does it on the way out)."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- transport ------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        json_body: Any = None,
        content: bytes | None = None,
        user_id: str | None = None,
    ) -> httpx.Response:
        """Send one request (as ``user_id``, in local mode), trying again on a refused
        connection and on 429/503; the error answer raised as the
        :class:`~memorybank.MemoryBankError` it stands for."""
        return await self._send(Call(method, path, params, json_body, content, user_id))

    async def _send(self, call: Call) -> httpx.Response:
        for attempt in range(self.retries + 1):
            try:
                response = await self._http.request(**self._arguments(call))
            except httpx.TransportError as exc:
                await asyncio.sleep(self._after_failure(exc, attempt))
                continue
            wait = self._after_answer(response, attempt)
            if wait is None:
                return response
            await asyncio.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _run(self, plan: Plan[T]) -> T:
        """Run a method's plan: send each call it makes, hand it the answer."""
        try:
            call = next(plan)
            while True:
                call = plan.send(await self._send(call))
        except StopIteration as done:
            return cast(T, done.value)
        finally:
            plan.close()

    # -- who is calling -------------------------------------------------------------------

    me = _awaiting(Calls.me)

    @property
    def user_id(self) -> str:
        """The user the API key belongs to (``local`` in local mode), known after the first
        call (``await client.me()`` asks)."""
        if self._calls.user is None:
            raise MemoryBankError("the user is known after the first call: await client.me()")
        return self._calls.user

    # -- the bank's methods and the services' ---------------------------------------------

    save = _awaiting(Calls.save)
    save_many = _awaiting(Calls.save_many)
    search = _awaiting(Calls.search)
    get = _awaiting(Calls.get)
    list = _awaiting(Calls.list)
    count = _awaiting(Calls.count)
    history = _awaiting(Calls.history)
    events = _awaiting(Calls.events)
    update = _awaiting(Calls.update)
    restore = _awaiting(Calls.restore)
    supersede = _awaiting(Calls.supersede)
    keep_both = _awaiting(Calls.keep_both)
    open_pairs = _awaiting(Calls.open_pairs)
    delete = _awaiting(Calls.delete)
    delete_many = _awaiting(Calls.delete_many)
    clear = _awaiting(Calls.clear)
    export = _awaiting(Calls.export)
    import_ = _awaiting(Calls.import_)
    system_prompt = _awaiting(Calls.system_prompt)
    auto_recall = _awaiting(Calls.auto_recall)
    tool_definitions = _awaiting(Calls.tool_definitions)
    call_tool = _awaiting(Calls.call_tool)


__all__ = ["AsyncClient"]

""":class:`Client`: the clients' methods (:class:`~memorybank.client.calls.Calls`) run with
blocking httpx."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

import httpx

from memorybank.client.base import ClientBase, named_after
from memorybank.client.calls import Call, Calls, Params, Plan

P = ParamSpec("P")
T = TypeVar("T")


def _blocking(
    plan: Callable[Concatenate[Calls, P], Plan[T]],
) -> Callable[Concatenate[Client, P], T]:
    """The :class:`Client` method that runs ``plan``, its requests sent one after another."""

    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(plan(self._calls, *args, **kwargs))

    named_after(method, plan, "Client")
    return method


class Client(ClientBase):
    """:class:`~memorybank.MemoryBank`'s interface over HTTP (see :mod:`memorybank.client`)."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        api_key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        max_wait: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, retries, max_wait)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
        )

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport ------------------------------------------------------------------------

    def request(
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
        return self._send(Call(method, path, params, json_body, content, user_id))

    def _send(self, call: Call) -> httpx.Response:
        for attempt in range(self.retries + 1):
            try:
                response = self._http.request(**self._arguments(call))
            except httpx.TransportError as exc:
                time.sleep(self._after_failure(exc, attempt))
                continue
            wait = self._after_answer(response, attempt)
            if wait is None:
                return response
            time.sleep(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _run(self, plan: Plan[T]) -> T:
        """Run a method's plan: send each call it makes, hand it the answer."""
        try:
            call = next(plan)
            while True:
                call = plan.send(self._send(call))
        except StopIteration as done:
            return cast(T, done.value)
        finally:
            plan.close()

    # -- who is calling -------------------------------------------------------------------

    me = _blocking(Calls.me)

    @property
    def user_id(self) -> str:
        """The user the API key belongs to (``local`` in local mode)."""
        if self._calls.user is None:
            self.me()
        assert self._calls.user is not None
        return self._calls.user

    # -- the bank's methods and the services' ---------------------------------------------

    save = _blocking(Calls.save)
    save_many = _blocking(Calls.save_many)
    search = _blocking(Calls.search)
    get = _blocking(Calls.get)
    list = _blocking(Calls.list)
    count = _blocking(Calls.count)
    history = _blocking(Calls.history)
    events = _blocking(Calls.events)
    update = _blocking(Calls.update)
    restore = _blocking(Calls.restore)
    supersede = _blocking(Calls.supersede)
    keep_both = _blocking(Calls.keep_both)
    open_pairs = _blocking(Calls.open_pairs)
    delete = _blocking(Calls.delete)
    delete_many = _blocking(Calls.delete_many)
    clear = _blocking(Calls.clear)
    export = _blocking(Calls.export)
    import_ = _blocking(Calls.import_)
    system_prompt = _blocking(Calls.system_prompt)
    auto_recall = _blocking(Calls.auto_recall)
    tool_definitions = _blocking(Calls.tool_definitions)
    call_tool = _blocking(Calls.call_tool)


__all__ = ["Client"]

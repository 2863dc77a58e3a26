"""Issue 44, finding F9, against real HTTP servers on 127.0.0.1 (``client_helpers.scripted``):
the Python clients took a redirect for an answer. ``delete`` and ``keep_both`` returned
normally on a 307 to another origin (nothing was deleted), and a call that reads JSON raised
a bare ``JSONDecodeError`` on a body that was not JSON (a proxy's page). Now any 3xx, and any
answer that is not the JSON a call reads, is a :class:`~memorybank.MemoryBankError`
(:class:`~memorybank.ConfigurationError`: the base URL is not the server's own address), in
the blocking and the awaited client alike. The TypeScript client already raised.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from client_helpers import ME, scripted
from memorybank import AsyncClient, Client, ConfigurationError, MemoryBankError

ELSEWHERE = "http://127.0.0.1:9/api/memory/user/mem_1"


def _blocking(url: str, call: Callable[[Client], Any]) -> Any:
    with Client(url, "mb_key", retries=0) as client:
        return call(client)


def _awaited(url: str, call: Callable[[AsyncClient], Any]) -> Any:
    async def run() -> Any:
        async with AsyncClient(url, "mb_key", retries=0) as client:
            return await call(client)

    return asyncio.run(run())


CLIENTS = [pytest.param(_blocking, id="Client"), pytest.param(_awaited, id="AsyncClient")]


@pytest.mark.parametrize("run", CLIENTS)
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_an_error_never_an_answer(run: Any, status: int) -> None:
    moved = (status, {"Location": ELSEWHERE}, {})
    with scripted([ME, moved]) as (url, arrivals):
        with pytest.raises(ConfigurationError, match=f"answered {status} .*no redirects"):
            run(url, lambda c: c.delete("mem_1", "alice"))
    assert [path for _, _, path in arrivals] == [
        "/api/me",
        "/api/memory/user/mem_1",
    ]  # not followed


@pytest.mark.parametrize("run", CLIENTS)
def test_keep_both_on_a_redirect_is_an_error(run: Any) -> None:
    moved = (307, {"Location": ELSEWHERE}, {})
    with scripted([ME, moved]) as (url, _):
        with pytest.raises(ConfigurationError, match="307"):
            run(url, lambda c: c.keep_both("mem_1", "mem_2", "alice"))


@pytest.mark.parametrize("run", CLIENTS)
def test_a_body_that_is_not_json_is_a_memorybank_error(run: Any) -> None:
    page = (200, {}, "<html><body>Sign in to the proxy</body></html>")
    with scripted([ME, page]) as (url, _):
        with pytest.raises(MemoryBankError, match="not JSON") as raised:
            run(url, lambda c: c.count("alice"))
    assert isinstance(raised.value, ConfigurationError)
    assert not isinstance(raised.value, json.JSONDecodeError)
    assert "Sign in to the proxy" in str(raised.value)  # what answered, for the person


@pytest.mark.parametrize("run", CLIENTS)
def test_the_first_answer_not_json_is_an_error_too(run: Any) -> None:
    """``GET /api/me``, the first call a client makes for a user, is read the same way."""
    with scripted([(200, {}, "<html>not the API</html>")]) as (url, _):
        with pytest.raises(ConfigurationError, match="not JSON"):
            run(url, lambda c: c.search("alice", "tea"))

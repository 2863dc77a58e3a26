"""What both clients do around each request, whatever runs it: the headers, when to try
again and how long to wait, and which :class:`~memorybank.MemoryBankError` an error answer
stands for."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from memorybank.client.calls import Call, Calls
from memorybank.errors import (
    ConfigurationError,
    MemoryBankError,
    NotFound,
    PermissionDenied,
    ProviderError,
    RateLimited,
    StoreError,
    ValidationError,
)

#: The header naming the user a request acts for, in local mode
#: (:data:`memorybank.server.principals.USER_HEADER`).
USER_HEADER = "X-Memorybank-User"

#: Statuses worth another try: the server asked to slow down, or could not write just now.
RETRY_STATUSES = frozenset({429, 503})


def error_of(response: httpx.Response) -> MemoryBankError:
    """The :class:`~memorybank.MemoryBankError` of an error answer (``{"error": …}``)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    body = body if isinstance(body, dict) else {}
    message = str(body.get("error") or response.text[:300] or response.reason_phrase)
    status = response.status_code
    if status in (400, 413, 415, 422):
        field = body.get("field")
        return ValidationError(message, field=field if isinstance(field, str) else None)
    if status in (401, 403):
        return PermissionDenied(message)
    if status == 404:
        return NotFound(message)
    if status == 421:
        return ConfigurationError(f"{message} (the server does not answer to this host name)")
    if status == 429:
        wait = retry_after(response)
        return RateLimited(message, retry_after=1 if wait is None else int(wait))
    if status == 502:
        return ProviderError(message)
    if status in (503, 507):
        return StoreError(message)
    return MemoryBankError(f"HTTP {status}: {message}")


def redirect_error(response: httpx.Response) -> ConfigurationError:
    """The error of a redirect (any 3xx): the clients follow none, and never take one for
    an answer (issue 44: ``delete`` returned normally on a 307 to another origin, having
    deleted nothing). A redirect says the base URL is not the server's own address.

    >>> redirect_error(httpx.Response(307, headers={"Location": "https://x.example/api"}))
    ConfigurationError("the server answered 307 Temporary Redirect to 'https://x.example/api' instead of answering: the clients follow no redirects, so nothing was done; use the address of the memorybank server itself as base_url")
    """  # noqa: E501
    where = response.headers.get("Location")
    to = f" to {where[:200]!r}" if where else ""
    return ConfigurationError(
        f"the server answered {response.status_code} {response.reason_phrase}{to} instead of "
        "answering: the clients follow no redirects, so nothing was done; use the address of "
        "the memorybank server itself as base_url"
    )


#: A ``Retry-After`` the clients take: whole seconds in ASCII digits (RFC 9110's delay-seconds).
_DELAY_SECONDS = re.compile(r"[0-9]{1,9}")


def retry_after(response: httpx.Response) -> float | None:
    """The seconds ``response``'s ``Retry-After`` asks to wait, or None when it has none or
    one that is not a count of seconds: a server's (or a proxy's) bad header is ignored,
    never raised (``"²"`` passed ``str.isdigit`` and then failed ``int``; ``"nan"``, ``"-1"``
    and ``"1e999"`` passed ``float``).

    >>> retry_after(httpx.Response(429, headers={"Retry-After": "7"}))
    7.0
    >>> retry_after(httpx.Response(429, headers={"Retry-After": "nan"})) is None
    True
    """
    value = response.headers.get("Retry-After", "").strip()
    return float(value) if _DELAY_SECONDS.fullmatch(value) else None


def named_after(method: Callable[..., Any], plan: Callable[..., Any], owner: str) -> None:
    """Give a client's ``method`` the name, docstring and signature of the ``plan`` it runs,
    returning what the plan returns (``-> SaveResult``, not ``-> Plan[SaveResult]``), so
    ``help(Client.save)`` and ``inspect.signature`` show the method as written."""
    signature = inspect.signature(plan)
    returns = signature.return_annotation
    if isinstance(returns, str) and returns.startswith("Plan[") and returns.endswith("]"):
        returns = returns[len("Plan[") : -1]
    method.__name__ = plan.__name__
    method.__qualname__ = f"{owner}.{plan.__name__}"
    method.__doc__ = plan.__doc__
    setattr(method, "__signature__", signature.replace(return_annotation=returns))  # noqa: B010


class ClientBase:
    """The part of a client that decides, not sends: both clients inherit it and send with
    their own httpx client, blocking or awaited."""

    def __init__(self, base_url: str, retries: int, max_wait: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.max_wait = max_wait
        self._calls = Calls()

    def _arguments(self, call: Call) -> dict[str, Any]:
        """The keyword arguments of httpx's ``request`` for ``call`` (as its user, in
        local mode)."""
        headers = {"Content-Type": "application/json"} if call.content is not None else {}
        if call.user_id is not None and self._calls.local:
            headers[USER_HEADER] = quote(call.user_id, safe="")
        return {
            "method": call.method,
            "url": call.path,
            "params": call.params,
            "json": call.json_body,
            "content": call.content,
            "headers": headers,
        }

    def _after_failure(self, exc: httpx.TransportError, attempt: int) -> float:
        """Seconds to wait before trying again after a request failed on its way; a
        :class:`~memorybank.StoreError` when it is the last try, or when the request may have
        arrived (then it is never sent twice)."""
        if not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            raise StoreError(f"the memorybank server at {self.base_url} failed: {exc}") from None
        if attempt == self.retries:
            raise StoreError(
                f"cannot reach the memorybank server at {self.base_url}: {exc}; "
                "is `memorybank serve` running there?"
            ) from None
        return min(self.max_wait, 0.2 * 2.0**attempt)

    def _after_answer(self, response: httpx.Response, attempt: int) -> float | None:
        """``None`` when ``response`` is the answer; else seconds to wait before trying again
        (429 and 503: ``Retry-After`` when the server says, else backoff). An error answer
        on the last try is raised as the error it stands for, and so is a redirect
        (:func:`redirect_error`)."""
        if response.is_redirect or 300 <= response.status_code < 400:
            raise redirect_error(response)
        if response.status_code in RETRY_STATUSES and attempt < self.retries:
            seconds = retry_after(response)
            if seconds is None:
                seconds = 0.2 * 2.0**attempt
            return min(self.max_wait, seconds)
        if response.is_error:
            raise error_of(response)
        return None


__all__ = [
    "RETRY_STATUSES",
    "USER_HEADER",
    "ClientBase",
    "error_of",
    "named_after",
    "redirect_error",
    "retry_after",
]

"""What the HTTP providers (embeddings, chat) share about failing and trying again.

A provider's answer is never shown in an error: a user's provider URL may point anywhere, and
an error that quoted the answer would make the server read internal services for them
(issue 17). Errors say the status and what to check (:func:`status_advice`) instead.
"""

from __future__ import annotations

import json
import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeVar

import httpx

from memorybank.errors import ConfigurationError, ProviderError
from memorybank.providers.netguard import AddressPolicy, AddressRefused, guarded_client

T = TypeVar("T")

#: Longest wait a ``Retry-After`` header can impose, in seconds.
MAX_RETRY_AFTER = 10.0
_MAX_ERROR_TEXT = 300


class RetryableError(Exception):
    """One attempt failed in a way worth another try; ``message`` says how."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


def endpoint(
    kind: str,
    base_url: str,
    path: str,
    model: str,
    *,
    timeout: float,
    max_retries: int,
    backoff: float,
) -> str:
    """``base_url`` + ``path``, once the settings every HTTP provider takes are sound; else a
    :class:`~memorybank.errors.ConfigurationError` naming the bad one (``kind`` says which
    provider: ``"embedding"``, ``"chat"``).

    >>> endpoint("chat", "http://localhost:11434/v1/", "/chat/completions", "llama3.1",
    ...          timeout=60, max_retries=3, backoff=0.5)
    'http://localhost:11434/v1/chat/completions'
    """
    if not base_url.startswith(("http://", "https://")):
        raise ConfigurationError(
            f"{kind} base_url must start with http:// or https://, got {base_url!r}"
        )
    if not model:
        raise ConfigurationError(f"{kind} model name must not be empty")
    if max_retries < 0:
        raise ConfigurationError(f"max_retries must not be negative, got {max_retries}")
    if timeout <= 0:
        raise ConfigurationError(f"timeout must be positive, got {timeout}")
    if backoff < 0:
        raise ConfigurationError(f"backoff must not be negative, got {backoff}")
    url = base_url.rstrip("/") + path
    try:
        httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise ConfigurationError(f"invalid {kind} base_url {base_url!r}: {exc}") from exc
    return url


def json_client(
    api_key: str | None, timeout: float, address_policy: AddressPolicy | None
) -> httpx.Client:
    """An HTTP client that asks for JSON and sends ``api_key`` as a bearer token (none for a
    keyless local server); through ``address_policy``'s guard when one is given."""
    headers = {"Accept": "application/json"}
    if api_key is not None:
        headers["Authorization"] = f"Bearer {api_key}"
    if address_policy is None:
        return httpx.Client(timeout=timeout, headers=headers)
    return guarded_client(address_policy, timeout=timeout, headers=headers)


def with_retries(
    attempt: Callable[[], T],
    *,
    max_retries: int,
    backoff: float,
    provider: str,
    redact: Callable[[str], str],
) -> T:
    """``attempt()``'s answer, trying again after each :class:`RetryableError` up to
    ``max_retries`` times (exponential ``backoff``, or the wait the server asked for); then a
    :class:`~memorybank.errors.ProviderError` naming ``provider``, the tries made and the
    last failure (passed through ``redact``)."""
    attempts = max_retries + 1
    last = ""
    for number in range(attempts):
        try:
            return attempt()
        except RetryableError as exc:
            last = exc.message
            if number + 1 == attempts:
                break
            time.sleep(exc.retry_after if exc.retry_after is not None else backoff * 2**number)
    tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
    raise ProviderError(f"{provider} failed after {tries}: {redact(last)}")


def post_once(
    client: httpx.Client,
    url: str,
    body: dict[str, object],
    *,
    provider: str,
    redact: Callable[[str], str],
) -> httpx.Response:
    """One POST of ``body`` as JSON. A timeout, a failed connection, HTTP 429 or a 5xx is a
    :class:`RetryableError`; an address the guard refuses or any other HTTP failure is a
    :class:`~memorybank.errors.ProviderError` naming ``provider``; any other status is the
    caller's to judge."""
    try:
        response = client.post(url, json=body)
    except AddressRefused as exc:
        raise ProviderError(f"{provider} was not contacted: {exc}") from None
    except httpx.TimeoutException as exc:
        raise RetryableError(f"timed out ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:
        raise RetryableError(f"connection failed: {type(exc).__name__}: {exc}") from exc
    except (httpx.HTTPError, RuntimeError) as exc:  # closed client, redirect loop, ...
        raise ProviderError(f"{provider} failed: {type(exc).__name__}: {redact(str(exc))}") from exc
    status = response.status_code
    if status == 429 or status >= 500:
        raise RetryableError(
            f"HTTP {status}: {status_advice(status)}", retry_after=retry_after(response)
        )
    return response


class HttpProvider(ABC, Generic[T]):
    """What an OpenAI-compatible HTTP provider's client (embeddings, chat) holds and does the
    same way: its checked endpoint (:func:`endpoint`), model, key and retry settings, one
    :func:`json_client`, a lock for what it learns from answers, POSTs retried by
    :func:`with_retries` around the subclass's :meth:`_attempt`, and the provider named
    (never its key) in messages.

    ``kind`` is the provider kind of the messages (``"embedding"``, ``"chat"``)."""

    kind: ClassVar[str]

    def __init__(
        self,
        base_url: str,
        path: str,
        model: str,
        api_key: str | None,
        *,
        timeout: float,
        max_retries: int,
        backoff: float,
        address_policy: AddressPolicy | None,
    ) -> None:
        self._url = endpoint(
            self.kind,
            base_url,
            path,
            model,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
        )
        self.model = model
        self._api_key = api_key or None
        self._max_retries = max_retries
        self._backoff = backoff
        self._lock = threading.Lock()
        self._client = json_client(self._api_key, timeout, address_policy)

    @abstractmethod
    def _attempt(self, body: dict[str, Any]) -> T:
        """One try at ``body`` (see :meth:`_send`); a :class:`RetryableError` tries again."""

    def _post(self, body: dict[str, Any]) -> T:
        return with_retries(
            lambda: self._attempt(body),
            max_retries=self._max_retries,
            backoff=self._backoff,
            provider=self._describe(),
            redact=self._redact,
        )

    def _send(self, body: dict[str, Any]) -> httpx.Response:
        """One POST of ``body`` to the endpoint (:func:`post_once`)."""
        return post_once(
            self._client, self._url, body, provider=self._describe(), redact=self._redact
        )

    def _describe(self) -> str:
        return f"{self.kind} provider {self._url} (model {self.model!r})"

    def _redact(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "[redacted]")
        return text


def shorten(text: str) -> str:
    """``text`` cut to a length that fits an error message."""
    return text if len(text) <= _MAX_ERROR_TEXT else text[: _MAX_ERROR_TEXT - 3] + "..."


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asked us to wait (``Retry-After``), capped; ``None`` if it did not
    say in seconds (an HTTP date falls back to our own backoff)."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(seconds, MAX_RETRY_AFTER)


def status_advice(status: int) -> str:
    """What to check when a provider answers HTTP ``status`` (the answer itself is not shown)."""
    if status in (401, 403):
        advice = "check the API key, and that it may use this model"
    elif status == 404:
        advice = "check the base URL (it usually ends in /v1) and the model name"
    elif status == 429:
        advice = "the provider is limiting requests: try again later, or check the plan's limits"
    elif status >= 500:
        advice = "the provider failed on its side: try again later, or check its status page"
    elif 300 <= status < 400:
        advice = "the provider redirects elsewhere: use the final address as the base URL"
    elif status in (400, 413, 422):
        advice = "the provider refused the request: check the model name and what it supports"
    else:
        advice = "check the base URL, the model name and the API key"
    return f"{advice} (the provider's answer is not shown)"


def provider_message(response: httpx.Response) -> str:
    """The error message an OpenAI-compatible provider put in its answer (``error.message``,
    or a bare ``error``/``detail``/``message`` string, as Ollama, vLLM and TEI do), else the
    raw body: for deciding what to do next (the chat client looks for a refused
    ``response_format``), never for showing. Not redacted."""
    try:
        payload = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        payload = None
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        for key in ("error", "detail", "message"):
            if isinstance(payload.get(key), str):
                return str(payload[key])
    return response.text.strip() or response.reason_phrase or "no details"

"""What the HTTP providers (embeddings, chat) share about failing and trying again."""

from __future__ import annotations

import math

import httpx

#: Longest wait a ``Retry-After`` header can impose, in seconds.
MAX_RETRY_AFTER = 10.0
_MAX_ERROR_TEXT = 300


class RetryableError(Exception):
    """One attempt failed in a way worth another try; ``message`` says how."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


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

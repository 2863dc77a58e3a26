"""What the HTTP providers (embeddings, chat) share about failing and trying again."""

from __future__ import annotations

import json
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


def provider_message(response: httpx.Response) -> str:
    """The error message an OpenAI-compatible provider put in its answer (``error.message``,
    or a bare ``error``/``detail``/``message`` string, as Ollama, vLLM and TEI do), else the
    raw body. Not redacted: callers remove their key before showing it."""
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

"""What the HTTP providers (embeddings, chat) share about failing and trying again.

A provider's answer is never shown in an error: a user's provider URL may point anywhere, and
an error that quoted the answer would make the server read internal services for them
(issue 17). Errors say the status and what to check (:func:`status_advice`) instead.
"""

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

"""JSON answers from any OpenAI-compatible ``/v1/chat/completions`` endpoint.

OpenAI, Ollama, vLLM, llama.cpp, LiteLLM and most hosted providers speak this protocol:
``POST {base_url}/chat/completions`` with ``{"model", "messages", "response_format"}``,
answered by ``{"choices": [{"message": {"content": "..."}}]}``.

memorybank only ever wants structured answers (facts to store, actions to take), so the one
call is :meth:`ChatClient.complete_json`; :func:`complete_model` adds validation against a
pydantic model and one retry that shows the model its own mistake.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import httpx
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from memorybank.errors import ProviderError

# The embedder and this client share settings checks and retry rules: same statuses, same
# Retry-After cap.
from memorybank.providers.httpretry import (
    HttpProvider,
    provider_message,
    shorten,
    status_advice,
)
from memorybank.providers.json_schemas import strict_schema
from memorybank.providers.netguard import AddressPolicy
from memorybank.rules.pydantic_errors import pydantic_message

Message = Mapping[str, str]
M = TypeVar("M", bound=BaseModel)

# Words in a 400 answer that mean "this server does not do structured output".
_NO_SCHEMA_RE = re.compile(r"response_format|json_schema|structured|not supported", re.I)
_FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


class JSONCompleter(Protocol):
    """Anything that answers chat messages with a JSON object (:class:`ChatClient` does)."""

    def complete_json(
        self, messages: Sequence[Message], schema_name: str, json_schema: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The model's answer to ``messages`` as a JSON object meant to match the schema."""
        ...


class MalformedReply(ProviderError):
    """The model answered, but not with a JSON object; ``text`` is (the start of) its answer."""

    def __init__(self, message: str, text: str) -> None:
        super().__init__(message)
        self.text = text


class ChatClient(HttpProvider[tuple[int, Any]]):
    """Chat completions from an OpenAI-compatible HTTP API, for JSON answers.

    The schema is sent as ``response_format={"type": "json_schema", ...}`` (strict). A server
    that refuses that (HTTP 400 naming ``response_format``) is asked again, and from then on,
    with the schema in a system message instead; either way the answer's content is parsed
    as JSON, tolerating code fences and text around the object. ``structured_output=False``
    skips the first try. Connection errors, timeouts, HTTP 429 and 5xx are retried up to
    ``max_retries`` times with exponential backoff (or the server's ``Retry-After``, at most
    10 s); anything else raises :class:`~memorybank.errors.ProviderError` at once. The API
    key is sent only in the ``Authorization`` header and never appears in error messages,
    and neither does the provider's answer: errors say the HTTP status and what to check.

    ``address_policy`` is for a URL a user chose (bring-your-own keys): the client then
    connects only to addresses the policy allows, checked on each connection
    (:mod:`memorybank.providers.netguard`), and takes no proxy or credentials from the environment.

    Example::

        from memorybank.providers.llm import ChatClient

        with ChatClient("https://api.openai.com/v1", "gpt-4o-mini", api_key="sk-...") as llm:
            llm.complete_json(
                [{"role": "user", "content": "Name a colour."}],
                "Colour",
                {"type": "object", "properties": {"name": {"type": "string"}},
                 "required": ["name"], "additionalProperties": False},
            )   # {'name': 'blue'}

        # A local Ollama server needs no key:
        ollama = ChatClient("http://localhost:11434/v1", "llama3.1")
    """

    kind = "chat"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        temperature: float = 0.0,
        structured_output: bool | None = None,
        address_policy: AddressPolicy | None = None,
    ) -> None:
        super().__init__(
            base_url,
            "/chat/completions",
            model,
            api_key,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            address_policy=address_policy,
        )
        self._temperature = temperature
        # None: not known yet; learned from the first refusal.
        self._structured = structured_output

    def close(self) -> None:
        """Close the HTTP client; the client cannot be used afterwards."""
        self._client.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def complete_json(
        self, messages: Sequence[Message], schema_name: str, json_schema: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The model's answer to ``messages`` as a JSON object.

        Raises :class:`MalformedReply` when the answer holds no JSON object, and
        :class:`~memorybank.errors.ProviderError` when the provider fails.
        """
        if self._structured is not False:
            body = self._body(messages)
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": dict(json_schema), "strict": True},
            }
            status, payload = self._post(body)
            if status == 200:
                with self._lock:
                    self._structured = True
                return parse_json_object(self._content(payload), self._redact)
            refused = status in (400, 422) and _NO_SCHEMA_RE.search(payload)
            if self._structured is True or not refused:
                raise self._status_error(status)
            with self._lock:
                self._structured = False
        instruction = (
            f"Reply with only one JSON object (no prose, no code fence) matching the JSON "
            f"schema {schema_name!r}:\n{json.dumps(json_schema, separators=(',', ':'))}"
        )
        body = self._body([*messages, {"role": "system", "content": instruction}])
        status, payload = self._post(body)
        if status != 200:
            raise self._status_error(status)
        return parse_json_object(self._content(payload), self._redact)

    # -- HTTP --------------------------------------------------------------------------------

    def _body(self, messages: Sequence[Message]) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": self._temperature,
        }

    def _attempt(self, body: dict[str, Any]) -> tuple[int, Any]:
        """(200, parsed JSON body) or (a 4xx status, the provider's error text, to decide on
        and never to show)."""
        response = self._send(body)
        status = response.status_code
        if status != 200:
            return status, self._error_text(response)
        try:
            return status, response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ProviderError(
                f"{self._describe()} answered HTTP 200 with a body that is not JSON: check "
                "that the base URL is a chat-completions API (the answer is not shown)"
            ) from exc

    def _content(self, payload: Any) -> str:
        """The text of the first choice's message."""
        choices = payload.get("choices") if isinstance(payload, dict) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict):
            raise ProviderError(f"{self._describe()} answered without choices[0].message")
        content = message.get("content")
        if isinstance(content, str) and content.strip():
            return content
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            raise ProviderError(
                f"{self._describe()} refused to answer (its refusal is not shown): try another "
                "model, or check what it is asked"
            )
        raise MalformedReply(f"{self._describe()} answered with an empty message", "")

    # -- messages ----------------------------------------------------------------------------

    def _status_error(self, status: int) -> ProviderError:
        return ProviderError(f"{self._describe()} answered HTTP {status}: {status_advice(status)}")

    def _error_text(self, response: httpx.Response) -> str:
        """The provider's own error message (redacted and shortened), else the raw body: to
        recognise a refused ``response_format``, never shown."""
        return shorten(self._redact(provider_message(response)))


def parse_json_object(text: str, redact: Callable[[str], str] = str) -> dict[str, Any]:
    """The JSON object in a model's answer: the whole text, a fenced block, or the first
    ``{…}`` in prose. Raises :class:`MalformedReply` if there is none.

    >>> parse_json_object('Sure! ```json\\n{"a": 1}\\n``` Anything else?')
    {'a': 1}
    """
    candidate = text.strip()
    fenced = _FENCE_RE.search(candidate)
    if fenced:
        candidate = fenced.group(1).strip()
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError as exc:
        start = candidate.find("{")
        try:
            value = json.JSONDecoder().raw_decode(candidate[start:])[0] if start >= 0 else None
        except json.JSONDecodeError:
            value = None
        if value is None:
            raise MalformedReply(
                f"the model's answer is not JSON ({exc.msg} at character {exc.pos})",
                shorten(redact(text)),
            ) from exc
    if not isinstance(value, dict):
        raise MalformedReply(
            f"the model's answer is JSON but not an object (got {type(value).__name__})",
            shorten(redact(text)),
        )
    return value


def complete_model(
    llm: JSONCompleter,
    messages: Sequence[Message],
    output: type[M],
    *,
    check: Callable[[M], None] | None = None,
) -> M:
    """Ask ``llm`` for an answer shaped like ``output`` and validate it.

    The schema sent is ``output``'s in strict mode, where every field is sent, so ``output``
    should give its fields no defaults (``X | None`` without a default is fine).

    An answer that is not JSON, does not match the model, or fails ``check`` (which raises
    ``ValueError`` with a reason) is shown back to the model with what was wrong, once. A
    second bad answer raises :class:`~memorybank.errors.ProviderError`.
    """
    schema = strict_schema(output)
    conversation = list(messages)
    problem = ""
    for attempt in range(2):
        try:
            raw = llm.complete_json(conversation, output.__name__, schema)
        except MalformedReply as exc:
            problem, answer = str(exc), exc.text
        else:
            answer = json.dumps(raw, ensure_ascii=False)
            try:
                value = output.model_validate(raw)
                if check is not None:
                    check(value)
                return value
            except PydanticValidationError as exc:
                problem = pydantic_message(exc, most=5, nameless="answer")
            except ValueError as exc:
                problem = str(exc)
        if attempt == 0:
            conversation += [
                {"role": "assistant", "content": answer},
                {
                    "role": "user",
                    "content": f"That answer is invalid: {problem}. Reply again with only "
                    f"a JSON object matching the {output.__name__} schema.",
                },
            ]
    raise ProviderError(f"the model's answer did not fit {output.__name__} twice: {problem}")


__all__ = [
    "ChatClient",
    "JSONCompleter",
    "MalformedReply",
    "complete_model",
    "parse_json_object",
]

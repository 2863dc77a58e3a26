"""ChatClient against a real HTTP server speaking the chat-completions protocol."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from chat_server import API_KEY, ChatServer, Raw, running_chat_server
from memorybank.errors import ConfigurationError, ProviderError
from memorybank.providers.llm import ChatClient, MalformedReply, complete_model, parse_json_object

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}
ASK = [{"role": "user", "content": "Name a colour."}]


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with running_chat_server() as server:
        yield server


@pytest.fixture
def client(chat: ChatServer) -> Iterator[ChatClient]:
    with ChatClient(chat.base_url, "test-model", api_key=API_KEY, backoff=0.01) as c:
        yield c


def test_sends_schema_as_response_format(chat: ChatServer, client: ChatClient) -> None:
    chat.reply({"name": "blue"})
    assert client.complete_json(ASK, "Colour", SCHEMA) == {"name": "blue"}
    request = chat.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["authorization"] == f"Bearer {API_KEY}"
    body = request["body"]
    assert body["model"] == "test-model"
    assert body["messages"] == ASK
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Colour", "schema": SCHEMA, "strict": True},
    }


def test_falls_back_to_prompted_json_when_schema_refused(
    chat: ChatServer, client: ChatClient
) -> None:
    refusal = {"error": {"message": "response_format json_schema is not supported"}}
    chat.reply(
        Raw(400, json.dumps(refusal).encode()),
        'Here you go:\n```json\n{"name": "red"}\n```',
        'Sure. {"name": "green"} Hope that helps!',
    )
    assert client.complete_json(ASK, "Colour", SCHEMA) == {"name": "red"}
    retried = chat.requests[1]["body"]
    assert "response_format" not in retried
    assert retried["messages"][-1]["role"] == "system"
    assert '"name"' in retried["messages"][-1]["content"]
    # The client remembers: the next call goes straight to the prompted form.
    assert client.complete_json(ASK, "Colour", SCHEMA) == {"name": "green"}
    assert len(chat.requests) == 3
    assert "response_format" not in chat.requests[2]["body"]


def test_other_400_is_an_error_not_a_fallback(chat: ChatServer, client: ChatClient) -> None:
    chat.reply(Raw(400, b'{"error": {"message": "messages must not be empty"}}'))
    with pytest.raises(ProviderError, match="HTTP 400: the provider refused") as info:
        client.complete_json(ASK, "Colour", SCHEMA)
    assert "messages must not be empty" not in str(info.value)  # answers are never echoed
    assert len(chat.requests) == 1


def test_retries_429_and_5xx_then_succeeds(chat: ChatServer, client: ChatClient) -> None:
    chat.reply(
        Raw(429, b'{"error": {"message": "slow down"}}', {"Retry-After": "0"}),
        Raw(503, b"upstream unavailable"),
        {"name": "teal"},
    )
    assert client.complete_json(ASK, "Colour", SCHEMA) == {"name": "teal"}
    assert len(chat.requests) == 3


def test_gives_up_after_max_retries_without_leaking_key(chat: ChatServer) -> None:
    echo = json.dumps({"error": {"message": f"bad gateway for key {API_KEY}"}}).encode()
    chat.reply(*[Raw(502, echo)] * 3)
    with ChatClient(chat.base_url, "m", api_key=API_KEY, max_retries=2, backoff=0.01) as c:
        with pytest.raises(ProviderError) as info:
            c.complete_json(ASK, "Colour", SCHEMA)
    message = str(info.value)
    assert "failed after 3 attempts" in message
    assert "HTTP 502" in message
    assert API_KEY not in message
    assert "bad gateway" not in message  # the provider's answer is never echoed
    assert len(chat.requests) == 3


def test_client_error_is_not_retried_and_is_redacted(chat: ChatServer, client: ChatClient) -> None:
    chat.reply(Raw(401, json.dumps({"error": {"message": f"invalid key {API_KEY}"}}).encode()))
    with pytest.raises(ProviderError) as info:
        client.complete_json(ASK, "Colour", SCHEMA)
    assert "HTTP 401" in str(info.value)
    assert API_KEY not in str(info.value)
    assert len(chat.requests) == 1


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port now.
    url = f"http://127.0.0.1:{port}/v1"
    with ChatClient(url, "m", api_key=API_KEY, max_retries=1, backoff=0.01) as c:
        with pytest.raises(ProviderError, match="failed after 2 attempts: connection failed"):
            c.complete_json(ASK, "Colour", SCHEMA)


def test_timeout_is_reported(chat: ChatServer) -> None:
    def slow(body: dict[str, Any]) -> dict[str, str]:
        time.sleep(0.5)
        return {"name": "late"}

    chat.reply(slow)
    with ChatClient(chat.base_url, "m", timeout=0.1, max_retries=0) as c:
        with pytest.raises(ProviderError, match="timed out"):
            c.complete_json(ASK, "Colour", SCHEMA)


def test_answer_without_json_is_malformed(chat: ChatServer, client: ChatClient) -> None:
    chat.reply("I think blue is nice.", "[1, 2]")
    with pytest.raises(MalformedReply, match="not JSON") as info:
        client.complete_json(ASK, "Colour", SCHEMA)
    assert info.value.text == "I think blue is nice."
    with pytest.raises(MalformedReply, match="not an object"):
        client.complete_json(ASK, "Colour", SCHEMA)


def test_answer_without_choices_is_a_provider_error(chat: ChatServer, client: ChatClient) -> None:
    chat.reply(Raw(200, b'{"object": "chat.completion"}'))
    with pytest.raises(ProviderError, match="without choices"):
        client.complete_json(ASK, "Colour", SCHEMA)


def test_refusal_is_reported(chat: ChatServer, client: ChatClient) -> None:
    body = {"choices": [{"message": {"role": "assistant", "content": None, "refusal": "No."}}]}
    chat.reply(Raw(200, json.dumps(body).encode()))
    with pytest.raises(ProviderError, match="refused to answer"):
        client.complete_json(ASK, "Colour", SCHEMA)


def test_no_auth_header_without_key(chat: ChatServer) -> None:
    chat.reply({"name": "x"})
    with ChatClient(chat.base_url, "m") as c:
        c.complete_json(ASK, "Colour", SCHEMA)
    assert chat.requests[0]["authorization"] is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base_url": "ftp://x"}, "must start with http"),
        ({"model": ""}, "model name"),
        ({"max_retries": -1}, "max_retries"),
        ({"timeout": 0}, "timeout"),
    ],
)
def test_bad_configuration(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"base_url": "http://localhost:1/v1", "model": "m", **kwargs}
    with pytest.raises(ConfigurationError, match=message):
        ChatClient(**args)


# -- complete_model: validation and the one retry -----------------------------------------


class Colour(BaseModel):
    name: str = Field(min_length=2)
    shade: Literal["light", "dark"]


def test_complete_model_retries_once_with_the_validation_error(
    chat: ChatServer, client: ChatClient
) -> None:
    chat.reply("not json at all", {"name": "blue", "shade": "dark"})
    colour = complete_model(client, ASK, Colour)
    assert colour == Colour(name="blue", shade="dark")
    second = chat.requests[1]["body"]["messages"]
    assert second[-2] == {"role": "assistant", "content": "not json at all"}
    assert "That answer is invalid: the model's answer is not JSON" in second[-1]["content"]


def test_complete_model_reports_schema_errors_to_the_model(
    chat: ChatServer, client: ChatClient
) -> None:
    chat.reply({"name": "blue", "shade": "purple"}, {"name": "blue", "shade": "light"})
    assert complete_model(client, ASK, Colour).shade == "light"
    assert "shade" in chat.last_user_message(1)


def test_complete_model_check_failure_is_retried(chat: ChatServer, client: ChatClient) -> None:
    def only_blue(colour: Colour) -> None:
        if colour.name != "blue":
            raise ValueError(f"name must be blue, not {colour.name}")

    chat.reply({"name": "red", "shade": "dark"}, {"name": "blue", "shade": "dark"})
    assert complete_model(client, ASK, Colour, check=only_blue).name == "blue"
    assert "name must be blue, not red" in chat.last_user_message(1)


def test_complete_model_gives_up_after_two_bad_answers(
    chat: ChatServer, client: ChatClient
) -> None:
    chat.reply({"name": "b"}, {"name": "b"})
    with pytest.raises(ProviderError, match="did not fit Colour twice"):
        complete_model(client, ASK, Colour)
    assert len(chat.requests) == 2


# -- helpers -------------------------------------------------------------------------------


def test_complete_model_sends_the_strict_schema(chat: ChatServer, client: ChatClient) -> None:
    chat.reply({"name": "blue", "shade": "dark"})
    complete_model(client, ASK, Colour)
    sent = chat.requests[0]["body"]["response_format"]["json_schema"]
    assert sent["name"] == "Colour"
    assert sent["strict"] is True
    assert sent["schema"]["required"] == ["name", "shade"]
    assert sent["schema"]["additionalProperties"] is False
    assert sent["schema"]["properties"]["shade"]["enum"] == ["light", "dark"]


def test_parse_json_object_variants() -> None:
    assert parse_json_object('{"a": 1}') == {"a": 1}
    assert parse_json_object('```json\n{"a": 2}\n```') == {"a": 2}
    assert parse_json_object('Result: {"a": 3} done') == {"a": 3}
    with pytest.raises(MalformedReply):
        parse_json_object("nothing here")

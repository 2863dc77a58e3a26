"""The dispatcher: parsing, validation messages, error mapping, timeouts and the toolkit."""

from __future__ import annotations

import json
import logging
import math
import threading
from typing import Any

import pytest

from memorybank import MemoryBank
from memorybank.errors import (
    ConfigurationError,
    NotFound,
    PermissionDenied,
    ProviderError,
    StoreError,
    ValidationError,
)
from memorybank.providers.json_schemas import Arguments
from memorybank.tools import Caller, Profile, SafetyTier, call, profile, toolkit
from memorybank.tools.profiles import define

CTX = Caller(user_id="alice", thread_id="t1")


class Nothing(Arguments):
    pass


def fake_profile(
    handler: Any, *, tier: SafetyTier = SafetyTier.READ_ONLY, timeout: float = 5
) -> Profile:
    return Profile(
        name="fake",
        tools=(define("boom", "Fails.", Nothing, handler, tier, timeout_s=timeout),),
        guidance="Use boom.",
    )


def raising(exc: BaseException) -> Any:
    def handler(bank: Any, caller: Any, args: Any) -> Any:
        raise exc

    return handler


def test_unknown_tool_lists_the_profiles_tools(bank: MemoryBank) -> None:
    out = call(bank, profile("oxydra"), "memory_find", {}, CTX)
    assert out["success"] is False
    assert "memory_find" in out["error"]
    for name in ("memory_search", "memory_save", "memory_update", "memory_delete"):
        assert name in out["error"]


def test_non_string_tool_name(bank: MemoryBank) -> None:
    out = call(bank, profile("default"), {"name": "recall"}, {}, CTX)
    assert out["success"] is False and "unknown tool" in out["error"]


def test_invalid_json_says_so(bank: MemoryBank) -> None:
    out = call(bank, profile("default"), "recall", '{"query": "tea"', CTX)
    assert out["success"] is False
    assert "not valid JSON" in out["error"] and "recall" in out["error"]


@pytest.mark.parametrize("raw", ["[1, 2]", "42", '"query"', "true"])
def test_arguments_must_be_an_object(bank: MemoryBank, raw: str) -> None:
    out = call(bank, profile("default"), "recall", raw, CTX)
    assert out["success"] is False and "must be a JSON object" in out["error"]


def test_json_string_and_bytes_are_accepted(bank: MemoryBank) -> None:
    call(bank, profile("default"), "remember", {"fact": "User likes green tea"}, CTX)
    for raw in ('{"query": "tea"}', b'{"query": "tea"}'):
        out = call(bank, profile("default"), "recall", raw, CTX)
        assert out["success"] is True
        assert out["facts"][0]["fact"] == "User likes green tea"


def test_missing_argument_is_named(bank: MemoryBank) -> None:
    out = call(bank, profile("default"), "recall", "{}", CTX)
    assert out == {
        "success": False,
        "error": "invalid arguments for recall: missing required argument 'query'",
    }


def test_unknown_argument_is_named_with_the_allowed_ones(bank: MemoryBank) -> None:
    # The model cannot choose whose memory it reads: user_id is not an argument.
    out = call(bank, profile("default"), "recall", {"query": "tea", "user_id": "bob"}, CTX)
    assert out["success"] is False
    assert "unknown argument 'user_id'" in out["error"] and "query" in out["error"]


def test_wrong_type_names_the_field(bank: MemoryBank) -> None:
    out = call(bank, profile("oxydra"), "memory_search", {"query": "x", "top_k": "many"}, CTX)
    assert out["success"] is False
    assert "top_k" in out["error"] and "integer" in out["error"]
    out = call(bank, profile("oxydra"), "memory_search", {"query": "x", "top_k": 21}, CTX)
    assert "top_k" in out["error"] and "20" in out["error"]


def test_validation_errors_do_not_echo_huge_inputs(bank: MemoryBank) -> None:
    out = call(bank, profile("oxydra"), "memory_search", {"query": "x", "top_k": "9" * 5000}, CTX)
    assert out["success"] is False and len(out["error"]) < 300


def test_null_means_default_for_optional_arguments(bank: MemoryBank) -> None:
    # What an OpenAI strict-mode model sends when it does not want an optional argument.
    args = {"query": "anything", "top_k": None, "include_conversation": None}
    assert call(bank, profile("oxydra"), "memory_search", json.dumps(args), CTX) == []


def test_null_for_a_required_argument_is_an_error(bank: MemoryBank) -> None:
    out = call(bank, profile("oxydra"), "memory_search", {"query": None}, CTX)
    assert out["success"] is False and "query" in out["error"]


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            ValidationError("content too short: fix it", field="content"),
            "content too short: fix it",
        ),
        (NotFound("no memory 'm1' for this user"), "no memory 'm1' for this user"),
        (PermissionDenied("only admins may do this"), "only admins may do this"),
    ],
)
def test_input_errors_pass_their_message(bank: MemoryBank, exc: Exception, expected: str) -> None:
    assert call(bank, fake_profile(raising(exc)), "boom", {}, CTX) == {
        "success": False,
        "error": expected,
    }


@pytest.mark.parametrize(
    "exc",
    [
        StoreError("database error: OperationalError: near SELECT: /var/lib/mb/memories.db"),
        ProviderError("https://api.example.com/v1/embeddings answered 500 with key sk-123"),
        ConfigurationError("/home/alice/.config/memorybank/settings.toml is broken"),
    ],
)
def test_backend_errors_never_reach_the_model(bank: MemoryBank, exc: Exception) -> None:
    out = call(bank, fake_profile(raising(exc)), "boom", {}, CTX)
    assert out["success"] is False
    assert "boom" in out["error"]
    for leak in ("SELECT", "/var/", "/home/", "sk-123", "https://", "Error:"):
        assert leak not in out["error"]


def test_unexpected_errors_are_generic_and_logged(
    bank: MemoryBank, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="memorybank.tools"):
        out = call(bank, fake_profile(raising(KeyError("/etc/secret"))), "boom", {}, CTX)
    assert out == {
        "success": False,
        "error": "internal error while running boom; it has been logged",
    }
    assert any("boom" in r.getMessage() and r.exc_info for r in caplog.records)


@pytest.mark.parametrize("value", [{1, 2}, {"score": math.nan}, object()])
def test_results_that_are_not_json_become_an_internal_error(bank: MemoryBank, value: Any) -> None:
    out = call(bank, fake_profile(lambda b, c, a: value), "boom", {}, CTX)
    assert out["success"] is False and "internal error" in out["error"]


def test_timeout_returns_an_error(bank: MemoryBank) -> None:
    release, finished = threading.Event(), threading.Semaphore(0)

    def slow(b: Any, c: Any, a: Any) -> Any:
        release.wait(60)  # held until both answers are in: a call that waited would hang
        finished.release()
        return {"success": True}

    out = call(bank, fake_profile(slow, timeout=0.05), "boom", {}, CTX)
    assert out == {
        "success": False,
        "error": "boom did not finish within 0.05 s; try again with a simpler request",
    }
    write = call(
        bank, fake_profile(slow, tier=SafetyTier.SIDE_EFFECTING, timeout=0.05), "boom", {}, CTX
    )
    assert "may still complete" in write["error"]
    assert not finished.acquire(blocking=False)  # both answers came while the tool still ran
    release.set()
    assert finished.acquire(timeout=60) and finished.acquire(timeout=60)  # before the bank closes


def test_toolkit_is_empty_when_memory_is_off_or_tools_unsupported(bank: MemoryBank) -> None:
    full = profile("supermemory")
    assert toolkit(full, CTX) is full
    for caller in (
        Caller(user_id="alice", memory_enabled=False),
        Caller(user_id="alice", supports_tools=False),
    ):
        offered = toolkit(full, caller)
        assert offered.tools == () and offered.guidance == ""
        out = call(bank, full, "add_memory", {"content": "User likes tea a lot"}, caller)
        assert out["success"] is False and "turned off" in out["error"]
    assert bank.count("alice") == 0


def test_empty_arguments_mean_no_arguments(bank: MemoryBank) -> None:
    assert call(bank, fake_profile(lambda b, c, a: {"ok": 1}), "boom", "", CTX) == {"ok": 1}
    assert call(bank, fake_profile(lambda b, c, a: {"ok": 1}), "boom", None, CTX) == {"ok": 1}

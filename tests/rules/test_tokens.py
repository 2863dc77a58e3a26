"""Exact, offline token counting and truncation (memorybank.rules.tokens)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memorybank.errors import ValidationError
from memorybank.rules import tokens
from memorybank.rules.tokens import count_tokens, truncate_to_tokens

ENCODINGS = ("o200k_base", "cl100k_base")

# Characters that exercise every pre-tokenizer rule near the places where long text is cut.
TRICKY = st.text(
    alphabet=st.sampled_from(
        list("ab Zq'\n\n\r\t/.!,:-0123") + ["é", "ß", "世", "界", "🎉", "\u0301", "\u00a0", "’"]
    ),
    max_size=200,
)


@pytest.mark.parametrize(
    ("text", "encoding", "expected"),
    [
        ("hello world", "o200k_base", 2),
        ("hello world", "cl100k_base", 2),
        ("tiktoken is great!", "cl100k_base", 6),  # tiktoken's README example
        ("", "o200k_base", 0),
        ("", "cl100k_base", 0),
    ],
)
def test_known_counts(text: str, encoding: Any, expected: int) -> None:
    assert count_tokens(text, encoding) == expected


def test_encodings_differ_where_they_should() -> None:
    text = "Привет, как дела? 你好世界"  # o200k's larger vocabulary packs these tighter
    assert count_tokens(text, "o200k_base") < count_tokens(text, "cl100k_base")


def test_special_tokens_are_counted_as_ordinary_text() -> None:
    for encoding in ENCODINGS:
        assert count_tokens("<|endoftext|>", encoding) > 1  # type: ignore[arg-type]
        assert count_tokens("<|im_end|><|endofprompt|>", encoding) > 2  # type: ignore[arg-type]


def test_lone_surrogates_count_as_replacement_character() -> None:
    assert count_tokens("a\ud800b") == count_tokens("a\ufffdb")
    assert truncate_to_tokens("a\ud800b", 10) == "a\ud800b"


@pytest.mark.parametrize("bad", ["gpt2", "r50k_base", "O200K", "", "voyage3_base"])
def test_unknown_encoding_is_a_clear_validation_error(bad: str) -> None:
    with pytest.raises(ValidationError, match="unknown encoding") as info:
        count_tokens("hello", bad)  # type: ignore[arg-type]
    assert info.value.field == "encoding"
    assert "o200k_base" in str(info.value) and "cl100k_base" in str(info.value)
    with pytest.raises(ValidationError, match="unknown encoding"):
        truncate_to_tokens("hello", 1, bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_truncate_rejects_bad_limits(bad: Any) -> None:
    with pytest.raises(ValidationError) as info:
        truncate_to_tokens("hello world", bad)
    assert info.value.field == "max_tokens"


def test_truncate_cuts_at_a_token_boundary() -> None:
    text = "User prefers TypeScript over JavaScript for every project"
    total = count_tokens(text)
    assert truncate_to_tokens(text, total) == text
    assert truncate_to_tokens(text, total + 5) == text
    assert truncate_to_tokens(text, 0) == ""
    for n in range(total):
        cut = truncate_to_tokens(text, n)
        assert text.startswith(cut)
        assert count_tokens(cut) == n  # plain ASCII: each token boundary is reachable


def test_truncate_never_splits_a_character() -> None:
    text = "🎉🎉🎉 naïve 世界"
    for n in range(count_tokens(text) + 1):
        cut = truncate_to_tokens(text, n)
        assert text.startswith(cut)
        assert "\ufffd" not in cut
        assert count_tokens(cut) <= n


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), limit=st.integers(0, 120), encoding=st.sampled_from(ENCODINGS))
def test_truncate_is_a_prefix_within_the_limit(text: str, limit: int, encoding: Any) -> None:
    cut = truncate_to_tokens(text, limit, encoding)
    assert count_tokens(cut, encoding) <= limit
    if count_tokens(text, encoding) <= limit:
        assert cut == text
    else:
        assert text.startswith(cut) and len(cut) < len(text)


@settings(max_examples=300, deadline=None)
@given(text=TRICKY, encoding=st.sampled_from(ENCODINGS))
def test_counting_in_pieces_is_exact(text: str, encoding: Any) -> None:
    """Cutting long text only where no pre-token spans keeps the count exact."""
    whole = len(tokens._encoder(encoding).encode_ordinary(text))
    saved = tokens._CHUNK_CHARS
    tokens._CHUNK_CHARS = 7
    try:
        assert "".join(tokens._pieces(text)) == text
        assert count_tokens(text, encoding) == whole
        cut = truncate_to_tokens(text, whole // 2, encoding)
        assert text.startswith(cut) and count_tokens(cut, encoding) <= whole // 2
    finally:
        tokens._CHUNK_CHARS = saved


def test_text_longer_than_one_call_allows() -> None:
    line = "User prefers tea over coffee.\n"
    text = line * 40_000  # 1.2 million characters: more than bpe-openai takes in one call
    assert len(text) > 1_000_000
    assert count_tokens(text) == 40_000 * count_tokens(line)
    words = "word " * 250_000  # no line breaks at all
    assert count_tokens(words) == count_tokens("word") + 249_999 * count_tokens(" word") + 1
    cut = truncate_to_tokens(text, 25)
    assert text.startswith(cut) and count_tokens(cut) == 25


def test_encoders_load_once_under_concurrency(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = tokens._load

    def slow_load(name: str) -> Any:
        calls.append(name)
        time.sleep(0.05)  # widen the window for a second loader
        return real(name)

    monkeypatch.setattr(tokens, "_encoders", {})
    monkeypatch.setattr(tokens, "_load", slow_load)
    results: list[int] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                results.append(count_tokens("User prefers concise answers", "cl100k_base"))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert calls == ["cl100k_base"]
    assert set(results) == {count_tokens("User prefers concise answers", "cl100k_base")}
    assert tokens._encoder("cl100k_base") is tokens._encoder("cl100k_base")


def test_works_offline_without_downloads() -> None:
    """A fresh process with every socket refused still loads both encodings."""
    script = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network is off in this test')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "from memorybank.rules.tokens import count_tokens\n"
        "print(count_tokens('hello world'), count_tokens('hello world', 'cl100k_base'))\n"
    )
    env = {"PATH": "", "HOME": "/nonexistent", "HTTPS_PROXY": "http://127.0.0.1:9"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "2"]

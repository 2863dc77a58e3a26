"""OpenAIEmbedder against a real HTTP server speaking the /v1/embeddings protocol."""

from __future__ import annotations

import hashlib
import json
import random
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memorybank.errors import ConfigurationError, ProviderError, ValidationError
from memorybank.providers import httpretry
from memorybank.providers.embedders import Embedder, OpenAIEmbedder

DIM = 8
API_KEY = "sk-test-SECRET-0123456789abcdef"


def fake_vector(text: str, dim: int = DIM) -> list[float]:
    """Deterministic, unnormalised vector derived from a hash of the text."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i] - 127.5) / 10.0 for i in range(dim)]


def unit(vector: list[float]) -> np.ndarray[Any, np.dtype[np.float32]]:
    arr = np.asarray(vector, dtype=np.float32)
    return arr / np.linalg.norm(arr)


@dataclass
class Scripted:
    """One canned answer the server gives before falling back to normal behaviour."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeProvider:
    dim: int = DIM
    shuffle: bool = False
    script: list[Scripted] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def push(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.script.append(Scripted(status, raw, headers or {}))


def make_handler(provider: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                body = None
            with provider.lock:
                provider.requests.append(
                    {
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "body": body,
                    }
                )
                scripted = provider.script.pop(0) if provider.script else None
            if scripted is not None:
                self._send(scripted.status, scripted.body, scripted.headers)
                return
            if self.path != "/v1/embeddings" or not isinstance(body, dict):
                self._send(404, b'{"error": {"message": "not found"}}', {})
                return
            data = [
                {"object": "embedding", "index": i, "embedding": fake_vector(t, provider.dim)}
                for i, t in enumerate(body["input"])
            ]
            if provider.shuffle:
                random.Random(len(data)).shuffle(data)
            answer = {"object": "list", "model": body["model"], "data": data}
            self._send(200, json.dumps(answer).encode(), {})

    return Handler


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    state = FakeProvider()
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def make_embedder() -> Iterator[Any]:
    created: list[OpenAIEmbedder] = []

    def make(base_url: str, **kwargs: Any) -> OpenAIEmbedder:
        kwargs.setdefault("backoff", 0.01)
        emb = OpenAIEmbedder(base_url, kwargs.pop("model", "test-embed"), **kwargs)
        created.append(emb)
        return emb

    yield make
    for emb in created:
        emb.close()


def test_basic_embedding(provider: FakeProvider, make_embedder: Any) -> None:
    emb = make_embedder(provider.base_url)
    assert emb.model_id == "openai-compatible:test-embed"
    vectors = emb.embed(["alpha", "beta"])
    assert vectors.shape == (2, DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(vectors[0], unit(fake_vector("alpha")), atol=1e-6)
    request = provider.requests[0]
    assert request["path"] == "/v1/embeddings"
    assert request["body"] == {"model": "test-embed", "input": ["alpha", "beta"]}


def test_satisfies_protocol(provider: FakeProvider, make_embedder: Any) -> None:
    # On Python 3.11, isinstance() against a runtime-checkable Protocol reads every
    # property, so with an unknown dimension it sends the probe request.
    assert isinstance(make_embedder(provider.base_url, dimension=DIM), Embedder)
    assert provider.requests == []


def test_trailing_slash_in_base_url(provider: FakeProvider, make_embedder: Any) -> None:
    emb = make_embedder(provider.base_url + "/")
    emb.embed(["x"])
    assert provider.requests[0]["path"] == "/v1/embeddings"


def test_batching_keeps_order(provider: FakeProvider, make_embedder: Any) -> None:
    provider.shuffle = True
    emb = make_embedder(provider.base_url, batch_size=2)
    texts = ["one", "two", "three", "four", "five"]
    vectors = emb.embed(texts)
    assert [r["body"]["input"] for r in provider.requests] == [
        ["one", "two"],
        ["three", "four"],
        ["five"],
    ]
    expected = np.vstack([unit(fake_vector(t)) for t in texts])
    np.testing.assert_allclose(vectors, expected, atol=1e-6)


def test_shuffled_answer_ordered_by_index(provider: FakeProvider, make_embedder: Any) -> None:
    texts = [f"text {i}" for i in range(10)]
    data = [{"index": i, "embedding": fake_vector(t)} for i, t in enumerate(texts)]
    data.reverse()
    provider.push(200, {"data": data})
    vectors = make_embedder(provider.base_url).embed(texts)
    np.testing.assert_allclose(vectors, np.vstack([unit(fake_vector(t)) for t in texts]), atol=1e-6)


def test_auth_header_sent(provider: FakeProvider, make_embedder: Any) -> None:
    make_embedder(provider.base_url, api_key=API_KEY).embed(["x"])
    assert provider.requests[0]["authorization"] == f"Bearer {API_KEY}"


def test_no_auth_header_without_key(provider: FakeProvider, make_embedder: Any) -> None:
    make_embedder(provider.base_url).embed(["x"])
    assert provider.requests[0]["authorization"] is None


def test_retry_on_500_then_success(provider: FakeProvider, make_embedder: Any) -> None:
    provider.push(500, {"error": {"message": "overloaded"}})
    provider.push(503, b"Service Unavailable")
    vectors = make_embedder(provider.base_url).embed(["x"])
    assert len(provider.requests) == 3
    np.testing.assert_allclose(vectors[0], unit(fake_vector("x")), atol=1e-6)


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The pauses the retry loop asks for, in order (it waits on ``time.sleep``; recording
    the request instead of timing it keeps the test true on a machine of any speed)."""
    asked: list[float] = []
    monkeypatch.setattr(httpretry.time, "sleep", asked.append)
    return asked


def test_429_with_retry_after_zero(
    provider: FakeProvider, make_embedder: Any, waits: list[float]
) -> None:
    provider.push(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
    emb = make_embedder(provider.base_url, backoff=5.0)  # Retry-After wins over the backoff
    vectors = emb.embed(["x"])
    assert waits == [0.0]
    assert len(provider.requests) == 2
    assert vectors.shape == (1, DIM)


def test_retries_exhausted(provider: FakeProvider, make_embedder: Any) -> None:
    for _ in range(3):
        provider.push(502, {"error": {"message": "bad gateway upstream"}})
    with pytest.raises(ProviderError, match=r"3 attempts.*502") as info:
        make_embedder(provider.base_url, max_retries=2).embed(["x"])
    assert "bad gateway upstream" not in str(info.value)  # the answer is never echoed
    assert len(provider.requests) == 3


def test_401_not_retried_and_key_not_leaked(provider: FakeProvider, make_embedder: Any) -> None:
    provider.push(
        401,
        {"error": {"message": f"Incorrect API key provided: {API_KEY}", "type": "auth"}},
    )
    emb = make_embedder(provider.base_url, api_key=API_KEY)
    with pytest.raises(ProviderError) as info:
        emb.embed(["x"])
    message = str(info.value)
    assert "401" in message
    assert "check the API key" in message
    assert "Incorrect API key provided" not in message  # the answer is never echoed
    assert API_KEY not in message
    assert "SECRET" not in message
    assert len(provider.requests) == 1


def test_400_plain_error_string(provider: FakeProvider, make_embedder: Any) -> None:
    provider.push(400, {"error": "model 'nope' not found"})  # Ollama's error shape
    with pytest.raises(ProviderError, match=r"400.*check the model name") as info:
        make_embedder(provider.base_url).embed(["x"])
    assert "nope" not in str(info.value)  # the answer is never echoed
    assert len(provider.requests) == 1


def test_malformed_json(provider: FakeProvider, make_embedder: Any) -> None:
    provider.push(200, b"{this is not json")
    with pytest.raises(ProviderError, match="not JSON"):
        make_embedder(provider.base_url).embed(["x"])
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"object": "list"}, "'data'"),
        ({"data": []}, "0 embeddings for 1 texts"),
        ({"data": [{"index": 0, "embedding": ["a", "b"]}]}, "non-numeric"),
        ({"data": [{"index": 0, "embedding": [True, 1.0]}]}, "non-numeric"),
        ({"data": [{"index": 0}]}, "no embedding"),
        ({"data": [{"index": 5, "embedding": [1.0]}]}, "indexes"),
        ([1, 2, 3], "'data'"),
    ],
)
def test_malformed_answers(
    provider: FakeProvider, make_embedder: Any, body: Any, match: str
) -> None:
    provider.push(200, body)
    with pytest.raises(ProviderError, match=match):
        make_embedder(provider.base_url).embed(["x"])


def test_ragged_answer(provider: FakeProvider, make_embedder: Any) -> None:
    provider.push(
        200, {"data": [{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [1.0]}]}
    )
    with pytest.raises(ProviderError, match="different lengths"):
        make_embedder(provider.base_url).embed(["a", "b"])


def test_connection_refused(make_embedder: Any, waits: list[float]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    emb = make_embedder(f"http://127.0.0.1:{port}/v1", api_key=API_KEY, max_retries=2)
    with pytest.raises(ProviderError, match=r"3 attempts.*connect") as info:
        emb.embed(["x"])
    assert waits == [0.01, 0.02]  # the backoff between the tries, and no more
    assert API_KEY not in str(info.value)


def test_dimension_learned_from_first_answer(provider: FakeProvider, make_embedder: Any) -> None:
    provider.dim = 12
    emb = make_embedder(provider.base_url)
    emb.embed(["hello"])
    assert emb.dimension == 12
    assert len(provider.requests) == 1  # no probe needed


def test_dimension_probe(provider: FakeProvider, make_embedder: Any) -> None:
    provider.dim = 5
    emb = make_embedder(provider.base_url)
    assert emb.dimension == 5
    assert provider.requests[0]["body"]["input"] == ["dimension probe"]
    assert emb.dimension == 5
    assert len(provider.requests) == 1


def test_dimension_given_is_checked(provider: FakeProvider, make_embedder: Any) -> None:
    emb = make_embedder(provider.base_url, dimension=16)
    assert emb.dimension == 16
    assert provider.requests == []
    with pytest.raises(ProviderError, match="8-dimensional.*16"):
        emb.embed(["x"])


def test_dimension_change_between_calls(provider: FakeProvider, make_embedder: Any) -> None:
    emb = make_embedder(provider.base_url)
    emb.embed(["x"])
    provider.dim = 4
    with pytest.raises(ProviderError, match="4-dimensional"):
        emb.embed(["y"])


def test_empty_input(provider: FakeProvider, make_embedder: Any) -> None:
    emb = make_embedder(provider.base_url, dimension=DIM)
    vectors = emb.embed([])
    assert vectors.shape == (0, DIM)
    assert vectors.dtype == np.float32
    assert provider.requests == []


def test_rejects_bad_input_and_config(provider: FakeProvider, make_embedder: Any) -> None:
    emb = make_embedder(provider.base_url)
    with pytest.raises(ValidationError):
        emb.embed("one string")
    with pytest.raises(ValidationError):
        emb.embed([None])
    with pytest.raises(ConfigurationError):
        OpenAIEmbedder("localhost:1234/v1", "m")
    with pytest.raises(ConfigurationError):
        OpenAIEmbedder("http://127.0.0.1:notaport/v1", "m")
    with pytest.raises(ConfigurationError):
        OpenAIEmbedder(provider.base_url, "m", batch_size=0)


def test_closed_embedder(provider: FakeProvider) -> None:
    emb = OpenAIEmbedder(provider.base_url, "m")
    emb.close()
    with pytest.raises(ProviderError, match="closed"):
        emb.embed(["x"])

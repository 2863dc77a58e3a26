"""Issue 17, finding 4: a user's provider URL must not make the server read internal services.

The attack, for real: the memorybank server on a loopback port (uvicorn), a user who sets their
LLM provider's ``base_url`` to an "internal" HTTP service on 127.0.0.1 that answers
``SECRET-INTERNAL-DATA``, then asks ``POST /api/providers/llm/check``. Refused at save time for
a literal address, at connect time for a name (``localhost``), never echoed when the operator
allows private addresses; local mode and the operator's setting keep working providers working.
The transport is also tested on its own: the address it checks is the one it connects to.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from chat_server import ChatServer, running_chat_server
from memorybank import MemoryBank
from memorybank.errors import ProviderError, ValidationError
from memorybank.providers.embedders.openai import OpenAIEmbedder
from memorybank.providers.llm import ChatClient
from memorybank.providers.netguard import (
    AddressPolicy,
    AddressRefused,
    address_kind,
    guarded_transport,
    literal_address,
    system_resolver,
    url_problem,
)
from server_helpers import World, make_world, serving

SECRET = "SECRET-INTERNAL-DATA"
PUBLIC = AddressPolicy()
LOCAL = AddressPolicy.for_users(allow_private=False, local_mode=True)
PRIVATE = AddressPolicy.for_users(allow_private=True, local_mode=False)


# -- an "internal" service on loopback, and the server under attack ---------------------------


@dataclass
class Internal:
    """A service that trusts its network: every request gets ``status`` and ``body``."""

    status: int = 500
    body: bytes = SECRET.encode()
    content_type: str = "text/plain"
    requests: list[dict[str, str]] = field(default_factory=list)
    port: int = 0

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}/v1"


@contextmanager
def running_internal(state: Internal, *, close: bool = False) -> Iterator[Internal]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0 closes the connection after each answer, so each request connects anew.
        protocol_version = "HTTP/1.0" if close else "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            pass

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            state.requests.append({"path": self.path, "host": self.headers.get("Host", "")})
            self.send_response(state.status)
            self.send_header("Content-Type", state.content_type)
            self.send_header("Content-Length", str(len(state.body)))
            self.send_header("Retry-After", "0")  # the clients' retries need not wait
            self.end_headers()
            self.wfile.write(state.body)

        do_GET = do_POST = _answer  # noqa: N815 - http.server naming

    with serving_http(Handler) as port:
        state.port = port
        yield state


@contextmanager
def serving_http(
    handler: type[BaseHTTPRequestHandler], context: ssl.SSLContext | None = None
) -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    if context is not None:
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield int(httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def internal() -> Iterator[Internal]:
    with running_internal(Internal()) as state:
        yield state


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with running_chat_server() as server:
        yield server


def put_llm(client: httpx.Client, headers: dict[str, str], base_url: str) -> httpx.Response:
    return client.put(
        "/api/settings/providers/llm",
        json={"base_url": base_url, "model": "m", "api_key": "sk-user-key-0123456789"},
        headers=headers,
    )


def check(client: httpx.Client, headers: dict[str, str]) -> httpx.Response:
    return client.post("/api/providers/llm/check", json={}, headers=headers)


# -- the attack against the server ------------------------------------------------------------


def test_auth_mode_refuses_a_literal_loopback_provider_when_saved(
    bank: MemoryBank, internal: Internal
) -> None:
    world = make_world(bank)
    h = world.auth("member")
    with serving(world.app) as client:
        for url in (
            internal.url(),
            internal.url("127.1"),
            internal.url("2130706433"),
            internal.url("[::ffff:127.0.0.1]"),
            f"http://[::1]:{internal.port}/v1",
        ):
            refused = put_llm(client, h, url)
            assert refused.status_code == 422, (url, refused.text)
            error = refused.json()["error"]
            assert "loopback" in error and "MEMORYBANK_PROVIDER_ALLOW_PRIVATE" in error
        metadata = put_llm(client, h, "http://169.254.169.254/latest/meta-data")
        assert metadata.status_code == 422 and "cloud metadata" in metadata.json()["error"]
        private = put_llm(client, h, "http://10.0.0.7:8000/v1")
        assert private.status_code == 422 and "private" in private.json()["error"]
        assert client.get("/api/settings/providers", headers=h).json() == []
    assert internal.requests == []


def test_auth_mode_refuses_a_name_that_resolves_to_loopback_when_connecting(
    bank: MemoryBank, internal: Internal
) -> None:
    world = make_world(bank)
    h = world.auth("member")
    with serving(world.app) as client:
        # A name is not resolved when saved: what it resolves to then may change (rebinding).
        assert put_llm(client, h, internal.url("localhost")).status_code == 200
        answer = check(client, h)
    assert answer.status_code == 200
    result = answer.json()
    assert result["success"] is False
    assert "not contacted" in result["error"] and "loopback" in result["error"]
    assert SECRET not in answer.text
    assert internal.requests == []  # refused before connecting


def test_the_query_string_trick_is_refused(bank: MemoryBank, internal: Internal) -> None:
    world = make_world(bank, provider_allow_private=True)  # even where loopback is allowed
    h = world.auth("member")
    with serving(world.app) as client:
        for url in (
            f"{internal.url()}/internal/admin?x=",
            f"{internal.url()}?",
            f"{internal.url()}#",
            f"http://user:pass@127.0.0.1:{internal.port}/v1",
            "ftp://127.0.0.1/v1",
            "http:///v1",
        ):
            refused = put_llm(client, h, url)
            assert refused.status_code == 422, (url, refused.text)
            assert "base_url" in refused.json()["error"]
        query = put_llm(client, h, f"{internal.url()}/internal/admin?x=")
        assert "query string" in query.json()["error"]
    assert internal.requests == []


@pytest.mark.parametrize(
    ("status", "body", "content_type", "said"),
    [
        (500, SECRET.encode(), "text/plain", "HTTP 500"),
        (200, f"<html>{SECRET}</html>".encode(), "text/html", "not JSON"),
        (200, json.dumps({"secret": SECRET}).encode(), "application/json", "choices"),
        (400, json.dumps({"error": {"message": SECRET}}).encode(), "application/json", "HTTP 400"),
        (401, json.dumps({"detail": SECRET}).encode(), "application/json", "check the API key"),
        (404, SECRET.encode(), "text/plain", "check the base URL"),
        (302, SECRET.encode(), "text/plain", "HTTP 302"),
    ],
)
def test_check_never_echoes_what_the_provider_answered(
    bank: MemoryBank, status: int, body: bytes, content_type: str, said: str
) -> None:
    world = make_world(bank, provider_allow_private=True)  # the operator allows loopback
    h = world.auth("member")
    state = Internal(status=status, body=body, content_type=content_type)
    with running_internal(state), serving(world.app) as client:
        assert put_llm(client, h, state.url()).status_code == 200
        answer = check(client, h)
    assert state.requests, "the allowed provider was contacted"
    assert answer.status_code == 200
    assert answer.json()["success"] is False
    assert said in answer.json()["error"]
    assert SECRET not in answer.text


def test_local_mode_reaches_a_loopback_provider(bank: MemoryBank, chat: ChatServer) -> None:
    world = make_world(bank, users=False)
    with serving(world.app) as client:
        for host in ("127.0.0.1", "localhost"):
            url = f"http://{host}:{chat.port}/v1"
            assert put_llm(client, {}, url).status_code == 200
            chat.reply({"ok": True})
            assert check(client, {}).json() == {"success": True, "model": "m"}
        # Loopback only: private networks and metadata stay refused.
        assert put_llm(client, {}, "http://192.168.1.20:11434/v1").status_code == 422
        assert put_llm(client, {}, "http://169.254.169.254/").status_code == 422
    assert len(chat.requests) == 2


def test_the_operator_setting_allows_private_addresses(bank: MemoryBank, chat: ChatServer) -> None:
    world = make_world(bank, provider_allow_private=True)
    h = world.auth("member")
    with serving(world.app) as client:
        for url in ("http://10.0.0.7:8000/v1", "http://192.168.1.20/v1", "http://[fd12::1]/v1"):
            assert put_llm(client, h, url).status_code == 200, url
        # … but never cloud metadata
        assert put_llm(client, h, "http://169.254.169.254/v1").status_code == 422
        assert put_llm(client, h, "http://[fd00:ec2::254]/v1").status_code == 422
        assert put_llm(client, h, chat.base_url).status_code == 200
        chat.reply({"ok": True})
        assert check(client, h).json() == {"success": True, "model": "m"}


def test_set_provider_says_what_to_fix(world_accounts: World) -> None:
    accounts = world_accounts.accounts
    with pytest.raises(ValidationError, match="query string") as info:
        accounts.set_provider("member", "llm", base_url="https://api.example.com/v1?x=", model="m")
    assert info.value.field == "base_url"
    with pytest.raises(ValidationError, match=r"127\.0\.0\.1, a loopback address"):
        accounts.set_provider(
            "member", "llm", base_url="http://127.0.0.1/v1", model="m", address_policy=PUBLIC
        )
    # Without a policy (the library, the operator's own tooling) a literal is not judged.
    saved = accounts.set_provider("member", "llm", base_url="http://127.0.0.1/v1", model="m")
    assert saved.base_url == "http://127.0.0.1/v1"


@pytest.fixture
def world_accounts(bank: MemoryBank) -> World:
    return make_world(bank)


# -- the clients with a policy ------------------------------------------------------------------


def test_chat_client_with_a_policy_does_not_connect_nor_retry(chat: ChatServer) -> None:
    with ChatClient(f"http://localhost:{chat.port}/v1", "m", address_policy=PUBLIC) as llm:
        started = time.monotonic()
        with pytest.raises(ProviderError, match="not contacted.*loopback"):
            llm.complete_json([{"role": "user", "content": "hi"}], "x", {"type": "object"})
    assert time.monotonic() - started < 1.0  # no backoff: a refusal is not a network failure
    assert chat.requests == []
    with ChatClient(chat.base_url, "m", address_policy=LOCAL) as llm:
        chat.reply({"ok": True})
        assert llm.complete_json([{"role": "user", "content": "hi"}], "x", {}) == {"ok": True}


def test_embedder_with_a_policy(internal: Internal) -> None:
    internal.status, internal.content_type = 200, "application/json"
    internal.body = json.dumps({"data": [{"index": 0, "embedding": [3.0, 4.0]}]}).encode()
    refused = OpenAIEmbedder(internal.url("localhost"), "e", address_policy=PUBLIC)
    with pytest.raises(ProviderError, match="not contacted.*loopback"):
        refused.embed(["x"])
    refused.close()
    assert internal.requests == []
    allowed = OpenAIEmbedder(internal.url("localhost"), "e", address_policy=LOCAL)
    assert allowed.embed(["x"]).tolist() == [[0.6000000238418579, 0.800000011920929]]
    allowed.close()
    internal.status, internal.body = 500, SECRET.encode()
    failing = OpenAIEmbedder(internal.url(), "e", address_policy=LOCAL, max_retries=0)
    with pytest.raises(ProviderError, match="HTTP 500") as info:
        failing.embed(["x"])
    failing.close()
    assert SECRET not in str(info.value)


# -- the transport: the checked address is the connected one -------------------------------


def test_connects_to_the_checked_address_and_keeps_the_host_header(internal: Internal) -> None:
    internal.status, internal.body = 200, b"ok"
    asked: list[str] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["10.9.8.7", "127.0.0.1"]  # the private one is refused, loopback allowed

    transport = guarded_transport(LOCAL, resolver=resolver)
    with httpx.Client(transport=transport) as client:
        answer = client.get(f"http://provider.example:{internal.port}/v1/models")
    assert answer.text == "ok"
    assert asked == ["provider.example"]
    assert internal.requests == [
        {"path": "/v1/models", "host": f"provider.example:{internal.port}"}
    ]


def test_every_connection_is_checked_again_so_rebinding_fails() -> None:
    answers = iter([["127.0.0.1"], ["10.0.0.1"]])  # the name "rebinds" to a private address
    with running_internal(Internal(status=200, body=b"ok"), close=True) as state:
        transport = guarded_transport(LOCAL, resolver=lambda host, port: next(answers))
        with httpx.Client(transport=transport) as client:
            url = f"http://rebind.example:{state.port}/"
            assert client.get(url).text == "ok"
            with pytest.raises(AddressRefused, match="rebind.example resolves to a private"):
                client.get(url)
    assert len(state.requests) == 1


def test_no_allowed_address_means_no_connection(internal: Internal) -> None:
    transport = guarded_transport(PUBLIC, resolver=lambda host, port: ["127.0.0.1", "::1"])
    with httpx.Client(transport=transport) as client:
        with pytest.raises(AddressRefused, match="resolves to a loopback address") as info:
            client.get(f"http://sneaky.example:{internal.port}/")
    assert "127.0.0.1" not in str(info.value)  # a name's addresses are not revealed
    assert internal.requests == []


def test_transport_errors_are_httpx_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with httpx.Client(transport=guarded_transport(LOCAL)) as client:
        with pytest.raises(httpx.ConnectError):
            client.get(f"http://127.0.0.1:{port}/")  # nothing listens

    def unknown(*args: object, **kwargs: object) -> object:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    with pytest.raises(Exception, match="cannot resolve") as info:
        system_resolver("nowhere.example", 80)
    assert type(info.value).__name__ == "ConnectError"


def test_https_verifies_and_sends_sni_for_the_name_while_connecting_to_the_ip(
    tmp_path: Path,
) -> None:
    cert, key = self_signed(tmp_path, "provider.example")
    seen: list[str | None] = []
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)

    def remember_name(sslobj: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        seen.append(name)

    server_context.sni_callback = remember_name  # type: ignore[assignment]

    class Hello(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            body = self.headers.get("Host", "").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    client_context = ssl.create_default_context(cafile=str(cert))
    with serving_http(Hello, server_context) as port:
        transport = guarded_transport(
            LOCAL, resolver=lambda host, p: ["127.0.0.1"], ssl_context=client_context
        )
        with httpx.Client(transport=transport) as client:
            assert client.get(f"https://provider.example:{port}/").text == (
                f"provider.example:{port}"
            )
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED|match"):
                client.get(f"https://other.example:{port}/")  # the certificate names another
    assert seen[0] == "provider.example"


def self_signed(where: Path, name: str) -> tuple[Path, Path]:
    """A certificate for ``name`` (its own CA) and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = where / "cert.pem", where / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


# -- the policy itself ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("8.8.8.8", "public"),
        ("2606:4700:4700::1111", "public"),
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped IPv6
        ("64:ff9b::7f00:1", "loopback"),  # NAT64
        ("2002:7f00:1::", "loopback"),  # 6to4
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.0.1", "private"),
        ("::ffff:192.168.0.1", "private"),
        ("fd12:3456::1", "private"),
        ("100.64.0.1", "shared"),
        ("169.254.1.1", "link-local"),
        ("fe80::1", "link-local"),
        ("169.254.169.254", "cloud metadata"),
        ("::ffff:169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
    ],
)
def test_address_kinds(address: str, kind: str) -> None:
    assert address_kind(ipaddress.ip_address(address)) == kind


@pytest.mark.parametrize(
    ("address", "public", "local", "private"),
    [
        ("8.8.8.8", True, True, True),
        ("127.0.0.1", False, True, True),
        ("::ffff:127.0.0.1", False, True, True),
        ("10.1.2.3", False, False, True),
        ("100.64.0.1", False, False, True),
        ("169.254.1.1", False, False, True),
        ("169.254.169.254", False, False, False),
        ("fd00:ec2::254", False, False, False),
        ("0.0.0.0", False, False, False),
        ("224.0.0.1", False, False, False),
    ],
)
def test_policies(address: str, public: bool, local: bool, private: bool) -> None:
    ip = ipaddress.ip_address(address)
    assert (PUBLIC.refusal(ip) is None, LOCAL.refusal(ip) is None) == (public, local)
    assert (PRIVATE.refusal(ip) is None) is private


def test_literal_spellings_are_recognised_without_dns() -> None:
    for host in ("127.1", "2130706433", "0x7f000001", "0177.0.0.1", "[::1]"):
        found = literal_address(host)
        assert found is not None and found.is_loopback, host
    assert literal_address("localhost") is None
    assert literal_address("api.openai.com") is None


def test_url_shapes() -> None:
    assert url_problem("https://api.openai.com/v1") is None
    assert url_problem("http://localhost:11434/v1", PUBLIC) is None  # a name: checked later
    assert url_problem("http://127.0.0.1:11434/v1", LOCAL) is None
    assert "loopback" in str(url_problem("http://0x7f000001/v1", PUBLIC))
    assert "query string" in str(url_problem("http://h/v1?api-version=1"))
    assert "fragment" in str(url_problem("http://h/v1#x"))
    assert "user name or password" in str(url_problem("http://u:p@h/v1"))
    assert "http:// or https://" in str(url_problem("file:///etc/passwd"))
    assert "spaces" in str(url_problem("http://h/v 1"))
    assert "required" in str(url_problem(""))

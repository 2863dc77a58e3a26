"""Where a user's own provider URL may lead: the address policy, and an HTTP transport that
enforces it on the address it really connects to.

A bring-your-own provider URL makes the server send requests wherever a user says. Pointed at
``127.0.0.1``, ``10.0.0.0/8`` or ``169.254.169.254`` it would reach services that trust the
server's place in the network (server-side request forgery). So, for users' providers only
(the operator's own ``MEMORYBANK_*_BASE_URL`` providers are the operator's choice):

* :func:`url_problem` — the URL's shape: ``http``/``https``, a host, no ``user:pass@``, no
  ``?query`` or ``#fragment`` (a ``?x=`` would swallow the API path appended to it), and, when
  the host is an IP literal in any spelling (``127.1``, ``0x7f000001``), an allowed address.
* :class:`AddressPolicy` — which addresses are allowed: public ones always; loopback when
  the policy says so (local mode, for a local Ollama); private, link-local and shared
  (100.64/10) ones only when the operator allows private addresses; cloud metadata,
  unspecified, multicast and reserved ones never. IPv4 inside IPv6 (``::ffff:a.b.c.d``,
  NAT64, 6to4) is judged as the IPv4 address it carries.
* :func:`guarded_transport` — an ``httpx`` transport whose network backend (httpcore's
  supported ``NetworkBackend`` extension point) resolves the host itself, checks every
  address, and connects to a checked IP; TLS still verifies the certificate of, and sends SNI
  for, the host name, and the ``Host`` header is the URL's. The check is on the connection,
  so a name that resolves to a public address when saved and to ``127.0.0.1`` later (DNS
  rebinding) is refused all the same. A refused address raises :class:`AddressRefused`.

>>> AddressPolicy().refusal(ipaddress.ip_address("127.0.0.1"))
'a loopback address'
>>> AddressPolicy(allow_loopback=True).refusal(ipaddress.ip_address("::ffff:127.0.0.1")) is None
True
>>> url_problem("http://internal.example/admin?x=")
"must not have a query string ('?…'): the API path is appended to the base URL"
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpcore
import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: ``(host, port)`` → the addresses to try, in order (``socket.getaddrinfo`` by default).
Resolver = Callable[[str, int], list[str]]

#: What the operator sets to let users' providers use private addresses.
ALLOW_SETTING = "MEMORYBANK_PROVIDER_ALLOW_PRIVATE"

#: Cloud instance metadata and platform endpoints: never allowed, whatever the settings.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean …
        "169.254.170.2",  # AWS ECS task metadata
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure WireServer
        "192.0.0.192",  # Oracle Cloud
        "fd00:ec2::254",  # AWS over IPv6
    )
)
_SHARED = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT (RFC 6598)
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")

# Kinds of address no policy allows.
_NEVER = ("cloud metadata", "unspecified", "multicast", "reserved")


class AddressRefused(httpx.TransportError):
    """A provider's host is, or resolves to, an address the policy refuses; the message says
    which kind of address and what to change (not retried: it is not a network failure)."""


@dataclass(frozen=True)
class AddressPolicy:
    """Which addresses a user's provider may connect to (public ones always)."""

    allow_loopback: bool = False
    allow_private: bool = False

    @classmethod
    def for_users(cls, *, allow_private: bool, local_mode: bool) -> AddressPolicy:
        """The policy of users' providers: loopback in local mode (the one user runs the
        server on their own machine) or when the operator allows private addresses."""
        return cls(allow_loopback=local_mode or allow_private, allow_private=allow_private)

    def refusal(self, address: IPAddress) -> str | None:
        """Why ``address`` is refused (``'a loopback address'`` …), ``None`` if allowed."""
        kind = address_kind(address)
        if kind == "public":
            return None
        if kind == "loopback" and self.allow_loopback:
            return None
        if kind not in _NEVER and self.allow_private:  # private networks include loopback
            return None
        article = "an" if kind[0] in "aeiou" else "a"
        return f"{article} {kind} address"


def address_kind(address: IPAddress) -> str:
    """``public``, ``loopback``, ``private``, ``link-local``, ``shared`` (100.64/10),
    ``cloud metadata``, ``unspecified``, ``multicast`` or ``reserved``; IPv4 carried in IPv6
    counts as that IPv4 address."""
    address = _unwrap(address)
    if address in METADATA_ADDRESSES:
        return "cloud metadata"
    if address.is_unspecified or address in _THIS_NETWORK:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address in _SHARED:
        return "shared"
    if address.is_reserved:
        return "reserved"
    if address.is_private or not address.is_global:
        return "private"
    return "public"


def _unwrap(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4, IPv4-compatible), else
    itself."""
    if isinstance(address, ipaddress.IPv4Address):
        return address
    carried = address.ipv4_mapped or address.sixtofour
    if carried is not None:
        return carried
    if address in _NAT64 or (address in _IPV4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def literal_address(host: str) -> IPAddress | None:
    """The address a host written as an IP literal stands for, in any spelling the resolver
    accepts (``127.1``, ``2130706433``, ``0x7f.1``, ``[::1]``); ``None`` for a name. No DNS."""
    host = host.strip("[]")
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, flags=socket.AI_NUMERICHOST)
    except (socket.gaierror, UnicodeError, ValueError):
        return None
    return ipaddress.ip_address(str(found[0][4][0]))


def url_problem(url: object, policy: AddressPolicy | None = None) -> str | None:
    """What is wrong with ``url`` as a provider's base URL (to follow ``base_url``), or
    ``None``. With a ``policy``, a host written as an IP literal must be allowed by it
    (names are checked when connecting, on every address they resolve to)."""
    if isinstance(url, str) and "?" in url:
        return "must not have a query string ('?…'): the API path is appended to the base URL"
    if isinstance(url, str) and "#" in url:
        return "must not have a fragment ('#…')"
    return http_url_problem(
        url,
        policy,
        example="the provider's API address, such as https://api.openai.com/v1",
        credentials="send the key as api_key",
        refused_for="users' providers",
    )


def http_url_problem(
    url: object,
    policy: AddressPolicy | None,
    *,
    example: str,
    credentials: str,
    refused_for: str = "users' providers",
) -> str | None:
    """What is wrong with ``url`` as an ``http(s)`` address a user gives the server to call
    (a provider, a webhook), or ``None``: ``example`` says what is expected when it is
    missing, ``credentials`` what to do instead of ``user:pass@``, ``refused_for`` whose
    addresses a refused literal address is named against. With a ``policy``, a host
    written as an IP literal must be allowed by it (names are checked when connecting).

    >>> http_url_problem("ftp://x", None, example="a URL", credentials="sign")
    'must start with http:// or https://'
    """
    if not isinstance(url, str) or not url.strip():
        return f"is required: {example}"
    if any(c.isspace() for c in url):
        return "must not contain spaces"
    if not url.lower().startswith(("http://", "https://")):
        return "must start with http:// or https://"
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        return f"is not a valid URL ({exc})"
    if parsed.userinfo:
        return f"must not hold a user name or password ('user:pass@'): {credentials}"
    if not parsed.host:
        return "has no host"
    address = literal_address(parsed.host)
    reason = policy.refusal(address) if policy is not None and address is not None else None
    if reason is not None:
        advice = refused_advice(policy).replace("users' providers", refused_for)
        return f"points at {address}, {reason}, {advice}"
    return None


def refused_advice(policy: AddressPolicy | None) -> str:
    """What the message of a refused address goes on to say."""
    allowed = "public addresses only"
    if policy is not None and policy.allow_loopback and not policy.allow_private:
        allowed = "public and loopback addresses only"
    return (
        f"which users' providers may not use ({allowed}; the operator can allow private "
        f"networks with {ALLOW_SETTING}=true, never cloud metadata)"
    )


# -- the transport ---------------------------------------------------------------------------


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, in the resolver's order, without repeats."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise httpcore.ConnectError(f"cannot resolve the host {host!r}: {exc}") from exc
    return list(dict.fromkeys(str(entry[4][0]) for entry in found))


class GuardedBackend(httpcore.NetworkBackend):
    """httpcore's synchronous backend, connecting only to addresses ``policy`` allows: the
    host is resolved here and the checked IP handed to the plain backend, so nothing
    resolves the name again between the check and the connection."""

    def __init__(self, policy: AddressPolicy, resolver: Resolver = system_resolver) -> None:
        self._policy = policy
        self._resolve = resolver
        self._plain = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        allowed, refused = self.addresses(host, port)
        if not allowed:
            raise AddressRefused(self._refusal_message(host, refused))
        failure: httpcore.ConnectError | httpcore.ConnectTimeout | None = None
        for address in allowed:
            try:
                return self._plain.connect_tcp(
                    str(address), port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    def addresses(self, host: str, port: int) -> tuple[list[IPAddress], list[IPAddress]]:
        """``host``'s addresses, split into (allowed, refused), each in the resolver's order."""
        allowed: list[IPAddress] = []
        refused: list[IPAddress] = []
        for text in self._resolve(host.strip("[]"), port):
            address = ipaddress.ip_address(text)
            (refused if self._policy.refusal(address) else allowed).append(address)
        return allowed, refused

    def _refusal_message(self, host: str, refused: list[IPAddress]) -> str:
        if not refused:
            return f"the host {host!r} resolves to no address"
        reason = self._policy.refusal(refused[0])
        # A name's address is not shown: its kind is enough, and says less about the network.
        said = f"{refused[0]} is" if literal_address(host) else f"the host {host} resolves to"
        return f"{said} {reason}, {refused_advice(self._policy)}"

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise AddressRefused("users' providers are reached over TCP only, not a Unix socket")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


# httpcore's errors as httpx's, most specific first (what httpx's own transport does).
_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.ProxyError, httpx.ProxyError),
)


@contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for core, mapped in _ERRORS:
            if isinstance(exc, core):
                raise mapped(str(exc)) from exc
        raise


class _ResponseStream(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class GuardedTransport(httpx.BaseTransport):
    """An httpx transport over an httpcore pool whose backend is a :class:`GuardedBackend`
    (HTTP/1.1, no proxy: a proxy would make the connection the policy cannot see)."""

    def __init__(
        self,
        backend: GuardedBackend,
        ssl_context: ssl.SSLContext | None = None,
        *,
        max_connections: int = 20,
    ) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context, network_backend=backend, max_connections=max_connections
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = self._pool.handle_request(core_request)
        assert isinstance(response.stream, Iterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


def guarded_transport(
    policy: AddressPolicy,
    *,
    resolver: Resolver = system_resolver,
    ssl_context: ssl.SSLContext | None = None,
    max_connections: int = 20,
) -> GuardedTransport:
    """An httpx transport that connects only where ``policy`` allows, over at most
    ``max_connections`` connections (``resolver`` and ``ssl_context`` are for tests; the
    default context verifies certificates against certifi's roots, as httpx does)."""
    return GuardedTransport(
        GuardedBackend(policy, resolver), ssl_context, max_connections=max_connections
    )


def guarded_client(
    policy: AddressPolicy,
    *,
    timeout: float | httpx.Timeout,
    headers: dict[str, str],
    max_connections: int = 20,
) -> httpx.Client:
    """An :class:`httpx.Client` for a user's provider: the guarded transport, no redirects
    followed, and nothing from the environment (no proxy, no ``.netrc`` credentials).
    ``max_connections``: how many requests it may have under way at once."""
    return httpx.Client(
        transport=guarded_transport(policy, max_connections=max_connections),
        timeout=timeout,
        headers=headers,
        trust_env=False,
        follow_redirects=False,
    )


__all__ = [
    "ALLOW_SETTING",
    "METADATA_ADDRESSES",
    "AddressPolicy",
    "AddressRefused",
    "GuardedBackend",
    "GuardedTransport",
    "address_kind",
    "guarded_client",
    "guarded_transport",
    "literal_address",
    "system_resolver",
    "http_url_problem",
    "url_problem",
]

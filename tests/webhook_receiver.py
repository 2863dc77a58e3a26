"""A real HTTP receiver of webhooks on 127.0.0.1 for the tests: it answers each request
with the next status of a script (the last one repeats) and keeps what it received."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    url: str
    statuses: list[int]
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    #: Set, the receiver holds every request until the test releases it (``release.set()``).
    hold: threading.Event | None = None
    answered: int = 0  # requests answered so far

    def wait_for(self, count: int, timeout: float = 20) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.received) >= count, f"{len(self.received)} of {count} requests came"
        return list(self.received)


@contextmanager
def receiver(
    statuses: Sequence[int] = (200,), *, delay: float = 0.0, hold: bool = False
) -> Iterator[Receiver]:
    """A receiver answering ``statuses`` in turn (after ``delay`` seconds each; with ``hold``,
    only once the test sets ``hold``: a receiver that answers when the test says so)."""
    state = Receiver(url="", statuses=list(statuses), delay=delay)
    state.hold = threading.Event() if hold else None

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            index = len(state.received)
            state.received.append(Received(dict(self.headers.items()), body))
            time.sleep(state.delay)
            if state.hold is not None:
                state.hold.wait(60)  # a guard against a test that forgets to let go
            status = state.statuses[min(index, len(state.statuses) - 1)]
            self.send_response(status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")
            state.answered += 1

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        if state.hold is not None:
            state.hold.set()
        server.shutdown()
        server.server_close()

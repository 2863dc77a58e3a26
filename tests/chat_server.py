"""A real HTTP server speaking the chat-completions protocol, with scripted replies.

Tests queue what the "model" answers; the server records every request it gets. It runs on
127.0.0.1 on a free port in a thread, so the client under test goes through real sockets.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API_KEY = "sk-test-SECRET-chat-0123456789"


@dataclass
class Raw:
    """An HTTP answer other than a normal completion (an error, a broken body)."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


# A reply is the message content (a dict is sent as its JSON), a Raw answer, or a function
# of the request body returning either (for answers that depend on ids made at run time).
Reply = str | dict[str, Any] | Raw | Callable[[dict[str, Any]], Any]


@dataclass
class ChatServer:
    port: int = 0
    script: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reply(self, *replies: Reply) -> None:
        """Queue answers, given in order to the next requests."""
        with self.lock:
            self.script.extend(replies)

    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]

    def last_user_message(self, index: int = -1) -> str:
        messages = self.requests[index]["body"]["messages"]
        return str([m for m in messages if m["role"] == "user"][-1]["content"])


def completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        }
    ).encode()


def _answer(reply: Reply, body: dict[str, Any]) -> Raw:
    if callable(reply) and not isinstance(reply, Raw):
        reply = reply(body)
    if isinstance(reply, Raw):
        return reply
    content = reply if isinstance(reply, str) else json.dumps(reply)
    return Raw(200, completion(content))


def _handler(server: ChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = json.loads(raw)
            with server.lock:
                server.requests.append(
                    {
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "body": body,
                    }
                )
                reply = server.script.pop(0) if server.script else None
            if reply is None:
                answer = Raw(400, b'{"error": {"message": "no scripted reply left"}}')
            else:
                answer = _answer(reply, body)
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.body)))
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(answer.body)

    return Handler


@contextmanager
def running_chat_server() -> Iterator[ChatServer]:
    state = ChatServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)

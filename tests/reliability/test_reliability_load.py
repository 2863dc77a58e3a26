"""The `memorybank bench load` command, briefly: it starts a server, drives it and reports."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memorybank.cli import app
from memorybank_bench.load import _Http


@pytest.mark.slow
def test_bench_load_runs_briefly(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    result = CliRunner().invoke(
        app,
        ["bench", "load", "--seconds", "2", "--clients", "4", "--workers", "1",
         "--repeat", "0.5", "--json", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["errors"] == 0
    ops = {o["name"]: o for o in report["ops"]}
    assert ops["search"]["count"] > 0 and ops["save"]["count"] > 0
    assert ops["all"]["p95_ms"] >= ops["all"]["p50_ms"] > 0
    assert "searches/s" in result.output
    assert report["workers"] == 1 and report["repeat"] == 0.5
    # Half the searches repeat a recent question: fewer distinct ones than searches, but many.
    assert 0 < report["distinct_searches"] < ops["search"]["count"]
    assert report["server_cpu_ms_per_request"] > 0
    assert report["client_cpu_ms_per_request"] > 0
    assert "searches were distinct" in result.output
    # The host's speed around the run, on the same work as a search's embedding.
    assert report["host_reference_ms"]["before"] > 0 and report["host_reference_ms"]["after"] > 0
    assert "host speed: a query embedding took" in result.output


class _Counting(ThreadingHTTPServer):
    daemon_threads = True
    connections = 0

    def process_request(self, request: Any, client_address: Any) -> None:
        type(self).connections += 1
        super().process_request(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"hello ", b"world"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        body = self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        if self.path == "/close":
            self.send_header("Connection", "close")
        self.close_connection = self.path in ("/close", "/drop")  # "/drop": without saying so
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(201)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_load_client_keeps_its_connection_alive() -> None:
    """The load generator's client reuses one connection, reads chunked bodies, and opens a
    new connection only when the server closed the old one (a new connection per request
    would put the cost of connecting on both sides of the measurement)."""
    server = _Counting(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = _Http(f"http://127.0.0.1:{server.server_address[1]}", {"X-Test": "1"})
    try:
        for i in range(20):
            assert client.request("GET", "/item", {"n": i}) == (200, f"/item?n={i}".encode())
        assert client.request("POST", "/save", body={"fact": "tea"}) == (201, b'{"fact": "tea"}')
        assert client.request("GET", "/chunked") == (200, b"hello world")
        assert _Counting.connections == 1
        assert client.request("GET", "/close") == (200, b"/close")
        assert client.request("GET", "/after") == (200, b"/after")
        assert _Counting.connections == 2
        assert client.request("GET", "/drop") == (200, b"/drop")
        assert client.request("GET", "/again") == (200, b"/again")  # reconnected once
        assert _Counting.connections == 3
    finally:
        client.close()
        server.shutdown()
        server.server_close()

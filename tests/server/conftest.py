"""The fixtures of the web UI's Chromium tests: the browser, a page, and the real server
(what else they share is in ``ui_harness.py``)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from playwright.sync_api import Browser, Page, sync_playwright
from ui_harness import CHROMIUM, LAUNCH_ARGS, MASTER, TIMEOUT_MS, Server

from memorybank import MemoryBank
from memorybank.server.app import create_app
from memorybank.services.accounts import Accounts
from memorybank.settings import Settings

# -- the browser ------------------------------------------------------------------------------


# Module-scoped, not session: Playwright's sync API keeps an event loop running in this thread
# while it is open, and a later test module's asyncio.run() (MCP's) in the same worker would
# fail with "Already running asyncio in this thread".
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.is_file():
        pytest.fail(
            f"{CHROMIUM} is missing: the UI tests need Debian's Chromium. Install it with "
            "`apt-get install -y chromium chromium-driver` (as root), or run `make test`, "
            "which does so when it can.",
            pytrace=False,
        )
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    context.set_default_timeout(TIMEOUT_MS)
    p = context.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield p
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the UI tests' screenshots go: ``ui-screenshots`` in ``$MEMORYBANK_TEST_OUTPUT``
    if set (a folder that outlives the run), else in pytest's temporary folder."""
    chosen = os.environ.get("MEMORYBANK_TEST_OUTPUT")
    folder = (Path(chosen) if chosen else tmp_path_factory.getbasetemp()) / "ui-screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# -- the server -------------------------------------------------------------------------------


@pytest.fixture
def serve(bank: MemoryBank) -> Iterator[Callable[..., Server]]:
    """Start the real app over ``bank`` with uvicorn on a free loopback port.

    ``serve(setup)`` creates users and keys first (auth mode); without users the server runs
    in local mode. Keyword arguments are more settings.
    """
    running: list[tuple[uvicorn.Server, threading.Thread, socket.socket]] = []

    def start(setup: Callable[[Accounts], dict[str, str]] | None = None, **more: Any) -> Server:
        url = f"sqlite:///{bank.store.path}"  # type: ignore[attr-defined]
        settings = Settings(url=url, master_key=MASTER, **more)
        accounts = Accounts.open(bank, settings)
        keys = setup(accounts) if setup else {}
        app = create_app(bank, accounts, settings)  # mounts the UI itself
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        # An open page holds an events stream (SSE) that only a signal would end; a server on
        # a thread gets none, so shutdown stops waiting for it after a second.
        config = uvicorn.Config(app, log_level="warning", ws="none", timeout_graceful_shutdown=1)
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((server, thread, sock))
        deadline = time.monotonic() + 15
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return Server(f"http://127.0.0.1:{port}", bank, accounts, keys)

    yield start
    for server, thread, sock in running:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()

"""The live web UI (issue 21) in real headless Chromium: a tool call through the API makes
the "Remembered" toast appear in an open page (with Undo), pages update without a reload,
the Insights page draws its charts with the server's own Chart.js, and the Webhooks page
sends a test to a real receiver and shows the delivery log."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from playwright.sync_api import Page, expect
from tests.test_ui import MASTER, Server, browser, open_ui, page, shot, sign_in, team
from tests.webhook_receiver import receiver

from memorybank import MemoryBank, tools
from memorybank.accounts import Accounts
from memorybank.model import Caller
from memorybank.server.app import create_app
from memorybank.settings import Settings

__all__ = ["browser", "page"]  # the fixtures, shared with test_ui.py


@pytest.fixture
def serve(bank: MemoryBank) -> Iterator[Callable[..., Server]]:
    """The real app over ``bank`` with uvicorn on a free port (settings as given)."""
    running: list[tuple[uvicorn.Server, threading.Thread, socket.socket]] = []

    def start(setup: Callable[[Accounts], dict[str, str]] | None = None, **more: Any) -> Server:
        url = f"sqlite:///{bank.store.path}"  # type: ignore[attr-defined]
        settings = Settings(url=url, master_key=MASTER, webhook_poll_seconds=0.1, **more)
        accounts = Accounts.open(bank, settings)
        keys = setup(accounts) if setup else {}
        app = create_app(bank, accounts, settings)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(
            uvicorn.Config(app, log_level="warning", ws="none", timeout_graceful_shutdown=1)
        )
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        running.append((server, thread, sock))
        deadline = time.monotonic() + 15
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return Server(f"http://127.0.0.1:{sock.getsockname()[1]}", bank, accounts, keys)

    yield start
    for server, thread, sock in running:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def go_live(page: Page, url: str, tab: str = "memory") -> None:
    open_ui(page, url, tab)
    expect(page.locator("body")).to_have_attribute("data-live", "1")


def tool(url: str, name: str, arguments: dict[str, Any], key: str | None = None) -> Any:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    answer = httpx.post(
        f"{url}/api/tools/default/call",
        json={"name": name, "arguments": arguments},
        headers=headers,
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


def test_an_ai_save_shows_the_remembered_toast_and_undo_forgets_it(
    page: Page, serve: Callable[..., Server]
) -> None:
    server = serve()
    go_live(page, server.url)
    expect(page.locator("#memory-empty")).to_be_visible()

    saved = tool(server.url, "remember", {"fact": "User goes rock climbing on Sundays"})
    assert saved["success"], saved
    toast = page.locator(".toast")
    expect(toast).to_have_text(re.compile("Remembered: User goes rock climbing on Sundays"))
    # The list follows without a reload.
    expect(page.locator("#memory-list .memory .content")).to_have_text(
        ["User goes rock climbing on Sundays"]
    )
    shot(page, "toast")
    toast.get_by_role("button", name="Undo").click()
    expect(toast).to_contain_text("Undone")
    expect(page.locator("#memory-list .memory")).to_have_count(0)
    assert server.bank.list("local") == []


def test_an_ai_forget_says_what_was_forgotten_and_hand_edits_make_no_toast(
    page: Page, serve: Callable[..., Server]
) -> None:
    server = serve()
    kept = server.bank.save("local", "User's cat is named Miso", "relationship", source="user")
    go_live(page, server.url)
    expect(page.locator("#memory-list .memory")).to_have_count(1)

    added = httpx.post(f"{server.url}/api/memory/user", json={"fact": "I live in Leeds"})
    assert added.status_code == 201
    expect(page.locator("#memory-list .memory")).to_have_count(2)  # live, by hand: no toast
    forgot = tool(server.url, "forget", {"id": str(kept.memory_id)})
    assert forgot["success"], forgot
    expect(
        page.locator(".toast").filter(has_text="Forgot: User's cat is named Miso")
    ).to_be_visible()
    expect(page.locator("#memory-list .memory .content")).to_have_text(["User lives in Leeds"])
    assert page.locator(".toast").count() == 1


def test_insights_page_draws_the_success_metrics(page: Page, serve: Callable[..., Server]) -> None:
    def org(accounts: Accounts) -> dict[str, str]:
        keys = team(accounts)
        accounts.add_org_member("acme", "olga", "admin")
        for user in ("adam", "mia"):
            accounts.add_org_member("acme", user)
        accounts.create_project("hermes", owner="olga", name="Hermes", org_id="acme")
        return keys

    server = serve(org)
    bank = server.bank
    for user in ("olga", "adam", "mia"):
        bank.add_org_member("acme", user)
    facts = ["User prefers tea", "User's sister is Maria", "User works as a nurse"]
    for i, fact in enumerate(facts):
        bank.save("olga", fact)
        if i < 2:
            bank.save("adam", fact.replace("User", "User also"))
    bank.save("olga", "Hermes deploys on Fridays", project_id="hermes")
    bank.save("olga", "User prefers tea")  # refused: a duplicate
    bank.search("olga", "tea")
    bank.search("mia", "anything about sailing")
    tools.system_prompt(bank, Caller(user_id="olga"), "default")  # a memory block of 3 facts
    gone = bank.search("adam", "sister")[0].memory.id
    bank.delete(gone, "adam")
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(server.url)
    sign_in(page, server.keys["olga"])
    page.get_by_role("tab", name="Insights").click()
    expect(page.locator("body")).to_have_attribute("data-insights", "1")
    kpis = page.locator("#insights-kpis")
    expect(kpis).to_contain_text("Recall hit rate")
    expect(kpis.locator(".kpi").filter(has_text="Recall hit rate")).to_contain_text("67 % of 3")
    expect(kpis.locator(".kpi").filter(has_text="Duplicates")).to_contain_text("1 · 0")
    expect(kpis.locator(".kpi").filter(has_text="Deleted within 7 days")).to_contain_text("of 6")
    drawn = page.evaluate(
        "() => ['chart-users', 'chart-projects', 'chart-deleted', 'chart-saves']"
        ".map((id) => !!window.Chart.getChart(id))"
    )
    assert drawn == [True, True, True, True]
    users = page.evaluate("() => window.Chart.getChart('chart-users').data.datasets[0].data")
    assert users == [1, 2, 0, 0, 0]  # mia 0; olga 3 and adam 1 (one deleted) in 1–4
    assert all(u.startswith(server.url) for u in requested), requested
    assert any(u.endswith("/ui/chart.umd.min.js") for u in requested)
    shot(page, "insights")

    sign_in(page, server.keys["mia"])
    page.get_by_role("tab", name="Insights").click()
    expect(page.locator("#insights-status")).to_have_text("Insights are for org admins.")


def test_webhooks_page_sends_a_test_and_shows_the_log(
    page: Page, serve: Callable[..., Server]
) -> None:
    server = serve(team, provider_allow_private=True)
    with receiver() as rx:
        page.goto(server.url)
        sign_in(page, server.keys["olga"])
        page.get_by_role("tab", name="Webhooks").click()
        page.get_by_label("Endpoint URL").fill(rx.url)
        page.get_by_role("button", name="Add webhook").click()
        expect(page.locator("#wh-secret")).to_contain_text("whsec_")
        card = page.locator("#wh-list .webhook")
        expect(card).to_have_count(1)
        card.get_by_role("button", name="Send test").click()
        body = json.loads(rx.wait_for(1)[0].body)
        assert body["type"] == "test"
        card.get_by_role("button", name="Delivery log").click()
        expect(card.locator(".delivery-status").first).to_have_text("delivered")
        server.bank.save("adam", "Apollo launches in May", project_id="apollo")
        events = [json.loads(r.body) for r in rx.wait_for(2)]
        assert events[1]["event"]["content"] == "Apollo launches in May"
        shot(page, "webhooks")

        sign_in(page, server.keys["mia"])  # a member manages no webhook, sees none
        page.get_by_role("tab", name="Webhooks").click()
        expect(page.locator("#wh-none")).to_be_visible()
        expect(page.locator("#wh-form")).to_be_hidden()
        expect(page.locator("#wh-list .webhook")).to_have_count(0)


def test_the_workspace_page_follows_other_members_changes(
    page: Page, serve: Callable[..., Server]
) -> None:
    server = serve(team)
    page.goto(server.url)
    sign_in(page, server.keys["mia"])
    page.get_by_role("tab", name="Workspace memory").click()
    expect(page.locator("#ws-empty")).to_be_visible()
    expect(page.locator("body")).to_have_attribute("data-live", "1")
    auth = {"Authorization": f"Bearer {server.keys['adam']}"}
    added = httpx.post(
        f"{server.url}/api/memory/drive/apollo", json={"fact": "Apollo ships in May"}, headers=auth
    )
    assert added.status_code == 201, added.text
    expect(page.locator("#ws-list .memory .content")).to_have_text(["Apollo ships in May"])
    # Another user's private memory is never seen, and others' changes make no toast.
    otto = {"Authorization": f"Bearer {server.keys['otto']}"}
    httpx.post(f"{server.url}/api/memory/user", json={"fact": "I like sailing"}, headers=otto)
    tool(server.url, "remember", {"fact": "User likes jazz"}, server.keys["olga"])
    page.wait_for_timeout(800)
    assert page.locator(".toast").count() == 0
    assert page.locator("#memory-list .memory").count() == 0

"""What the Chromium tests of the web UI share (``test_ui*.py``; their fixtures, ``browser``,
``page`` and ``serve``, are in this folder's ``conftest.py``): where Chromium is and how it is
started, the server they drive, and the steps most tests take.

Chromium comes from Debian (``make test`` installs it as root when missing); Playwright's own
browser download is never used. Without ``/usr/bin/chromium`` these tests fail, on purpose.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, Page, expect

from memorybank import MemoryBank
from memorybank.services.accounts import Accounts

CHROMIUM = Path("/usr/bin/chromium")
LAUNCH_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DOCS = Path(__file__).resolve().parents[2] / "docs"
MASTER = "ui-test-master-key-not-a-secret"
TIMEOUT_MS = 15_000
# Assertions wait as long as actions do (Playwright's own default is 5 s): CI runs beside other
# work, and a page that is right but slow must not fail.
expect.set_options(timeout=TIMEOUT_MS)
#: The pages of the UI, by the name of their tab (the URL's #fragment), in the tab bar's order.
TABS = ("memory", "workspace", "forget", "tidy", "playground", "insights", "webhooks")
#: The widths the layout tests drive: a desktop's and a phone's.
WIDTHS = {"desktop": 1280, "phone": 390}


@contextmanager
def sized_page(browser: Browser, width: int, desktop_height: int) -> Iterator[Page]:
    """A page ``width`` px wide (under 600: a 844 px high touch device), failing the test on
    any JavaScript error the page raised."""
    phone = width < 600
    context = browser.new_context(
        viewport={"width": width, "height": 844 if phone else desktop_height},
        is_mobile=phone,
        has_touch=phone,
    )
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@dataclass
class Server:
    url: str
    bank: MemoryBank
    accounts: Accounts
    keys: dict[str, str] = field(default_factory=dict)


def team(accounts: Accounts) -> dict[str, str]:
    """Owner Olga, admin Adam and member Mia in project Apollo; outsider Otto in none."""
    keys = {}
    for user, name in (("olga", "Olga"), ("adam", "Adam"), ("mia", "Mia"), ("otto", "Otto")):
        accounts.create_user(user, name=name)
        keys[user] = accounts.create_key(user)[1]
    accounts.create_project("apollo", owner="olga", name="Apollo")
    accounts.add_member("apollo", "adam", "admin")
    accounts.add_member("apollo", "mia", "member")
    return keys


def open_ui(page: Page, url: str, tab: str = "memory") -> None:
    page.goto(f"{url}/#{tab}")
    expect(page.locator("body")).to_have_attribute("data-ready", "1")


def sign_in(page: Page, key: str) -> None:
    page.get_by_label("API key").fill(key)
    page.get_by_label("API key").press("Enter")
    expect(page.locator("body")).to_have_attribute("data-ready", "1")


def go_live(page: Page, url: str, tab: str = "memory") -> None:
    open_ui(page, url, tab)
    expect(page.locator("body")).to_have_attribute("data-live", "1")


def tool(url: str, name: str, arguments: dict[str, Any], key: str | None = None) -> Any:
    """Call a tool of the default profile over the API, as an assistant would."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    answer = httpx.post(
        f"{url}/api/tools/default/call",
        json={"name": name, "arguments": arguments},
        headers=headers,
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]

"""The web UI, driven in real headless Chromium (Playwright) against the real server
(``ui_harness.py`` and ``conftest.py``: the browser, the server and the steps tests share).
Screenshots of each page go to ``docs/ui-*.png``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, Route, expect
from tests.webhook_receiver import receiver
from ui_harness import DOCS, TIMEOUT_MS, Server, go_live, open_ui, sign_in, team, tool

from memorybank import tools
from memorybank.core.records import save_records
from memorybank.model import Caller, Category, Memory, utcnow
from memorybank.services.accounts import Accounts, join_org

# -- helpers ----------------------------------------------------------------------------------


def cards(page: Page, list_id: str = "#memory-list") -> list[str]:
    return page.locator(f"{list_id} .memory .content").all_inner_texts()


def add_fact(page: Page, text: str, category: str = "") -> None:
    before = page.locator("#memory-list .memory").count()
    page.get_by_label("New fact").fill(text)
    page.locator("#add-category").select_option(category)
    page.get_by_role("button", name="Add fact").click()
    expect(page.locator("#memory-list .memory")).to_have_count(before + 1)


#: The height that shows the whole page: it scrolls in a box of its own (above the toasts), so
#: a "full page" screenshot of the window would show only what is in view.
WHOLE_HEIGHT = """() => document.querySelector("#page").scrollHeight +
  document.querySelector("#toasts").offsetHeight"""


def shot(page: Page, name: str) -> None:
    # The committed screenshots in docs/ are refreshed on request only, so a test run leaves the
    # work tree as it was: MEMORYBANK_UI_SCREENSHOTS=1 pytest tests/server/test_ui.py
    size = page.viewport_size
    assert size is not None
    page.set_viewport_size(
        {"width": size["width"], "height": max(size["height"], page.evaluate(WHOLE_HEIGHT))}
    )
    try:
        if os.environ.get("MEMORYBANK_UI_SCREENSHOTS"):
            DOCS.mkdir(exist_ok=True)
            page.screenshot(path=str(DOCS / f"ui-{name}.png"))
        else:
            page.screenshot()
    finally:
        page.set_viewport_size(size)


# -- your memory ------------------------------------------------------------------------------


def test_serves_the_ui_without_external_resources(page: Page, serve: Callable[..., Server]) -> None:
    server = serve()
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    open_ui(page, server.url)
    assert requested and all(u.startswith(server.url) for u in requested), requested
    viewport = page.locator('meta[name="viewport"]').get_attribute("content")
    assert viewport is not None and "width=device-width" in viewport
    # Local mode: no key asked for, and the user is named.
    expect(page.get_by_label("API key")).to_be_hidden()
    expect(page.locator("#whoami")).to_contain_text("local mode")


def test_add_search_filter_edit_delete_export(
    page: Page, serve: Callable[..., Server], tmp_path: Path
) -> None:
    server = serve()
    open_ui(page, server.url)
    expect(page.locator("#memory-empty")).to_be_visible()

    add_fact(page, "I prefer dark mode in every editor", "preference")
    card = page.locator("#memory-list .memory").filter(has_text="dark mode")
    expect(card.locator(".badge")).to_have_text("preference")
    expect(card.locator(".source")).to_have_text("You")
    expect(card.locator("time").first).to_have_attribute("datetime", re.compile(r"^\d{4}-"))
    expect(page.locator("#memory-status")).to_contain_text("Saved")

    add_fact(page, "User lives in Lisbon with two cats", "identity")
    add_fact(page, "My sister Ana is a doctor in Madrid")  # "Automatic": inferred
    sister = page.locator("#memory-list .memory").filter(has_text="sister Ana")
    expect(sister.locator(".badge")).to_have_text("relationship")
    server.bank.delete(server.bank.search("local", "sister Ana", limit=1)[0].memory.id, "local")
    # A fact the assistant saved (source AI) shows as such.
    server.bank.save("local", "User works as a marine biologist in Porto", "identity")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#memory-list .memory")).to_have_count(3)
    ai_card = page.locator("#memory-list .memory").filter(has_text="marine biologist")
    expect(ai_card.locator(".source")).to_have_text("AI")
    expect(page.locator("#memory-count")).to_have_text("3 facts")
    shot(page, "your-memory")

    # Search (Enter submits) puts the match first; the category filter narrows exactly.
    page.get_by_label("Search", exact=True).fill("Lisbon cats")
    page.get_by_label("Search", exact=True).press("Enter")
    expect(page.locator("#memory-list .memory").first).to_contain_text("Lisbon")
    page.get_by_label("Search", exact=True).fill("")
    page.locator("#search-category").select_option("preference")
    expect(page.locator("#memory-list .memory")).to_have_count(1)
    assert cards(page) == ["User prefers dark mode in every editor"]
    page.locator("#search-category").select_option("")
    expect(page.locator("#memory-list .memory")).to_have_count(3)

    # Edit: text and category, saved with Enter.
    lisbon = page.locator("#memory-list .memory").filter(has_text="Lisbon")
    lisbon.get_by_role("button", name=re.compile("^Edit")).click()
    editor = lisbon.get_by_label("Fact text")
    expect(editor).to_be_focused()
    editor.fill("User lives in Porto with two cats")
    lisbon.get_by_label("Category").select_option("context")
    editor.press("Enter")
    porto = page.locator("#memory-list .memory").filter(has_text="Porto with two cats")
    expect(porto.locator(".badge")).to_have_text("context")
    expect(porto.locator(".meta")).to_contain_text("Edited")
    assert not any("Lisbon" in c for c in cards(page))

    # Delete one, after confirming; cancelling keeps it.
    porto.get_by_role("button", name=re.compile("^Delete")).click()
    expect(page.locator("#confirm-dialog")).to_be_visible()
    page.locator("#confirm-no").click()
    expect(page.locator("#memory-list .memory")).to_have_count(3)
    porto.get_by_role("button", name=re.compile("^Delete")).click()
    page.locator("#confirm-yes").click()
    expect(page.locator("#memory-list .memory")).to_have_count(2)
    assert server.bank.count("local") == 2

    # Export as JSON: a real download holding the facts.
    with page.expect_download() as info:
        page.get_by_role("button", name="Export JSON").click()
    target = tmp_path / "export.json"
    info.value.save_as(target)
    text = target.read_text()
    assert "dark mode" in text and "marine biologist" in text
    json.loads(text)
    with page.expect_download() as info:
        page.get_by_role("button", name="Export Markdown").click()
    md = tmp_path / "export.md"
    info.value.save_as(md)
    assert "dark mode" in md.read_text()


def test_clear_all_needs_confirmation(page: Page, serve: Callable[..., Server]) -> None:
    server = serve()
    server.bank.save("local", "User prefers tea over coffee", "preference")
    server.bank.save("local", "User has a dog named Rex", "relationship")
    open_ui(page, server.url)
    expect(page.locator("#memory-list .memory")).to_have_count(2)

    page.get_by_role("button", name="Clear all…").click()
    dialog = page.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Delete all 2 facts?")
    page.keyboard.press("Escape")  # the keyboard way out
    expect(dialog).to_be_hidden()
    expect(page.locator("#memory-status")).to_have_text("Nothing was deleted.")
    assert server.bank.count("local") == 2

    page.get_by_role("button", name="Clear all…").click()
    page.get_by_role("button", name="Delete all 2").click()
    expect(page.locator("#memory-status")).to_have_text("Deleted 2 facts.")
    expect(page.locator("#memory-list .memory")).to_have_count(0)
    expect(page.locator("#memory-empty")).to_be_visible()
    assert server.bank.count("local") == 0


# -- forget -----------------------------------------------------------------------------------


def test_forget_preview_then_confirm(page: Page, serve: Callable[..., Server]) -> None:
    server = serve()
    server.bank.save("local", "User works at Acme Corp as a tester", "project")
    server.bank.save("local", "User's manager at Acme Corp is Dana", "relationship")
    server.bank.save("local", "User prefers green tea in the morning", "preference")
    open_ui(page, server.url, "forget")

    page.get_by_label("What should be forgotten?").fill("Acme Corp")
    page.get_by_label("What should be forgotten?").press("Enter")
    plan = page.locator("#forget-plan")
    expect(plan).to_be_visible()
    steps = plan.locator(".step")
    expect(steps.first).to_be_visible()
    actions = steps.evaluate_all("els => els.map(e => e.dataset.action)")
    assert set(actions) <= {"FORGET", "REWRITE", "KEEP"}
    forgotten = plan.locator('.step[data-action="FORGET"]')
    assert forgotten.count() >= 1
    expect(forgotten.first).to_contain_text("Acme")
    assert "green tea" not in " ".join(forgotten.all_inner_texts())
    expect(page.locator("#forget-confirm")).to_be_focused()
    assert server.bank.count("local") == 3  # the preview changes nothing
    shot(page, "forget")

    page.get_by_role("button", name=re.compile("^Confirm")).click()
    expect(page.locator("#forget-result")).to_contain_text(re.compile(r"Forgot \d+ fact"))
    remaining = [m.content for m in server.bank.list("local")]
    assert not any("Acme" in c for c in remaining if "works at" in c)
    assert any("green tea" in c for c in remaining)

    # A second plan can be cancelled: nothing changes.
    page.get_by_label("What should be forgotten?").fill("green tea")
    page.get_by_role("button", name="Preview").click()
    expect(plan).to_be_visible()
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#forget-status")).to_contain_text("Nothing was changed")
    assert any("green tea" in m.content for m in server.bank.list("local"))


def test_cards_show_decayed_importance(page: Page, serve: Callable[..., Server]) -> None:
    server = serve()
    then = utcnow() - timedelta(days=180)  # one half-life untouched: 9 ranks as 5
    old = Memory(
        user_id="local",
        content="User prefers aisle seats on trains",
        importance=9,
        category=Category.PREFERENCE,
        created_at=then,
        updated_at=then,
    )
    save_records(server.bank, [old], actor="local")
    server.bank.save("local", "User prefers window seats on planes", "preference")
    open_ui(page, server.url)
    # By the fact's own text: the newer card also quotes the older, as a fact it may update.
    cards = page.locator("#memory-list .memory")
    faded = cards.filter(has=page.locator(".content", has_text="aisle seats"))
    expect(faded.locator(".importance")).to_have_text("Importance 9 (now 5.0)")
    fresh = cards.filter(has=page.locator(".content", has_text="window seats"))
    expect(fresh.locator(".importance")).to_have_text(re.compile(r"^Importance \d+$"))


def test_tidy_up_previews_then_merges(page: Page, serve: Callable[..., Server]) -> None:
    server = serve()
    old = [  # saved twice in other words before duplicates were caught (an old import)
        ("User is a vegetarian", 5),
        ("User follows a vegetarian diet", 8),
        ("User is fond of tea", 4),
        ("User likes to drink tea", 6),
        ("User's husband is fond of tea", 5),  # another person's: kept
        ("User's favourite colour is blue", 6),
        ("User's favourite colour is green", 6),  # a change: reported, never merged
    ]
    records = [
        Memory(user_id="local", content=text, category=Category.IDENTITY, importance=importance)
        for text, importance in old
    ]
    save_records(server.bank, records, actor="local")
    open_ui(page, server.url, "tidy")
    page.get_by_role("button", name="Find duplicates").click()
    merges = page.locator("#tidy-merges .step")
    expect(merges).to_have_count(2)
    expect(page.locator("#tidy-merges")).to_contain_text("User follows a vegetarian diet")
    # The shipped judge never retires a fact unasked: the colour change is not a step here.
    expect(page.locator("#tidy-merges .act-SUPERSEDE")).to_have_count(0)
    assert server.bank.count("local", superseded=False) == 7  # the preview changes nothing
    shot(page, "tidy")
    page.get_by_label("Merge into: User likes to drink tea").uncheck()
    page.get_by_role("button", name="Apply selected").click()
    expect(page.locator("#tidy-status")).to_contain_text("Merged 1 fact")
    current = {m.content for m in server.bank.list("local", superseded=False)}
    assert "User is a vegetarian" not in current and "User is fond of tea" in current
    assert "User's favourite colour is blue" in current
    assert "User's husband is fond of tea" in current


# -- the tool playground ----------------------------------------------------------------------


def call_tool(page: Page, arguments: Mapping[str, object] | str) -> None:
    text = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    page.get_by_label("Arguments (JSON)").fill(text)
    page.get_by_role("button", name="Call tool").click()


def test_playground_save_states(page: Page, serve: Callable[..., Server]) -> None:
    server = serve()
    open_ui(page, server.url, "playground")
    page.get_by_label("Profile").select_option("blah")
    expect(page.locator('#pg-tool option[value="saveMemory"]')).to_be_attached()
    page.get_by_label("Tool", exact=True).select_option("saveMemory")
    prefilled = json.loads(page.get_by_label("Arguments (JSON)").input_value())
    assert {"content", "category", "reasoning"} <= set(prefilled)

    # While the call runs the card says so (the request is held until we have looked).
    seen: list[str] = []

    def hold(route: Route) -> None:
        seen.append(page.locator("#pg-state").inner_text())
        route.continue_()

    page.route("**/api/tools/blah/call", hold)
    fact = {
        "content": "User prefers TypeScript for all projects",
        "category": "preference",
        "reasoning": "Core tech stack preference for future answers",
    }
    call_tool(page, fact)
    state = page.locator("#pg-state")
    expect(state).to_have_text("Saved to memory")
    assert seen == ["Saving to memory…"]
    page.unroute("**/api/tools/blah/call")
    result = page.locator("#pg-result")
    expect(result).to_have_class(re.compile(r"\bsuccess\b"))
    expect(result.locator(".badge")).to_have_text("preference")
    expect(result).to_contain_text("Memory saved successfully")
    shot(page, "playground")
    assert [m.content for m in server.bank.list("local")] == [fact["content"]]

    call_tool(page, fact)
    expect(state).to_have_text("Already saved")
    expect(result).to_have_class(re.compile(r"\bduplicate\b"))

    call_tool(page, {**fact, "content": "too short"})
    expect(state).to_have_text("Failed to save")
    expect(result).to_have_class(re.compile(r"\berror\b"))
    expect(result.locator(".tool-detail")).to_contain_text(re.compile("short|10", re.I))

    call_tool(page, "{not json")
    expect(state).to_have_text("Failed to save")
    expect(result).to_contain_text("not valid JSON")

    # A text-answering profile shows its text; a read tool is not a "save".
    page.get_by_label("Profile").select_option("hyperspark")
    expect(page.locator('#pg-tool option[value="recall"]')).to_be_attached()
    page.get_by_label("Tool", exact=True).select_option("recall")
    args = json.loads(page.get_by_label("Arguments (JSON)").input_value())
    args[next(k for k in args if isinstance(args[k], str))] = "TypeScript"
    call_tool(page, args)
    expect(state).to_have_text("Done")
    expect(result.locator("pre.text-result")).to_contain_text("TypeScript")


# -- roles in auth mode -----------------------------------------------------------------------


def test_roles_and_isolation_in_auth_mode(page: Page, serve: Callable[..., Server]) -> None:
    server = serve(team)
    keys = server.keys
    server.bank.save("olga", "Olga's private fact: User prefers window seats", "preference")
    server.bank.save(
        "olga",
        "The Apollo project deploys from main",
        "project",
        project_id="apollo",
        created_by="olga",
    )

    # No key yet: asked for one, nothing shown.
    page.goto(server.url)
    expect(page.locator("#banner")).to_contain_text("API key")
    expect(page.get_by_label("API key")).to_be_visible()
    page.get_by_label("API key").fill("mb_wrong")
    page.get_by_role("button", name="Use key").click()
    expect(page.locator("#banner")).to_contain_text("not accepted")

    # The member: sees the workspace facts, with who added them, but cannot change them.
    sign_in(page, keys["mia"])
    expect(page.locator("#whoami")).to_contain_text("Mia")
    assert cards(page) == []  # none of Olga's private facts
    page.get_by_role("tab", name="Workspace memory").click()
    expect(page.locator("#ws-list .memory")).to_have_count(1)
    expect(page.locator("#ws-list .memory")).to_contain_text("deploys from main")
    expect(page.locator("#ws-list .memory .by")).to_have_text("olga")
    expect(page.locator("#ws-role")).to_have_text("Your role: member")
    expect(page.locator("#ws-readonly")).to_be_visible()
    expect(page.locator("#ws-add-form")).to_be_hidden()
    expect(page.locator("#ws-list button")).to_have_count(0)
    expect(page.locator("#ws-clear")).to_be_hidden()

    # The admin: the same facts, and the controls.
    page.get_by_role("button", name="Forget key").click()
    expect(page.locator("#banner")).to_contain_text("API key")
    sign_in(page, keys["adam"])
    page.get_by_role("tab", name="Workspace memory").click()
    expect(page.locator("#ws-role")).to_have_text("Your role: admin")
    expect(page.locator("#ws-add-form")).to_be_visible()
    page.get_by_label("New workspace fact").fill("The Apollo team reviews code on Tuesdays")
    page.get_by_label("New workspace fact").press("Enter")
    expect(page.locator("#ws-list .memory")).to_have_count(2)
    added = page.locator("#ws-list .memory").filter(has_text="Tuesdays")
    expect(added.locator(".by")).to_have_text("you")
    expect(
        page.locator("#ws-list .memory").first.get_by_role("button", name=re.compile("^Delete"))
    ).to_be_visible()
    shot(page, "workspace")
    deploys = page.locator("#ws-list .memory").filter(has_text="deploys from main")
    deploys.get_by_role("button", name=re.compile("^Delete")).click()
    page.locator("#confirm-yes").click()
    expect(page.locator("#ws-list .memory")).to_have_count(1)
    assert server.bank.count("olga", project_id="apollo", scopes="project") == 1

    # The key persists across reloads (localStorage), and another user's key sees only theirs.
    page.reload()
    expect(page.locator("#whoami")).to_contain_text("Adam")
    page.get_by_role("button", name="Forget key").click()
    sign_in(page, keys["otto"])
    page.get_by_role("tab", name="Your memory").click()
    assert cards(page) == []
    page.get_by_role("tab", name="Workspace memory").click()
    expect(page.locator("#ws-none")).to_be_visible()

    sign_in(page, keys["olga"])
    page.get_by_role("tab", name="Your memory").click()
    expect(page.locator("#memory-list .memory")).to_have_count(1)
    expect(page.locator("#memory-list .memory")).to_contain_text("window seats")

    # The playground runs a tool in a project through a thread of that project.
    page.get_by_role("tab", name="Tool playground").click()
    expect(page.locator('#pg-tool option[value="remember"]')).to_be_attached()
    page.locator("#pg-project").select_option("apollo")
    page.get_by_label("Tool", exact=True).select_option("remember")
    call_tool(page, {"fact": "User leads the Apollo launch review", "category": "project"})
    expect(page.locator("#pg-state")).to_have_text("Saved to memory")
    threads = server.accounts.threads("olga")
    assert [t.project_id for t in threads] == ["apollo"]


# -- keyboard and phone -----------------------------------------------------------------------


def test_keyboard_and_phone(browser: Browser, serve: Callable[..., Server]) -> None:
    server = serve()
    server.bank.save("local", "User is based in Lisbon and works remotely", "identity")
    server.bank.save("local", "User prefers concise answers with code examples", "preference")
    context = browser.new_context(
        viewport={"width": 390, "height": 844},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        open_ui(page, server.url)
        # Enter in the fact field adds it.
        page.get_by_label("New fact").focus()
        page.keyboard.type("My sister Ana lives in Berlin")
        page.keyboard.press("Enter")
        expect(page.locator("#memory-list .memory")).to_have_count(3)
        # Nothing overflows sideways on a phone.
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"page is {width}px wide on a 390px phone"
        shot(page, "phone")

        # Tabs: arrow keys move between them; focus is visible.
        page.get_by_role("tab", name="Your memory").focus()
        page.keyboard.press("ArrowRight")
        expect(page.get_by_role("tab", name="Workspace memory")).to_be_focused()
        expect(page.get_by_role("tab", name="Workspace memory")).to_have_attribute(
            "aria-selected", "true"
        )
        outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert outline not in ("", "none")
        page.keyboard.press("End")
        expect(page.locator("#panel-webhooks")).to_be_visible()  # the last tab
    finally:
        context.close()


def test_local_mode_switches_to_the_clis_users(page: Page, serve: Callable[..., Server]) -> None:
    server = serve()
    server.bank.save("alice", "User prefers green tea", "preference", source="user")
    open_ui(page, server.url)
    expect(page.locator("#memory-list .memory")).to_have_count(0)  # the user "local"
    expect(page.get_by_label("User", exact=True)).to_have_value("local")
    page.get_by_label("User", exact=True).fill("alice")
    page.get_by_role("button", name="Switch").click()
    expect(page.locator("#whoami")).to_contain_text("alice")
    expect(page.locator("#memory-list .memory")).to_have_count(1)
    assert cards(page) == ["User prefers green tea"]
    add_fact(page, "I prefer window seats", "preference")
    assert server.bank.count("alice") == 2 and server.bank.count("local") == 0
    page.reload()  # the choice is kept
    expect(page.locator("#memory-list .memory")).to_have_count(2)
    page.get_by_label("User", exact=True).fill("")
    page.get_by_role("button", name="Switch").click()
    expect(page.locator("#memory-list .memory")).to_have_count(0)


# -- live memory (issue 21): events stream, toasts, insights, webhooks ------------------------
# A tool call through the API makes the "Remembered" toast appear in an open page (with Undo),
# pages update without a reload, the Insights page draws its charts with the server's own
# Chart.js, and the Webhooks page sends a test to a real receiver and shows the delivery log.


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


def test_the_events_stream_starts_when_a_script_arrives_after_the_data(
    page: Page, serve: Callable[..., Server]
) -> None:
    # On a slow link (or a busy server) the page's first API answers can come back before
    # live.js has run; the stream must start anyway. Hold live.js until the data is in.
    server = serve()

    def late(route: Route) -> None:
        # Only live.js is routed: Chromium goes on fetching /api/me and /api/memories (and the
        # page goes on handling their answers) while this holds it.
        time.sleep(1.5)
        route.continue_()

    page.route("**/ui/live.js", late)
    go_live(page, server.url)
    saved = tool(server.url, "remember", {"fact": "User goes rock climbing on Sundays"})
    assert saved["success"], saved
    expect(page.locator(".toast")).to_contain_text("Remembered: User goes rock climbing")


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


def test_a_live_change_waits_for_an_open_edit(page: Page, serve: Callable[..., Server]) -> None:
    """A change made elsewhere (here the assistant's) reloads the list only once the fact being
    edited is saved or cancelled: what the user is typing is never thrown away."""
    server = serve()
    server.bank.save("local", "User lives in Lisbon with two cats", "identity", source="user")
    go_live(page, server.url)
    card = page.locator("#memory-list .memory").first
    card.get_by_role("button", name=re.compile("^Edit")).click()
    editor = page.locator("#memory-list form.edit").get_by_label("Fact text")
    editor.fill("User lives in Porto with two cats")

    saved = tool(server.url, "remember", {"fact": "User goes rock climbing on Sundays"})
    assert saved["success"], saved
    expect(page.locator(".toast")).to_contain_text("Remembered: User goes rock climbing")
    page.wait_for_timeout(600)  # past the reload's burst delay: it must still be waiting
    expect(editor).to_have_value("User lives in Porto with two cats")
    expect(page.locator("#memory-list .memory")).to_have_count(1)

    editor.press("Enter")  # saved: now the list reloads, with both changes
    expect(page.locator("#memory-list .memory .content")).to_have_text(
        ["User goes rock climbing on Sundays", "User lives in Porto with two cats"]
    )


def test_a_reload_answered_during_an_edit_waits_for_it(
    page: Page, serve: Callable[..., Server]
) -> None:
    """A list reload whose answer arrives while a fact is being edited (a slow answer to a
    reload started just before, seen under load) does not replace the card being edited: the
    list is loaded again once the edit is cancelled."""
    server = serve()
    server.bank.save("local", "User lives in Lisbon with two cats", "identity", source="user")
    open_ui(page, server.url)
    card = page.locator("#memory-list .memory").first
    card.get_by_role("button", name=re.compile("^Edit")).click()
    editor = page.locator("#memory-list form.edit").get_by_label("Fact text")
    editor.fill("User lives in Porto with two cats")
    server.bank.save("local", "User goes rock climbing on Sundays", "preference", source="user")
    page.evaluate("window.memorybankUI.loadMemory()")  # its answer comes while editing
    page.wait_for_timeout(600)
    expect(editor).to_have_value("User lives in Porto with two cats")
    expect(page.locator("#memory-list .memory")).to_have_count(1)

    page.locator("#memory-list form.edit").get_by_role("button", name="Cancel").click()
    expect(page.locator("#memory-list .memory")).to_have_count(2)


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
        join_org(bank, "acme", user)
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
    expect(kpis).to_contain_text("Search hit rate")
    expect(kpis.locator(".kpi").filter(has_text="Search hit rate")).to_contain_text("67 % of 3")
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
    # Not a dead end: it says who may see them and whom to ask.
    expect(page.locator("#insights-status")).to_contain_text("Insights are for org admins")
    expect(page.locator("#insights-status")).to_contain_text("operator")


def test_webhooks_page_sends_a_test_and_shows_the_log(
    page: Page, serve: Callable[..., Server]
) -> None:
    server = serve(team, provider_allow_private=True, webhook_poll_seconds=0.1)
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

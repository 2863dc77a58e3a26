"""Issue 28, item 6: a newcomer's review of the web UI, each point driven in real Chromium
against the real server.

* Every page (every tab) fits a 1280×800 desktop and a 390×844 phone: nothing is wider than
  the window, and the page never scrolls sideways (screenshots of each go to a temporary
  folder). The Webhooks page's event checkboxes were huge boxes with their labels far right,
  and it was 470 px wide on the phone.
* On a phone the header and a three-row tab bar took 370 px of 844: now a compact header and
  two rows of tabs with every tab in view (issue 47: one row that scrolled showed 2 of 7).
* The focus ring had 2.0–2.15:1 contrast: it must have 3:1 against whatever it is drawn on.
* Search showed no scores; the playground's recall said only "Done".
* Local mode dead-ended: "You are not in any project yet" after a project fact was saved,
  "ask a project's admin", "for org admins". It now says what to do.
* The User box took "nobody here" silently: it checks the server's rule for a user id and
  says what is wrong, and says when a user has no facts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from playwright.sync_api import Browser, BrowserContext, Page, expect
from ui_harness import TABS, TIMEOUT_MS, Server, go_live, open_ui, team, tool

from memorybank.core.records import save_records
from memorybank.model import Category, Memory

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

#: Whatever makes a page wider than the window: the page itself scrolling sideways, any element
#: wider than the window, or one reaching past its edge outside a box that scrolls or clips
#: (the page's own box scrolls, vertically). The skip link waits off-screen until focused.
OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const found = [];
  if (document.documentElement.scrollWidth > width) {
    found.push("the page is " + document.documentElement.scrollWidth + " px wide");
  }
  const name = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
    (typeof el.className === "string" && el.className ? "." + el.className.replace(/ /g, ".") : "");
  const clipped = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowX !== "visible") return true;
    }
    return false;
  };
  for (const el of document.body.querySelectorAll("*")) {
    if (el.classList.contains("skip")) continue;
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    if (r.width > width + 0.5) found.push(name(el) + " is " + Math.round(r.width) + " px wide");
    else if ((r.right > width + 0.5 || r.left < -0.5) && !clipped(el)) {
      const span = Math.round(r.left) + "–" + Math.round(r.right);
      found.push(name(el) + " reaches past the window (" + span + ")");
    }
  }
  return found;
}"""

#: The contrast (WCAG) of the focused element's ring against what it is drawn on: the
#: background of its parent (of itself, for a ring drawn inside), semi-transparent layers
#: composed over the first opaque one.
FOCUS_RING = """(el) => {
  const parse = (c) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(c);
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const lum = (c) => {
    const f = (v) => (v /= 255) <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const cs = getComputedStyle(el);
  const layers = [];
  for (let n = parseFloat(cs.outlineOffset) < 0 ? el : el.parentElement; n; n = n.parentElement) {
    const c = parse(getComputedStyle(n).backgroundColor);
    if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
  }
  let bg = { r: 255, g: 255, b: 255 };
  for (const c of layers.reverse()) {
    const over = (top, under) => top * c.a + under * (1 - c.a);
    bg = { r: over(c.r, bg.r), g: over(c.g, bg.g), b: over(c.b, bg.b) };
  }
  const ring = parse(cs.outlineColor);
  const [hi, lo] = [lum(ring), lum(bg)].sort((a, b) => b - a);
  return {
    what: el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + " " +
      (el.textContent || el.value || "").trim().slice(0, 30),
    style: cs.outlineStyle, width: parseFloat(cs.outlineWidth), ring: cs.outlineColor,
    background: "rgb(" + [bg.r, bg.g, bg.b].map(Math.round).join(", ") + ")",
    ratio: (hi + 0.05) / (lo + 0.05),
  };
}"""


def context_for(browser: Browser, viewport: dict[str, int]) -> BrowserContext:
    phone = viewport["width"] < 500
    context = browser.new_context(
        viewport=viewport, is_mobile=phone, has_touch=phone, device_scale_factor=2 if phone else 1
    )
    context.set_default_timeout(TIMEOUT_MS)
    return context


def a_full_database(server: Server) -> None:
    """Something on every page: facts (one long, one saved twice in other words), a project
    with a fact, and a webhook."""
    bank = server.bank
    bank.save("local", "User prefers dark mode in every editor", "preference", source="user")
    bank.save("local", "User's sister Ana is a doctor in Madrid", "relationship", source="user")
    long = "User keeps notes at https://notes.example.com/" + "a-very-long-path-" * 8 + "end"
    bank.save("local", long, "context", source="user")
    twice = [("User lives in London", 8), ("User currently lives in London", 5)]
    save_records(
        bank,
        [
            Memory(user_id="local", content=t, category=Category.IDENTITY, importance=i)
            for t, i in twice
        ],
        actor="local",
    )
    bank.save("local", "The Apollo team deploys from main", "project", project_id="apollo")
    hook = httpx.post(
        f"{server.url}/api/webhooks",
        json={"url": "http://127.0.0.1:9/hooks/memory", "project_id": "apollo"},
    )
    assert hook.status_code == 201, hook.text


def show(page: Page, tab: str) -> None:
    """Open a page by its tab, in the state a user sees it in once they have used it."""
    page.locator(f'[role=tab][data-tab="{tab}"]').click()
    expect(page.locator(f"#panel-{tab}")).to_be_visible()
    if tab == "memory":
        page.get_by_label("Search", exact=True).fill("where does my sister live")
        page.get_by_label("Search", exact=True).press("Enter")
        expect(page.locator("#memory-list .score").first).to_be_visible()
    elif tab == "workspace":
        expect(page.locator("#ws-list .memory")).to_have_count(1)
    elif tab == "forget":
        page.get_by_label("What should be forgotten?").fill("my sister")
        page.get_by_role("button", name="Preview").click()
        expect(page.locator("#forget-plan")).to_be_visible()
    elif tab == "tidy":
        page.get_by_role("button", name="Find duplicates").click()
        expect(page.locator("#tidy-merges .step")).to_have_count(1)
    elif tab == "playground":
        page.get_by_label("Profile").select_option("blah")
        expect(page.locator('#pg-tool option[value="searchMemories"]')).to_be_attached()
        page.get_by_label("Tool", exact=True).select_option("searchMemories")
        page.get_by_label("Arguments (JSON)").fill(json.dumps({"query": "editor"}))
        page.get_by_role("button", name="Call tool").click()
        expect(page.locator("#pg-result .found-fact").first).to_be_visible()
    elif tab == "insights":
        expect(page.locator("body")).to_have_attribute("data-insights", "1")
    elif tab == "webhooks":
        card = page.locator("#wh-list .webhook")
        card.get_by_role("button", name="Send test").click()  # queued: the worker is off
        card.get_by_role("button", name="Delivery log").click()
        expect(card.locator(".deliveries .delivery").first).to_be_visible()


# -- every page, desktop and phone ------------------------------------------------------------


def test_every_page_fits_a_desktop_and_a_phone(
    browser: Browser, serve: Callable[..., Server], tmp_path: Path
) -> None:
    server = serve(webhooks_enabled=False)
    a_full_database(server)
    overflowing: dict[str, list[str]] = {}
    for viewport in (DESKTOP, PHONE):
        size = f"{viewport['width']}x{viewport['height']}"
        context = context_for(browser, viewport)
        try:
            page = context.new_page()
            open_ui(page, server.url)
            for tab in TABS:
                show(page, tab)
                page.screenshot(path=str(tmp_path / f"ui-{tab}-{size}.png"), full_page=True)
                found = page.evaluate(OVERFLOW)
                if found:
                    overflowing[f"{tab} at {size}"] = found
        finally:
            context.close()
    assert sorted(p.name for p in tmp_path.glob("ui-*.png")) == sorted(
        f"ui-{tab}-{size}.png" for tab in TABS for size in ("1280x800", "390x844")
    )
    assert not overflowing, (
        f"pages wider than the window (screenshots in {tmp_path}): {overflowing}"
    )


def assert_compact(page: Page, when: str) -> None:
    """The header and the tab bar take at most 205 px (of 844), the tabs two rows, every tab
    in view (issue 47: one row that scrolled showed 2 of 7)."""
    header = page.locator("header.top").bounding_box()
    bar = page.locator("nav.tabs").bounding_box()
    assert header and bar
    assert header["height"] + bar["height"] <= 205, (when, header, bar)
    tops = {round(box["y"]) for tab in page.get_by_role("tab").all() if (box := tab.bounding_box())}
    assert len(tops) == 2, f"{when}: the tabs take {len(tops)} rows"
    for tab in page.get_by_role("tab").all():
        expect(tab).to_be_in_viewport(ratio=1)
    assert page.evaluate(OVERFLOW) == [], when


def test_the_phone_header_is_compact_and_every_tab_in_view(
    browser: Browser, serve: Callable[..., Server]
) -> None:
    server = serve(team)
    context = context_for(browser, PHONE)
    try:
        page = context.new_page()
        page.goto(server.url)
        expect(page.get_by_label("API key")).to_be_visible()
        assert_compact(page, "signed out")
        page.get_by_label("API key").fill(server.keys["mia"])
        page.get_by_label("API key").press("Enter")
        expect(page.locator("#whoami")).to_contain_text("Mia")
        assert_compact(page, "signed in")
        expect(page.locator("#whoami")).to_have_text("Signed in as Mia")  # whole, not cut
        page.get_by_role("tab", name="Your memory").focus()
        page.keyboard.press("End")
        expect(page.get_by_role("tab", name="Webhooks")).to_be_focused()
        expect(page.locator("#panel-webhooks")).to_be_visible()
    finally:
        context.close()


def test_the_webhook_event_boxes_sit_beside_their_names(
    browser: Browser, serve: Callable[..., Server]
) -> None:
    server = serve(team)
    for viewport in (DESKTOP, PHONE):
        context = context_for(browser, viewport)
        try:
            page = context.new_page()
            page.goto(server.url + "/#webhooks")
            page.get_by_label("API key").fill(server.keys["olga"])
            page.get_by_label("API key").press("Enter")
            expect(page.locator("#wh-form")).to_be_visible()
            checks = page.locator("#wh-types label.check")
            expect(checks).to_have_count(8)
            for label in checks.all():
                box = label.locator("input").bounding_box()
                name = label.locator("span").bounding_box()
                assert box and name
                assert box["width"] <= 24 and box["height"] <= 24, box
                gap = name["x"] - (box["x"] + box["width"])
                assert 0 <= gap <= 12, (label.inner_text(), gap)
                middle = abs((box["y"] + box["height"] / 2) - (name["y"] + name["height"] / 2))
                assert middle <= 6, (label.inner_text(), middle)
            assert page.evaluate(OVERFLOW) == [], viewport
        finally:
            context.close()


# -- the focus ring ---------------------------------------------------------------------------


def focus_rings(page: Page, limit: int = 80) -> list[dict[str, Any]]:
    """Press Tab until focus comes back round (or ``limit`` times): each element's ring."""
    rings: list[dict[str, Any]] = []
    seen: set[str] = set()
    for _ in range(limit):
        page.keyboard.press("Tab")
        handle = page.evaluate_handle("document.activeElement")
        key = page.evaluate(
            "el => el === document.body ? '' : (el.id || '') + '|' + el.outerHTML.slice(0, 120)",
            handle,
        )
        if not key or key in seen:
            break
        seen.add(key)
        rings.append(page.evaluate(FOCUS_RING, handle))
    return rings


def test_the_focus_ring_has_3_to_1_contrast_everywhere(
    page: Page, serve: Callable[..., Server]
) -> None:
    server = serve(webhooks_enabled=False)
    a_full_database(server)
    go_live(page, server.url)
    rings: list[dict[str, Any]] = []
    for tab in TABS:
        show(page, tab)
        page.locator(f'[role=tab][data-tab="{tab}"]').focus()
        rings += focus_rings(page)
    # A toast (dark), and the confirm dialog.
    page.get_by_role("tab", name="Your memory").click()
    saved = tool(server.url, "remember", {"fact": "User goes rock climbing on Sundays"})
    assert saved["success"], saved
    undo = page.locator(".toast").get_by_role("button", name="Undo")
    expect(undo).to_be_visible()
    page.locator(".toast").get_by_role("button", name="Dismiss").focus()
    page.keyboard.press("Shift+Tab")
    expect(undo).to_be_focused()
    rings.append(page.evaluate(FOCUS_RING, undo.element_handle()))
    page.locator("#memory-list .memory").first.get_by_role(
        "button", name=re.compile("^Delete")
    ).click()
    expect(page.locator("#confirm-no")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")
    rings.append(page.evaluate(FOCUS_RING, page.locator("#confirm-no").element_handle()))
    assert len(rings) >= 40, f"only {len(rings)} elements took focus"
    missing = [r for r in rings if r["style"] == "none" or r["width"] < 2]
    assert not missing, f"no focus ring on {missing}"
    faint = [r for r in rings if r["ratio"] < 3]
    assert not faint, f"focus rings under 3:1 against their background: {faint}"


# -- scores -----------------------------------------------------------------------------------


def test_search_results_show_each_hits_relevance_and_score(
    page: Page, serve: Callable[..., Server]
) -> None:
    server = serve()
    a_full_database(server)
    open_ui(page, server.url)
    expect(page.locator("#memory-list .score")).to_have_count(0)  # a list, not a search
    page.get_by_label("Search", exact=True).fill("my sister Ana")
    with page.expect_response(re.compile(r"/api/search\?")) as answer:
        page.get_by_label("Search", exact=True).press("Enter")
    best = answer.value.json()["hits"][0]
    first = page.locator("#memory-list .memory").first
    expect(first.locator(".content")).to_contain_text("sister Ana")
    scores = page.locator("#memory-list .memory .score")
    expect(scores.first).to_have_text(re.compile(r"^Relevance (\d+|< 1) % · score \d\.\d\d$"))
    assert scores.count() == page.locator("#memory-list .memory").count()
    expected = f"Relevance {round(best['relevance'] * 100)} % · score {best['score']:.2f}"
    expect(scores.first).to_have_text(expected)


def test_the_playground_shows_what_a_search_tool_found(
    page: Page, serve: Callable[..., Server]
) -> None:
    server = serve()
    a_full_database(server)
    open_ui(page, server.url, "playground")
    result = page.locator("#pg-result")
    # The default profile's recall answers facts without scores (a tool made to be small).
    expect(page.locator('#pg-tool option[value="recall"]')).to_be_attached()
    page.get_by_label("Tool", exact=True).select_option("recall")
    page.get_by_label("Arguments (JSON)").fill(json.dumps({"query": "dark mode"}))
    page.get_by_role("button", name="Call tool").click()
    expect(page.locator("#pg-state")).to_have_text(re.compile(r"^Found \d+ facts?$"))
    expect(result.locator(".found-fact").first).to_contain_text("dark mode")
    expect(result).to_contain_text("answers without scores")
    expect(result.locator("details .found-fact")).to_have_count(0)  # not under "Raw result"
    # blah's searchMemories answers each fact's score and category: both shown.
    page.get_by_label("Profile").select_option("blah")
    expect(page.locator('#pg-tool option[value="searchMemories"]')).to_be_attached()
    page.get_by_label("Tool", exact=True).select_option("searchMemories")
    page.get_by_label("Arguments (JSON)").fill(json.dumps({"query": "dark mode editor"}))
    page.get_by_role("button", name="Call tool").click()
    top = result.locator(".found-fact").first
    expect(top).to_contain_text("dark mode")
    expect(top.locator(".badge")).to_have_text("preference")
    expect(top.locator(".score")).to_have_text(re.compile(r"^score \d\.\d\d$"))


# -- local mode says what to do ---------------------------------------------------------------


def test_local_mode_workspace_lists_its_projects_and_says_how_to_start_one(
    page: Page, serve: Callable[..., Server]
) -> None:
    server = serve()
    open_ui(page, server.url, "workspace")
    local = page.locator("#ws-local")
    expect(local).to_contain_text("No project holds memories yet")
    expect(local).to_contain_text("you own every project")
    expect(page.locator("#ws-none")).to_be_hidden()
    # A project fact saved over REST: the page lists its project.
    saved = httpx.post(
        f"{server.url}/api/memory/drive/apollo", json={"fact": "Apollo ships in May"}
    )
    assert saved.status_code == 201, saved.text
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "1")
    expect(page.locator("#ws-project")).to_have_value("apollo")
    expect(page.locator("#ws-list .memory .content")).to_have_text(["Apollo ships in May"])
    expect(page.locator("#ws-role")).to_have_text("Your role: owner")
    # Opening another: its id is checked, and its first fact starts it.
    page.locator("#ws-open summary").click()
    page.get_by_label("Project id").fill("no spaces please")
    page.get_by_role("button", name="Open project").click()
    expect(page.locator("#ws-open-status")).to_contain_text("is not a project id: 1–64 letters")
    expect(page.get_by_label("Project id")).to_have_attribute("aria-invalid", "true")
    page.get_by_label("Project id").fill("zeus")
    page.get_by_role("button", name="Open project").click()
    expect(page.locator("#ws-open-status")).to_contain_text("add its first fact")
    expect(page.get_by_label("New workspace fact")).to_be_focused()
    page.get_by_label("New workspace fact").fill("Zeus releases every Monday")
    page.get_by_label("New workspace fact").press("Enter")
    expect(page.locator("#ws-list .memory")).to_have_count(1)
    assert server.bank.count("local", project_id="zeus", scopes="project") == 1
    me = httpx.get(f"{server.url}/api/me").json()
    assert [p["id"] for p in me["projects"]] == ["apollo", "zeus"]


def test_local_mode_webhooks_and_insights_say_what_to_do(
    page: Page, serve: Callable[..., Server]
) -> None:
    server = serve()
    open_ui(page, server.url, "webhooks")
    note = page.locator("#wh-none-local")
    expect(note).to_contain_text("you own every project")
    expect(page.locator("#wh-none")).to_be_hidden()  # no "ask a project's admin"
    expect(page.locator("#wh-form")).to_be_hidden()
    note.get_by_role("link", name="Workspace memory").click()
    expect(page.get_by_role("tab", name="Workspace memory")).to_have_attribute(
        "aria-selected", "true"
    )
    expect(page.get_by_label("Project id")).to_be_visible()
    page.get_by_role("tab", name="Insights").click()
    expect(page.locator("#insights-whose")).to_have_text(
        "for the whole database (local mode: you may see everything)"
    )
    expect(page.locator("body")).to_have_attribute("data-insights", "1")
    # Once a project holds memories, its webhooks can be added here.
    server.bank.save("local", "Apollo ships in May", "project", project_id="apollo")
    page.reload()
    page.get_by_role("tab", name="Webhooks").click()
    expect(page.locator("#wh-form")).to_be_visible()
    expect(page.locator("#wh-project")).to_have_value("apollo")
    expect(note).to_be_hidden()


# -- the User box -----------------------------------------------------------------------------


def test_the_user_box_checks_the_servers_rule_and_says_what_is_wrong(
    page: Page, serve: Callable[..., Server]
) -> None:
    server = serve()
    server.bank.save("alice", "User prefers green tea", "preference", source="user")
    open_ui(page, server.url)
    box = page.get_by_label("User", exact=True)
    status = page.locator("#user-status")
    # The rule is the server's: a control character is refused there too.
    box.fill("ali\tce")
    page.get_by_role("button", name="Switch").click()
    expect(status).to_contain_text("Not switched")
    expect(status).to_contain_text("control character")
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#whoami")).to_contain_text("Local user")
    refused = httpx.get(f"{server.url}/api/me", headers={"X-Memorybank-User": quote("ali\tce")})
    assert refused.status_code == 422, refused.text
    # Any other id is a user: one with no facts may be a typo, and the page says so.
    box.fill("nobody here")
    expect(box).not_to_have_attribute("aria-invalid", "true")
    page.get_by_role("button", name="Switch").click()
    expect(page.locator("#whoami")).to_contain_text("nobody here")
    expect(status).to_contain_text("“nobody here” has no facts yet")
    expect(status).to_contain_text("check the spelling")
    box.fill("alice")
    page.get_by_role("button", name="Switch").click()
    expect(status).to_have_text("Now acting as “alice” (1 fact).")
    # An id stored by an older page that the server refuses: back to "local", saying why.
    page.evaluate("localStorage.setItem('memorybank.user', 'bad\\nid')")
    page.reload()
    expect(page.locator("#whoami")).to_contain_text("Local user")
    expect(status).to_contain_text("The server refused the user")
    expect(page.locator("#banner")).to_be_hidden()

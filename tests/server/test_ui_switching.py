"""What a newcomer switching over tripped over in the web UI (issue 47), in real Chromium at a
desktop's width (1280 px) and a phone's (390 px): toasts that lay over the buttons they sat on,
a list that jumped when a count or a note changed, the older fact of a pair with no mark, and
weak search matches listed when the page could not read the cut-off. Screenshots go to the
``shots`` folder (``conftest.py``: ``$MEMORYBANK_TEST_OUTPUT/ui-screenshots``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from ui_harness import WIDTHS, Server, go_live, open_ui, sized_page, tool

from memorybank.rules.ranking import RECALL_MIN_RELEVANCE

#: Facts about different things, so that no save asks about another.
FILLER = [
    "User plays the cello in an orchestra",
    "User is allergic to peanuts",
    "User drives an electric car",
    "User prefers dark mode in every editor",
    "User is learning Japanese",
    "User's sister Ana is a doctor in Madrid",
    "User keeps a vegetable garden",
    "User runs a marathon every spring",
    "User reads science fiction before bed",
    "User's cat is called Miso",
    "User takes the train to the office",
]
APP_JS = Path(__file__).resolve().parents[2] / "src" / "memorybank" / "server" / "ui" / "app.js"

#: The controls in the window that something else lies over (a toast): each control's centre,
#: if it is inside the window and inside the box that scrolls the page, must hit the control.
COVERED = """() => {
  const page = document.querySelector("#page");
  const box = page ? page.getBoundingClientRect()
                   : { top: 0, left: 0, bottom: innerHeight, right: innerWidth };
  const covered = [];
  for (const el of document.querySelectorAll("button, input, select, textarea, a[href]")) {
    if (el.closest("#toasts")) continue;
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    const top = Math.max(0, box.top), bottom = Math.min(innerHeight, box.bottom);
    if (y < top || y > bottom || x < 0 || x > innerWidth) continue;
    const hit = document.elementFromPoint(x, y);
    if (hit && hit.closest("#toasts")) covered.push((el.textContent || el.id || el.name).trim());
  }
  return covered;
}"""


BUTTON_AT_THE_BOTTOM = """() => {
  const button = document.querySelector("#memory-list .memory:first-child .pair button.primary");
  if (!button) return false;
  button.scrollIntoView({ block: "end" });
  const r = button.getBoundingClientRect();
  return r.height > 0 && r.bottom <= innerHeight + 0.5 && r.bottom > innerHeight / 2;
}"""


@pytest.fixture(params=list(WIDTHS))
def sized(request: pytest.FixtureRequest, browser: Browser) -> Iterator[Page]:
    """A page at each width (the phone one as a touch device)."""
    with sized_page(browser, WIDTHS[request.param], desktop_height=800) as page:
        yield page


#: Where an element starts in the page's content (not the window): what moves when something
#: above it changes height, whatever the scroll.
CONTENT_Y = """el => {
  const page = document.querySelector("#page");
  return el.getBoundingClientRect().top + (page ? page.scrollTop : scrollY);
}"""


def width_of(page: Page) -> int:
    return page.viewport_size["width"] if page.viewport_size else 0


def add_fact(page: Page, text: str) -> None:
    before = page.locator("#memory-list .memory").count()
    page.get_by_label("New fact").fill(text)
    page.get_by_role("button", name="Add fact").click()
    expect(page.locator("#memory-list .memory")).to_have_count(before + 1)


def a_pair(page: Page, older: str, newer: str) -> None:
    """Two facts the second of which may update the first, added as a person adds them."""
    add_fact(page, older)
    add_fact(page, newer)
    card = page.locator("#memory-list .memory").filter(has_text=newer)
    expect(card.locator(".pair-text").filter(has_text=f"May update: {older}")).to_have_count(1)


def test_a_toast_never_covers_a_control(
    sized: Page, serve: Callable[..., Server], shots: Path
) -> None:
    """A toast lay over "Replace" / "Both are true" and "Edit" / "Delete" for 5–10 s. Now the
    toasts take a strip under the page: every control in view stays clickable."""
    server = serve()
    for fact in FILLER:
        server.bank.save("local", fact, source="user")
    go_live(sized, server.url)
    a_pair(sized, "User works at Globex as an engineer", "User moved to Initech as an engineer")
    initech = sized.locator("#memory-list .memory").filter(has_text="Initech")
    replace = (
        initech.locator(".pair").filter(has_text="Globex").get_by_role("button", name="Replace")
    )
    # At the bottom of the window, where the toasts come (again if the list is drawn anew).
    sized.wait_for_function(BUTTON_AT_THE_BOTTOM)
    said = tool(server.url, "remember", {"fact": "User keeps bees on the roof"})
    assert said["success"], said
    toast = sized.locator(".toast").filter(has_text="Remembered")
    expect(toast).to_be_visible()
    sized.screenshot(path=str(shots / f"toast-{width_of(sized)}.png"))
    assert sized.evaluate(COVERED) == []
    page_box, toast_box = sized.locator("#page").bounding_box(), toast.bounding_box()
    assert page_box and toast_box and page_box["y"] + page_box["height"] <= toast_box["y"]
    toast.get_by_role("button", name="Dismiss").click()
    expect(toast).to_have_count(0)
    replace.click()  # and the button works, toast or not
    expect(initech.locator(".pair").filter(has_text="Globex")).to_contain_text("Replaced:")


def test_nothing_moves_when_the_count_or_a_note_changes(
    sized: Page, serve: Callable[..., Server], shots: Path
) -> None:
    """The count ("12 facts" → "3 matches · 9 weaker hidden") and the note after an answer
    ("Kept both: … · …") changed the height above the list, which jumped. Both keep their
    room now (a longer note is cut, whole in its title)."""
    server = serve()
    for fact in FILLER:
        server.bank.save("local", fact, source="user")
    open_ui(sized, server.url)
    long_old = (
        "User works at Globex as a senior platform engineer on the payments and billing "
        "infrastructure team in the Lisbon office"
    )
    long_new = long_old.replace("works at Globex", "moved to Initech")
    a_pair(sized, long_old, long_new)
    listed = sized.locator("#memory-list")
    top = listed.evaluate(CONTENT_Y)
    search = sized.get_by_label("Search", exact=True)
    search.fill("what does the user play?")
    search.press("Enter")
    expect(sized.locator("#memory-count")).to_contain_text("match")
    assert listed.evaluate(CONTENT_Y) == top
    search.fill("")
    search.press("Enter")
    expect(sized.locator("#memory-count")).to_have_text("13 facts")
    sized.locator("#memory-list .pair").get_by_role("button", name="Both are true").click()
    status = sized.locator("#memory-status")
    expect(status).to_contain_text("Kept both")
    expect(status).to_have_attribute("title", f"Kept both: {long_new} · {long_old}")
    assert listed.evaluate(CONTENT_Y) == top
    sized.screenshot(path=str(shots / f"kept-both-{width_of(sized)}.png"))


def test_the_older_fact_of_an_open_pair_is_marked(
    sized: Page, serve: Callable[..., Server], shots: Path
) -> None:
    server = serve()
    open_ui(sized, server.url)
    a_pair(sized, "User lives in Berlin", "User moved to Lisbon")
    cards = sized.locator("#memory-list .memory")
    older = cards.filter(has_text="User lives in Berlin")
    mark = older.locator(".outdated")
    expect(mark).to_have_text("May be outdated")
    expect(mark).to_have_attribute(
        "title",
        "A newer fact may update this one: User moved to Lisbon (answer it there: Replace or "
        "Both are true)",
    )
    expect(cards.filter(has_text="User moved to Lisbon").locator(".outdated")).to_have_count(0)
    sized.screenshot(path=str(shots / f"pair-{width_of(sized)}.png"))
    sized.reload()  # the mark comes from the server's open pairs
    expect(sized.locator("body")).to_have_attribute("data-ready", "1")
    expect(mark).to_have_text("May be outdated")
    sized.locator("#memory-list .pair").get_by_role("button", name="Both are true").click()
    expect(mark).to_have_count(0)  # answered: neither is outdated
    sized.reload()
    expect(sized.locator("body")).to_have_attribute("data-ready", "1")
    expect(cards).to_have_count(2)
    expect(sized.locator("#memory-list .outdated")).to_have_count(0)


def test_weak_matches_stay_hidden_when_the_cut_off_cannot_be_read(
    sized: Page, serve: Callable[..., Server], shots: Path
) -> None:
    """Search listed "5 matches" with 1 % and 12 % among them: a page that could not read the
    cut-off listed every match. It uses the memory block's cut-off regardless."""
    server = serve()
    facts = [
        "User lives in Lisbon near the river",
        "User prefers green tea in the morning",
        "User's sister Ana is a doctor in Madrid",
        "User plays the cello in an orchestra",
        "User is allergic to peanuts",
    ]
    for fact in facts:
        server.bank.save("local", fact, source="user")
    hits = server.bank.search("local", "where do I live?", limit=200)
    strong = [h.memory.content for h in hits if h.relevance >= RECALL_MIN_RELEVANCE]
    assert strong and len(strong) < len(hits), "the data must give good and weak matches"
    sized.route("**/ui/settings.json", lambda route: route.abort())
    open_ui(sized, server.url)
    sized.get_by_label("Search", exact=True).fill("where do I live?")
    sized.get_by_label("Search", exact=True).press("Enter")
    cards = sized.locator("#memory-list .memory .content")
    expect(cards).to_have_count(len(strong))
    assert cards.all_inner_texts() == strong
    for shown in sized.locator("#memory-list .score").all_inner_texts():
        percent = int(shown.split("Relevance ")[1].split(" %")[0].lstrip("< "))
        assert percent >= round(RECALL_MIN_RELEVANCE * 100), shown
    weaker = len(hits) - len(strong)
    expect(sized.locator("#weaker-toggle")).to_have_text(
        f"Show {weaker} weaker match{'es' if weaker != 1 else ''}"
    )
    sized.screenshot(path=str(shots / f"search-{width_of(sized)}.png"))


def test_the_pages_cut_off_is_the_memory_blocks() -> None:
    """The number app.js falls back on is rules/ranking's, so both hide the same matches."""
    lines = APP_JS.read_text(encoding="utf-8").splitlines()
    line = next(text for text in lines if "SEARCH_MIN_RELEVANCE =" in text)
    assert float(line.split("=")[1].split(";")[0]) == RECALL_MIN_RELEVANCE

"""forget_preview / forget_confirm: plans, the no-LLM rule, the LLM path, lifecycle, atomicity."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

from chat_server import ChatServer, running_chat_server
from memorybank import MemoryBank
from memorybank.errors import NotFound, ValidationError
from memorybank.model import Caller, EventKind, ForgetAction, HistoryEvent, PlanStatus, utcnow
from memorybank.providers.llm import ChatClient
from memorybank.services.forget import (
    PLAN_TTL,
    ForgetPreview,
    forget_cancel,
    forget_confirm,
    forget_preview,
    render_executed,
    render_preview,
)

ANA = Caller(user_id="ana", thread_id="t1")
BEN = Caller(user_id="ben", thread_id="t2")
QUERY = "my old home address on Oak Street"
ADDRESS = "User's home address is 123 Oak Street, Apt 4B"
LIVED = "User lived on Oak Street for 3 years"
COMMUTE = "User commuted from Oak Street to downtown TechCorp office"
OTHERS = [
    "User works as a Senior Engineer at TechCorp",
    "User has an old dog named Rex",
    "User prefers async communication",
    "User enjoys hiking in the mountains",
]


def seed(bank: MemoryBank, user: str = "ana") -> dict[str, str]:
    """Content → id of the standard memories."""
    out = {}
    for text in [ADDRESS, LIVED, COMMUTE, *OTHERS]:
        memory = bank.save(user, text, "context").memory
        assert memory is not None
        out[text] = memory.id
    return out


def actions(preview: ForgetPreview) -> dict[str, ForgetAction]:
    return {item.memory.content: item.action for item in preview.items}


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with running_chat_server() as server:
        yield server


@pytest.fixture
def llm(chat: ChatServer) -> Iterator[ChatClient]:
    with ChatClient(chat.base_url, "test-model", backoff=0.01, max_retries=0) as client:
        yield client


# -- the rule without an LLM ----------------------------------------------------------------


def test_rule_forgets_memories_sharing_two_request_words(bank: MemoryBank) -> None:
    seed(bank)
    preview = forget_preview(bank, ANA, QUERY)
    assert actions(preview) == {
        ADDRESS: ForgetAction.FORGET,
        LIVED: ForgetAction.FORGET,
        COMMUTE: ForgetAction.FORGET,
        **dict.fromkeys(OTHERS, ForgetAction.KEEP),
    }
    reasons = {item.memory.content: item.reason for item in preview.items}
    assert reasons[LIVED] == "mentions 'oak', 'street'"
    assert reasons["User has an old dog named Rex"] == "mentions only 'old'"
    assert preview.plan.id.startswith("fp_")
    assert preview.plan.expires_at - preview.plan.created_at == PLAN_TTL


def test_one_word_requests_need_that_word(bank: MemoryBank) -> None:
    seed(bank)
    preview = forget_preview(bank, ANA, "please forget everything about Rex")
    forgotten = [i.memory.content for i in preview.of(ForgetAction.FORGET)]
    assert forgotten == ["User has an old dog named Rex"]


# Issue 28: "everything about my old job at Globex" kept "User used to work at Globex as a
# backend developer" ("mentions only 'globex'"). A memory that shares the name is about the
# request when the rest of it is about the rest of the request, and the name is the user's.
GLOBEX = "forget everything about my old job at Globex"
WORKED = "User used to work at Globex as a backend developer"
GLOBEX_JOB = [WORKED, "User's manager at Globex was Priya", "User left Globex in 2023"]
NOT_GLOBEX_JOB = [
    "User's sister works at Globex",
    "User's friend Dana joined Globex",
    "User bought a Globex laptop",
    "User works as a Senior Engineer at TechCorp",
    "User prefers TypeScript",
    "User has an old dog named Rex",
]


def test_a_memory_naming_the_request_and_about_its_topic_is_forgotten(bank: MemoryBank) -> None:
    for text in [*GLOBEX_JOB, *NOT_GLOBEX_JOB]:
        bank.save("ana", text, "context")
    preview = forget_preview(bank, ANA, GLOBEX)
    assert actions(preview) == {
        **dict.fromkeys(GLOBEX_JOB, ForgetAction.FORGET),
        **dict.fromkeys(NOT_GLOBEX_JOB, ForgetAction.KEEP),
    }
    reasons = {item.memory.content: item.reason for item in preview.items}
    assert reasons[WORKED] == "mentions 'globex' and is about 'old job'"
    assert reasons["User's sister works at Globex"] == (
        "mentions 'globex' of someone else (User's sister)"
    )
    assert reasons["User's friend Dana joined Globex"] == (
        "mentions 'globex' of someone else (User's friend)"
    )
    assert reasons["User bought a Globex laptop"] == "mentions only 'globex'"
    assert reasons["User works as a Senior Engineer at TechCorp"] == (
        "does not mention what to forget"
    )
    result = forget_confirm(bank, ANA, preview.plan.id)
    assert len(result.forgotten) == 3
    assert sorted(m.content for m in bank.list("ana")) == sorted(NOT_GLOBEX_JOB)


@pytest.mark.parametrize(
    ("query", "forgotten", "kept"),
    [
        (
            "my trip to Japan",
            ["User flew to Japan in April 2022", "User visited temples in Kyoto, Japan"],
            ["User's brother lives in Japan", "User bought a knife made in Japan"],
        ),
        (
            "my ex-girlfriend Laura",
            ["User dated Laura for two years", "User broke up with Laura in 2020"],
            ["User's sister Laura is a nurse", "User's colleague Laura reviews User's code"],
        ),
        (
            "my old apartment in Berlin",
            ["User lived in Berlin until 2019", "User paid 900 euros rent in Berlin"],
            ["User's cousin lives in Berlin", "User attended a conference in Berlin"],
        ),
        (
            "my divorce from Mark",
            ["User and Mark separated in 2021", "User was married to Mark for ten years"],
            ["User's son Mark plays football", "User reads Mark Twain novels"],
        ),
        (
            "my old car, the Honda",
            ["User drove a Honda Civic for eight years", "User sold the Honda in 2022"],
            ["User's dad drives a Honda", "User's neighbour parks a Honda in front of the house"],
        ),
    ],
)
def test_a_shared_name_alone_decides_nothing(
    bank: MemoryBank, query: str, forgotten: list[str], kept: list[str]
) -> None:
    """The same rule on other requests: the user's own doings with the name go, another
    person's and incidental mentions stay."""
    for text in [*forgotten, *kept]:
        bank.save("ana", text, "context")
    assert actions(forget_preview(bank, ANA, query)) == {
        **dict.fromkeys(forgotten, ForgetAction.FORGET),
        **dict.fromkeys(kept, ForgetAction.KEEP),
    }


def test_preview_text_follows_the_seed(bank: MemoryBank) -> None:
    seed(bank)
    preview = forget_preview(bank, ANA, QUERY)
    text = render_preview(preview)
    assert text.startswith(
        f'## Forget Preview\n\n**Summary:** Will delete 3 memories matching "{QUERY}". '
        "4 memories found nearby will be kept.\n\n### Will FORGET (3)\n1. "
    )
    assert "\n   _mentions 'address', 'home', 'oak', 'street'_\n" in text
    assert "### Will REWRITE" not in text
    assert text.endswith(
        f"\n---\n**Plan ID:** {preview.plan.id}\nUse `forget_confirm` with this plan ID to execute."
    )


def test_confirm_forgets_for_real(bank: MemoryBank) -> None:
    ids = seed(bank)
    preview = forget_preview(bank, ANA, QUERY)
    result = forget_confirm(bank, ANA, preview.plan.id)
    assert sorted(result.forgotten) == sorted(ids[t] for t in (ADDRESS, LIVED, COMMUTE))
    assert render_executed(result) == (
        "## Forget Plan Executed\n- Forgotten: 3\n- Rewritten: 0\n- Kept: 4"
    )
    assert sorted(m.content for m in bank.list("ana")) == sorted(OTHERS)
    assert not [h for h in bank.search("ana", "Oak Street") if "Oak" in h.memory.content]
    events = bank.history(ids[ADDRESS], "ana")
    assert [(e.kind, e.old_content, e.new_content) for e in events] == [
        (EventKind.FORGET, None, None)
    ]


def test_nothing_to_forget(bank: MemoryBank) -> None:
    seed(bank)
    preview = forget_preview(bank, ANA, "my passport number")
    assert preview.of(ForgetAction.FORGET) == []
    assert preview.summary.startswith("Nothing to forget")
    assert render_executed(forget_confirm(bank, ANA, preview.plan.id)).endswith("- Kept: 7")


@pytest.mark.parametrize(("query", "top_k"), [("", 50), ("   ", 50), ("x", 0), ("x", 201)])
def test_bad_preview_arguments(bank: MemoryBank, query: str, top_k: int) -> None:
    with pytest.raises(ValidationError):
        forget_preview(bank, ANA, query, top_k)


def test_superseded_memories_are_reachable(bank: MemoryBank) -> None:
    """A replaced memory is still stored, so a forget request must still find it."""
    ids = seed(bank)
    old = bank.get(ids[ADDRESS], "ana")
    marked = old.model_copy(update={"superseded_by": ids[LIVED]})
    bank.store.replace(
        marked, None, HistoryEvent(memory_id=old.id, user_id="ana", kind=EventKind.SUPERSEDE)
    )
    preview = forget_preview(bank, ANA, QUERY)
    assert actions(preview)[ADDRESS] == ForgetAction.FORGET


def test_plans_store_no_text(bank: MemoryBank, db_path: Path) -> None:
    seed(bank)
    preview = forget_preview(bank, ANA, QUERY)
    conn = apsw.Connection(str(db_path))
    try:
        (row,) = list(conn.execute("SELECT * FROM forget_plans WHERE id = ?", (preview.plan.id,)))
    finally:
        conn.close()
    raw = repr(row)
    assert preview.plan.id in raw
    assert "Oak" not in raw and "address" not in raw


# -- with an LLM --------------------------------------------------------------------------------


def plan_reply(ids: dict[str, str], rewritten: str) -> Any:
    """The model's plan: the seed's example (2 forgotten, 1 rewritten, the rest kept)."""

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        listing = body["messages"][1]["content"]
        listed = re.findall(r"- (mem_\w+): ", listing)
        items = []
        for mid in listed:
            if mid in (ids[ADDRESS], ids[LIVED]):
                items.append(
                    {"id": mid, "action": "FORGET", "rewritten": None, "reason": "Contains it"}
                )
            elif mid == ids[COMMUTE]:
                items.append(
                    {"id": mid, "action": "REWRITE", "rewritten": rewritten, "reason": "Keeps work"}
                )
            else:
                items.append(
                    {"id": mid, "action": "KEEP", "rewritten": None, "reason": "Unrelated"}
                )
        return {"summary": "Will delete 2 memories; 1 rewritten.", "items": items}

    return reply


def test_llm_plan_forgets_rewrites_and_keeps(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    ids = seed(bank)
    chat.reply(plan_reply(ids, "User commuted to downtown TechCorp office"))
    preview = forget_preview(bank, ANA, QUERY, llm=llm)
    assert chat.bodies()[0]["response_format"]["json_schema"]["name"] == "PlannedForget"
    text = render_preview(preview)
    assert "**Summary:** Will delete 2 memories; 1 rewritten." in text
    assert "### Will FORGET (2)" in text
    assert (
        "### Will REWRITE (1)\n"
        f"1. **Before:** {COMMUTE}\n"
        "   **After:** User commuted to downtown TechCorp office\n"
        "   _Keeps work_"
    ) in text

    result = forget_confirm(bank, ANA, preview.plan.id)
    assert render_executed(result) == (
        "## Forget Plan Executed\n- Forgotten: 2\n- Rewritten: 1\n- Kept: 4"
    )
    rewritten = bank.get(ids[COMMUTE], "ana")
    assert rewritten.content == "User commuted to downtown TechCorp office"
    # The old text is gone from history, the text index and the vectors.
    events = bank.history(ids[COMMUTE], "ana")
    assert [(e.kind, e.old_content) for e in events] == [(EventKind.UPDATE, None)]
    assert all("Oak" not in h.memory.content for h in bank.search("ana", "Oak Street"))
    top = bank.search("ana", "commute to the downtown office", limit=1)[0]
    assert top.memory.id == ids[COMMUTE]


def test_llm_bad_rewrite_is_retried_with_the_reason(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    ids = seed(bank)
    chat.reply(plan_reply(ids, "Commute"), plan_reply(ids, "I commuted to the office downtown"))
    preview = forget_preview(bank, ANA, QUERY, llm=llm)
    assert "content too short" in chat.last_user_message(1)
    (rewrite,) = preview.of(ForgetAction.REWRITE)
    assert rewrite.rewrite == "User commuted to the office downtown"  # rephrased as saved


def test_llm_unknown_ids_are_retried_and_unjudged_ones_kept(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    ids = seed(bank)
    bad = {
        "summary": "x",
        "items": [{"id": "mem_x", "action": "FORGET", "rewritten": None, "reason": "?"}],
    }
    only_address = {
        "summary": "Will delete the address.",
        "items": [{"id": ids[ADDRESS], "action": "FORGET", "rewritten": None, "reason": "It"}],
    }
    chat.reply(bad, only_address)
    preview = forget_preview(bank, ANA, QUERY, llm=llm)
    assert "'mem_x' is unknown" in chat.last_user_message(1)
    assert [i.memory.id for i in preview.of(ForgetAction.FORGET)] == [ids[ADDRESS]]
    assert {i.reason for i in preview.of(ForgetAction.KEEP)} == {"not judged"}


def test_llm_failure_falls_back_to_the_rule(
    bank: MemoryBank, chat: ChatServer, llm: ChatClient
) -> None:
    seed(bank)
    chat.reply("no idea", "still no idea")
    preview = forget_preview(bank, ANA, QUERY, llm=llm)
    assert len(preview.of(ForgetAction.FORGET)) == 3
    assert "used the word-match rule" in preview.warnings[0]
    assert "Note: the LLM could not plan this" in render_preview(preview)


# -- lifecycle ----------------------------------------------------------------------------------


def test_expired_plan_is_refused(bank: MemoryBank) -> None:
    ids = seed(bank)
    made = utcnow() - timedelta(hours=25)
    preview = forget_preview(bank, ANA, QUERY, now=made)
    with pytest.raises(ValidationError, match="expired"):
        forget_confirm(bank, ANA, preview.plan.id)
    assert bank.get(ids[ADDRESS], "ana")  # nothing happened
    fresh = forget_preview(bank, ANA, QUERY)
    with pytest.raises(ValidationError, match="expired"):
        forget_confirm(bank, ANA, fresh.plan.id, now=utcnow() + PLAN_TTL + timedelta(seconds=1))
    assert forget_confirm(bank, ANA, fresh.plan.id).forgotten  # within 24 h it works


def test_cancelled_plan_is_refused(bank: MemoryBank) -> None:
    seed(bank)
    preview = forget_preview(bank, ANA, QUERY)
    cancelled = forget_cancel(bank, ANA, preview.plan.id)
    assert cancelled.status == PlanStatus.CANCELLED
    with pytest.raises(ValidationError, match="cancelled"):
        forget_confirm(bank, ANA, preview.plan.id)
    with pytest.raises(ValidationError, match="cancelled"):
        forget_cancel(bank, ANA, preview.plan.id)
    assert bank.count("ana") == 7


def test_foreign_plan_looks_missing_and_stays_usable(bank: MemoryBank) -> None:
    seed(bank)
    preview = forget_preview(bank, ANA, QUERY)
    with pytest.raises(NotFound, match="no forget plan"):
        forget_confirm(bank, BEN, preview.plan.id)
    with pytest.raises(NotFound):
        forget_cancel(bank, BEN, preview.plan.id)
    in_project = Caller(user_id="ana", project_id="apollo")
    with pytest.raises(NotFound):
        forget_confirm(bank, in_project, preview.plan.id)
    assert len(forget_confirm(bank, ANA, preview.plan.id).forgotten) == 3


def test_used_plan_is_refused(bank: MemoryBank) -> None:
    seed(bank)
    preview = forget_preview(bank, ANA, QUERY)
    forget_confirm(bank, ANA, preview.plan.id)
    with pytest.raises(ValidationError, match="already executed"):
        forget_confirm(bank, ANA, preview.plan.id)
    assert bank.store.get_forget_plan(preview.plan.id).steps == ()  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("plan_id", "error"), [("fp_01NOPE", NotFound), ("mem_1", ValidationError)]
)
def test_unknown_or_malformed_plan_ids(bank: MemoryBank, plan_id: str, error: type) -> None:
    with pytest.raises(error):
        forget_confirm(bank, ANA, plan_id)


def test_concurrent_confirms_apply_once(bank: MemoryBank) -> None:
    seed(bank)
    preview = forget_preview(bank, ANA, QUERY)
    outcomes: list[Any] = []
    barrier = threading.Barrier(4)

    def confirm() -> None:
        barrier.wait()
        try:
            outcomes.append(forget_confirm(bank, ANA, preview.plan.id))
        except ValidationError as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=confirm) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = [o for o in outcomes if not isinstance(o, Exception)]
    assert len(done) == 1 and len(done[0].forgotten) == 3
    assert all("already executed" in str(o) for o in outcomes if isinstance(o, Exception))


# -- atomicity ----------------------------------------------------------------------------------


def test_a_memory_changed_after_preview_aborts_the_whole_plan(bank: MemoryBank) -> None:
    seed(bank)
    preview = forget_preview(bank, ANA, QUERY)
    planned = [s.memory_id for s in preview.plan.steps if s.action != ForgetAction.KEEP]
    assert len(planned) == 3
    # Change the last planned memory: the earlier deletes run first, then must roll back.
    bank.update(planned[-1], "ana", content="User lived on Oak Street, near the park")
    with pytest.raises(ValidationError, match="changed after the forget preview"):
        forget_confirm(bank, ANA, preview.plan.id)
    assert all(bank.get(mid, "ana") for mid in planned)  # nothing was deleted
    assert bank.store.get_forget_plan(preview.plan.id).status == PlanStatus.PENDING  # type: ignore[union-attr]
    # A new preview sees the new version and goes through.
    again = forget_preview(bank, ANA, QUERY)
    assert len(forget_confirm(bank, ANA, again.plan.id).forgotten) == 3


def test_memories_gone_before_confirm_are_reported(bank: MemoryBank) -> None:
    ids = seed(bank)
    preview = forget_preview(bank, ANA, QUERY)
    bank.delete(ids[LIVED], "ana")
    result = forget_confirm(bank, ANA, preview.plan.id)
    assert result.missing == [ids[LIVED]]
    assert render_executed(result).endswith("- Kept: 4\n- Already gone: 1")


def test_plans_never_touch_another_users_memories(bank: MemoryBank) -> None:
    seed(bank, "ana")
    ben_ids = seed(bank, "ben")
    preview = forget_preview(bank, ANA, QUERY)
    assert not {s.memory_id for s in preview.plan.steps} & set(ben_ids.values())
    forget_confirm(bank, ANA, preview.plan.id)
    assert bank.count("ben") == 7


# Issue 47: "where I live" planned to delete the sister's home and keep the user's new one.
HOME = ["User lives in Berlin", "User moved to Lisbon"]
NOT_HOME = [
    "User's sister Ines lives in Porto",
    "User prefers green tea",
    "User works at Globex as an engineer",
]


@pytest.mark.parametrize("query", ["where I live", "where do I live?"])
def test_a_request_about_the_user_plans_the_users_own_facts_only(
    bank: MemoryBank, query: str
) -> None:
    """The sister's home is someone else's; the move is another value of the user's home,
    which the request names no value of, so it goes with the first."""
    for text in [*HOME, *NOT_HOME]:
        bank.save("ana", text, "identity")
    preview = forget_preview(bank, ANA, query)
    assert actions(preview) == {
        **dict.fromkeys(HOME, ForgetAction.FORGET),
        **dict.fromkeys(NOT_HOME, ForgetAction.KEEP),
    }
    reasons = {item.memory.content: item.reason for item in preview.items}
    assert reasons["User's sister Ines lives in Porto"].endswith("of someone else (User's sister)")
    assert reasons["User moved to Lisbon"] == (
        "may update 'User lives in Berlin', which is forgotten"
    )
    # Naming the person makes their facts the request's; naming a value keeps the others.
    sister = forget_preview(bank, ANA, "my sister's home in Porto")
    assert [i.memory.content for i in sister.of(ForgetAction.FORGET)] == [NOT_HOME[0]]
    berlin = forget_preview(bank, ANA, "that I lived in Berlin")
    assert [i.memory.content for i in berlin.of(ForgetAction.FORGET)] == [HOME[0]]

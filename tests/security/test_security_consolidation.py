"""Issue 34, finding 3, performed for real over HTTP: a member's save correctly kept the
owner's project fact as a conflict, then an admin's "apply all" (``POST /api/consolidate``)
or the scheduled tidy-up superseded it (``memorybank:consolidation``). Consolidation now
retires only what the newer fact's author could have retired by a save; the rest it lists as
``proposals`` and leaves alone, whoever applies.
"""

from __future__ import annotations

import json
import time

import httpx
from typer.testing import CliRunner

from chat_server import running_chat_server
from memorybank import MemoryBank
from memorybank.cli import app
from memorybank.core.consolidate import LAST_RUN_KEY
from memorybank.core.records import save_records
from memorybank.model import Category, Memory
from scripted_llm import answering, llm_judged
from server_helpers import World, bank_url, make_world, serving

#: The member's newer value of the owner's fact: the bank's LLM judge calls it a change, so
#: only the author rule keeps the owner's fact.
OWNERS = "User's favourite colour is blue"
MEMBERS = "User's favourite colour is green"
#: A pair the owner's newer fact surely replaces, stored before saves superseded.
MEMBER_OLD, OWNER_NEW = "User works at Acme", "User now works at Globex"


def _attack(world: World, http: httpx.Client, bank: MemoryBank) -> dict[str, str]:
    """The owner's fact, the member's save that may update it (kept as a conflict), and a
    member's older fact that a newer one of the owner surely replaces; their ids."""
    owner = http.post(
        "/api/memory/drive/apollo", json={"fact": OWNERS}, headers=world.auth("owner")
    )
    assert owner.status_code == 201, owner.text
    body = {"items": [{"content": MEMBERS}], "project_id": "apollo"}
    member = http.post("/api/memories", json=body, headers=world.auth("member"))
    assert member.is_success, member.text
    result = member.json()["results"][0]
    assert [c["memory_id"] for c in result["conflicts"]] == [owner.json()["memory"]["id"]]
    ids = {OWNERS: owner.json()["memory"]["id"], MEMBERS: result["memory_id"]}
    for user, text in (("member", MEMBER_OLD), ("owner", OWNER_NEW)):
        record = Memory(user_id=user, project_id="apollo", content=text, category=Category.IDENTITY)
        ids[text] = save_records(bank, [record], actor=user)[0].id
    return ids


def _current(bank: MemoryBank, memory_id: str) -> bool:
    return bank.get(memory_id, "owner", project_id="apollo").superseded_by is None


#: What the bank's LLM judge calls changes: the member's newer value and the owner's.
CHANGES = {(OWNERS, MEMBERS), (MEMBER_OLD, OWNER_NEW)}


def test_an_admins_apply_all_keeps_the_owners_fact_as_a_proposal(bank: MemoryBank) -> None:
    with llm_judged(bank, CHANGES) as judged:
        _apply_all(judged)


def _apply_all(bank: MemoryBank) -> None:
    world = make_world(bank)
    with serving(world.app) as http:
        ids = _attack(world, http, bank)
        preview = http.get(
            "/api/consolidate", params={"project_id": "apollo"}, headers=world.auth("admin")
        )
        assert preview.status_code == 200, preview.text
        proposed = [(p["old"]["id"], p["new"]["id"]) for p in preview.json()["proposals"]]
        assert proposed == [(ids[OWNERS], ids[MEMBERS])]
        applied = http.post(
            "/api/consolidate", json={"project_id": "apollo"}, headers=world.auth("admin")
        )
        assert applied.status_code == 200, applied.text
        done = applied.json()
    assert [(s["old"]["id"], s["new"]["id"]) for s in done["supersessions"]] == [
        (ids[MEMBER_OLD], ids[OWNER_NEW])
    ]
    assert [(p["old"]["id"], p["new"]["id"]) for p in done["proposals"]] == proposed
    assert done["proposed_count"] == 1
    assert _current(bank, ids[OWNERS]) and _current(bank, ids[MEMBERS])
    assert not _current(bank, ids[MEMBER_OLD])  # the owner's newer fact could retire it


def test_the_scheduled_tidy_up_never_retires_an_owners_fact_for_a_member(
    bank: MemoryBank,
) -> None:
    with llm_judged(bank, CHANGES) as judged:
        _scheduled(judged)


def _scheduled(bank: MemoryBank) -> None:
    world = make_world(bank, consolidate_every_hours=0.0003)  # about a second
    with serving(world.app) as http:
        ids = _attack(world, http, bank)
        # The job marks each run's start in the store before it runs: a mark set after the
        # attack is a run that saw it, and the next mark says that run is over.
        deadline = time.monotonic() + 30
        mark = bank.store.get_meta(LAST_RUN_KEY)
        for _ in range(2):
            while bank.store.get_meta(LAST_RUN_KEY) == mark and time.monotonic() < deadline:
                time.sleep(0.05)
            assert bank.store.get_meta(LAST_RUN_KEY) != mark, "the job did not run"
            mark = bank.store.get_meta(LAST_RUN_KEY)
    assert _current(bank, ids[OWNERS]) and _current(bank, ids[MEMBERS])
    assert not _current(bank, ids[MEMBER_OLD])


def test_the_cli_never_retires_an_owners_fact_for_a_member(bank: MemoryBank) -> None:
    make_world(bank)  # owner, admin and member of apollo
    ids = {}
    # The owner's fact, then a member's newer one that surely replaces it, stored as they are.
    for user, text in (("owner", MEMBER_OLD), ("member", OWNER_NEW)):
        record = Memory(user_id=user, project_id="apollo", content=text, category=Category.IDENTITY)
        ids[user] = save_records(bank, [record], actor=user)[0].id
    command = ["consolidate", "owner", "--project", "apollo", "--apply", "--db", bank_url(bank)]
    # The CLI's bank asks its LLM (a chat server on 127.0.0.1) about the changes it reads.
    with running_chat_server() as chat:
        chat.reply(*[answering({(MEMBER_OLD, OWNER_NEW)})] * 50)
        env = {
            "MEMORYBANK_URL": None,
            "MEMORYBANK_LLM_BASE_URL": chat.base_url,
            "MEMORYBANK_LLM_MODEL": "test-model",
        }
        result = CliRunner().invoke(app, [*command, "--json"], env=env)
        shown = CliRunner().invoke(app, command, env={**env, "COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    # Before: superseded by the member's fact, as the owner's own save would have done.
    assert done["supersessions"] == []
    assert [(p["old"]["id"], p["new"]["id"]) for p in done["proposals"]] == [
        (ids["owner"], ids["member"])
    ]
    assert _current(bank, ids["owner"]) and _current(bank, ids["member"])
    # Without --json the proposal is shown, as not applied.
    assert shown.exit_code == 0 and "Left to a person" in shown.output, shown.output

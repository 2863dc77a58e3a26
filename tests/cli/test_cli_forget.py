"""``memorybank forget``: the preview, ``--yes``, and the plan id flow, on real SQLite files."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_helpers import run, run_json


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/t.db"
    for text in (
        "User's home address is 12 Oak Street",
        "User moved away from Oak Street in 2021",
        "User prefers green tea",
    ):
        assert run(url, "add", "sam", text).exit_code == 0
    return url


def contents(db: str) -> list[str]:
    listed = run_json(db, "list", "sam", "--include-superseded")["memories"]
    return sorted(m["content"] for m in listed)


def test_preview_changes_nothing_and_names_the_plan_to_confirm(db: str) -> None:
    result = run(db, "forget", "sam", "my old home address on Oak Street")
    assert result.exit_code == 0, result.output
    assert 'Will delete 2 memories matching "my old home address on Oak Street"' in result.stdout
    assert "Will keep (1):" in result.stdout and "User prefers green tea" in result.stdout
    plan_id = result.stdout.split("--confirm ")[1].split()[0]
    assert plan_id.startswith("fp_")
    assert len(contents(db)) == 3  # a preview forgets nothing

    done = run(db, "forget", "sam", "--confirm", plan_id)
    assert done.exit_code == 0, done.output
    assert "Forgot 2 memories" in done.stdout
    assert contents(db) == ["User prefers green tea"]

    again = run(db, "forget", "sam", "--confirm", plan_id)  # a plan is used once
    assert again.exit_code == 2 and "Error:" in again.output


def test_json_preview_is_the_rest_shape_and_confirm_lists_ids(db: str) -> None:
    from fastapi.testclient import TestClient

    import memorybank
    from server_helpers import make_world

    preview = run_json(db, "forget", "sam", "my old home address on Oak Street")
    with memorybank.open(db) as bank:
        rest = TestClient(make_world(bank, users=False).app).post(
            "/api/forget/preview",
            json={"query": "my old home address on Oak Street"},
            headers={"X-Memorybank-User": "sam"},
        )
    assert rest.status_code == 200, rest.text
    # One builder (services.forget.preview_json) for both: the same fields, the same steps.
    assert set(preview) == set(rest.json()) >= {"plan_id", "steps", "warnings", "text"}
    shown = [(s["memory_id"], s["action"]) for s in rest.json()["steps"]]
    assert [(s["memory_id"], s["action"]) for s in preview["steps"]] == shown
    forget = {s["memory_id"] for s in preview["steps"] if s["action"] == "FORGET"}
    assert len(forget) == 2
    done = run_json(db, "forget", "sam", "--confirm", preview["plan_id"])
    assert set(done["forgotten"]) == forget and done["kept"] == 1


def test_yes_applies_at_once(db: str) -> None:
    done = run_json(db, "forget", "sam", "my old home address on Oak Street", "--yes")
    assert len(done["forgotten"]) == 2
    assert contents(db) == ["User prefers green tea"]


def test_cancel_drops_the_plan(db: str) -> None:
    plan_id = run_json(db, "forget", "sam", "Oak Street address")["plan_id"]
    assert run(db, "forget", "sam", "--cancel", plan_id).exit_code == 0
    refused = run(db, "forget", "sam", "--confirm", plan_id)
    assert refused.exit_code == 2, refused.output
    assert len(contents(db)) == 3


def test_unknown_plans_and_other_users_exit_3(db: str) -> None:
    plan_id = run_json(db, "forget", "sam", "Oak Street address")["plan_id"]
    assert run(db, "forget", "eve", "--confirm", plan_id).exit_code == 3
    assert run(db, "forget", "sam", "--confirm", "fp_nope").exit_code == 3
    assert len(contents(db)) == 3


def test_bad_combinations_say_what_to_fix(db: str) -> None:
    neither = run(db, "forget", "sam")
    assert neither.exit_code == 2 and "--confirm PLAN_ID" in neither.output
    both = run(db, "forget", "sam", "Oak Street", "--confirm", "fp_x")
    assert both.exit_code == 2
    assert run(db, "forget", "sam", "--confirm", "mem_1").exit_code == 2  # not a plan id
    empty = run(db, "forget", "sam", "   ")
    assert empty.exit_code == 2 and "say what to forget" in empty.output


def test_asks_on_a_terminal(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memorybank.cli._common.interactive", lambda: True)
    declined = run(db, "forget", "sam", "my old home address on Oak Street", stdin="n\n")
    assert declined.exit_code == 1 and "Apply this plan?" in declined.output
    assert len(contents(db)) == 3
    accepted = run(db, "forget", "sam", "my old home address on Oak Street", stdin="y\n")
    assert accepted.exit_code == 0, accepted.output
    assert contents(db) == ["User prefers green tea"]


def test_nothing_to_forget_asks_nothing(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memorybank.cli._common.interactive", lambda: True)
    result = run(db, "forget", "sam", "my favourite submarine")
    assert result.exit_code == 0, result.output
    assert "Nothing to forget" in result.stdout and "Apply" not in result.stdout

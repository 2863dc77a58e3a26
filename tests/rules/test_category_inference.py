"""Category and importance when the caller gives none (issue 18): seed 000's five categories
inferred from general cue words, importance by seed 000's rules for the inferred category."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from memorybank import MemoryBank
from memorybank.model import Category, SaveInput
from memorybank.rules.policy import infer_category, score_importance
from server_helpers import LOOPBACK_PEER, World, make_world

CASES = {
    Category.IDENTITY: [
        "My name is Priya",
        "User works as a nurse at the city hospital",
        "I'm a backend engineer",
        "User lives in Montreal",
        "User was born in 1988",
        "User speaks Portuguese and Spanish",
    ],
    Category.PREFERENCE: [
        "I prefer dark mode",
        "User likes short answers",
        "User hates meetings before 10am",
        "User's favourite editor is Emacs",
        "User loves spicy food",
        "User dislikes emoji in replies",
    ],
    Category.RELATIONSHIP: [
        "User's wife is called Mina",
        "User has two daughters",
        "My brother lives abroad and visits every summer",
        "User's colleague Tom reviews their code",
        "User's best friend is Ana",
    ],
    Category.PROJECT: [
        "User is working on a recipe app",
        "I'm building a SaaS product",
        "The deadline for the thesis is in June",
        "User's repo uses a monorepo layout with pnpm",
        "User is migrating the backend to Go",
    ],
    Category.CONTEXT: [
        "User had a long day",
        "User asked about the weather in Rome",
        "User is tired",
        "User mentioned a documentary about whales",
    ],
}


@pytest.mark.parametrize(
    ("text", "expected"), [(t, c) for c, texts in CASES.items() for t in texts]
)
def test_infer_category(text: str, expected: Category) -> None:
    assert infer_category(text) is expected


def test_save_without_a_category_infers_it(bank: MemoryBank) -> None:
    result = bank.save("u", "I prefer dark mode")
    assert result.success and result.content == "User prefers dark mode"
    assert result.category is Category.PREFERENCE
    assert result.importance == score_importance("I prefer dark mode", "preference") == 9
    remembered = bank.save("u", "Remember that my name is Priya Raman")
    assert remembered.category is Category.IDENTITY and remembered.importance == 10
    # A category given is kept, whatever the text says.
    assert bank.save("u", "User loves jazz", "context").category is Category.CONTEXT


def test_save_input_defaults_to_inference() -> None:
    assert SaveInput(content="x").category is None


def test_conversation_turns_stay_context(bank: MemoryBank) -> None:
    [result] = bank.save_many(
        "u", [SaveInput(content="I prefer dark mode", ring="episodic", source="conversation")]
    )
    assert bank.get(result.memory_id, "u").category is Category.CONTEXT


@pytest.fixture
def world(bank: MemoryBank) -> World:
    return make_world(bank)


@pytest.fixture
def client(world: World) -> Iterator[TestClient]:
    with TestClient(world.app, client=LOOPBACK_PEER) as c:
        yield c


def test_rest_add_without_a_category_infers_it(client: TestClient, world: World) -> None:
    h = world.auth("member")
    r = client.post("/api/memory/user", json={"fact": "I prefer dark mode"}, headers=h)
    assert r.status_code == 201, r.text
    memory = r.json()["memory"]
    assert (memory["category"], memory["importance"]) == ("preference", 9)
    drive = {"fact": "The team ships on Fridays"}
    r = client.post("/api/memory/drive/apollo", json=drive, headers=world.auth("owner"))
    assert r.status_code == 201, r.text
    assert r.json()["memory"]["category"] == "project"
    given = {"fact": "User likes jazz", "category": "context"}
    assert client.post("/api/memory/user", json=given, headers=h).json()["memory"]["category"] == (
        "context"
    )


def test_cli_add_without_a_category_infers_it(tmp_path: object) -> None:
    import json

    from memorybank.cli import app

    db = f"sqlite:///{tmp_path}/cli.db"
    out = CliRunner().invoke(app, ["add", "u", "I prefer dark mode", "--db", db, "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["category"] == "preference"

"""Seed 002 §8's success metrics (issue 21): counted where saves and searches are decided,
kept in the database across processes, scoped to an org admin's org, and served by the
library, the REST API and the CLI."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.server_helpers import make_world
from typer.testing import CliRunner

import memorybank
from memorybank import MemoryBank, tools
from memorybank.cli import app as cli
from memorybank.model import Caller
from memorybank.services.accounts import join_org
from memorybank.services.insights import distribution, success_metrics


def test_metrics_count_what_saves_searches_and_prompts_decided(bank: MemoryBank) -> None:
    first = bank.save("ana", "User prefers green tea in the morning", "preference")
    again = bank.save("ana", "User prefers green tea in the morning", "preference")
    assert first.success and again.duplicate
    for i, text in enumerate(["User's sister is named Maria", "User works as a nurse"]):
        bank.save("ana", text)
        bank.save("ben", f"User plays chess on day {i}", on_conflict="keep")
    bank.save("ben", "Team Apollo deploys on Fridays", project_id="apollo")
    assert bank.search("ana", "tea")
    assert not bank.search("cyd", "anything at all")  # cyd has no memory
    caller = Caller(user_id="ana")
    tools.call(bank, tools.profile("default"), "forget", {"id": first.memory_id}, caller)  # AI
    nurse = bank.search("ana", "nurse")[0].memory.id
    bank.delete(nurse, "ana")  # by hand
    prompt = tools.system_prompt(bank, caller, "default")
    assert "sister" in prompt

    m = success_metrics(bank)
    assert (m.saves.saves, m.saves.duplicates_refused) == (6, 1)
    assert m.search_hits.searches == 3 and m.search_hits.searches_with_hits == 2
    assert m.search_hits.hit_rate == pytest.approx(2 / 3, abs=1e-3)
    assert m.retention.created == 6 and m.retention.deleted_within_7_days == 2
    assert m.retention.share_deleted_within_7_days == pytest.approx(2 / 6, abs=1e-3)
    assert m.retention.deleted_within_7_days_by == {"ai": 1, "user": 1}
    assert m.tokens.prompts == 1 and 0 < (m.tokens.block_tokens_avg or 0) <= 500
    assert m.tokens.block_tokens_p95 is not None and m.tokens.block_tokens_p95 <= 500
    assert 0 < (m.tokens.block_share_of_prompt or 0) < 1
    per_user = m.adoption.memories_per_user
    assert (per_user.count, per_user.total, per_user.max) == (2, 3, 2)  # ana 1, ben 2
    assert m.adoption.memories_per_project.total == 1
    assert m.adoption.active_users == 2 and m.adoption.share_with_memory == 1.0


def test_counts_outlive_the_process_that_counted_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with memorybank.open(url) as bank:
        bank.save("ana", "User prefers green tea")
        bank.search("ana", "tea")
    with memorybank.open(url) as other, memorybank.open(url) as third:
        third.search("ana", "coffee beans")
        third.usage.flush()
        m = success_metrics(other)
    assert (m.search_hits.searches, m.saves.saves) == (2, 1)


def test_distribution_buckets_users() -> None:
    d = distribution([0, 0, 3, 9, 70], ((0, 0), (1, 4), (5, 15), (16, None)), "5–15")
    assert [(b.label, b.count) for b in d.buckets] == [
        ("0", 2),
        ("1–4", 1),
        ("5–15", 1),
        ("16+", 1),
    ]
    assert (d.median, d.p95, d.max) == (3.0, 70.0, 70)


def test_rest_metrics_are_for_org_admins_and_scoped_to_their_org(bank: MemoryBank) -> None:
    world = make_world(bank)
    accounts = world.accounts
    accounts.create_project("hermes", owner="owner", org_id="acme")
    accounts.add_org_member("acme", "owner", "admin")
    accounts.add_org_member("acme", "member")
    join_org(bank, "acme", "owner")
    join_org(bank, "acme", "member")
    bank.save("owner", "User likes long walks")
    bank.save("member", "User likes short walks")
    bank.save("outsider", "User likes cycling")
    bank.save("owner", "Hermes ships in spring", project_id="hermes")
    bank.save("owner", "Apollo ships in May", project_id="apollo")  # not an org project
    client = TestClient(world.app)
    assert client.get("/api/stats/metrics", headers=world.auth("member")).status_code == 403
    body = client.get("/api/stats/metrics", headers=world.auth("owner")).json()
    assert body["org_id"] == "acme" and (body["users"], body["projects"]) == (2, 1)
    assert body["adoption"]["memories_per_user"]["total"] == 2  # not the outsider's
    assert body["adoption"]["memories_per_project"]["total"] == 1
    assert body["retention"]["created"] == 3
    # GET /api/stats: the caller's own counts, and the metrics for whoever may see them.
    stats = client.get("/api/stats", headers=world.auth("owner")).json()
    assert stats["memories"] == 1 and stats["metrics"]["org_id"] == "acme"
    assert stats["metrics"]["adoption"] == body["adoption"]
    mine = client.get("/api/stats", headers=world.auth("member")).json()
    assert mine["memories"] == 1 and mine.get("metrics") is None


def test_cli_stats_json_has_the_metrics(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with memorybank.open(db) as bank:
        bank.save("ana", "User prefers green tea")
        bank.search("ana", "tea")
    env = {"COLUMNS": "200", "MEMORYBANK_URL": None}
    result = CliRunner().invoke(cli, ["stats", "--db", db, "--json"], env=env)
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)["metrics"]
    assert metrics["search_hits"] == {"searches": 1, "searches_with_hits": 1, "hit_rate": 1.0}
    table = CliRunner().invoke(cli, ["stats", "--db", db], env=env)
    assert "search hit rate" in table.stdout and "100%" in table.stdout


def test_counts_reach_the_sink_off_the_callers_thread() -> None:
    import threading
    import time

    from memorybank.core.usage import Usage

    received: list[tuple[dict[tuple[int, str, str], int], str]] = []

    def sink(counts: Mapping[tuple[int, str, str], int]) -> None:
        received.append((dict(counts), threading.current_thread().name))

    usage = Usage(sink, flush_seconds=0)
    usage.searched("ana", hits=2)
    deadline = time.monotonic() + 5
    while not received and time.monotonic() < deadline:
        time.sleep(0.01)
    [(counts, thread)] = received
    assert thread == "usage-flush" and thread != threading.current_thread().name
    assert {name: n for (_, _, name), n in counts.items()} == {
        "searches": 1,
        "searches_with_hits": 1,
    }
    assert usage.pending() == {}

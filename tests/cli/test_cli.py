"""The ``memorybank`` command, run in-process with typer's CliRunner on real SQLite files."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner, Result

from cli_helpers import ENV, run, run_json
from memorybank.cli import app
from memorybank.errors import ConfigurationError
from memorybank.settings import Settings


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/t.db"


def add(db: str, user: str, content: str, *extra: str) -> dict[str, Any]:
    data: dict[str, Any] = run_json(db, "add", user, content, *extra)
    return data


def test_add_rephrases_and_rejects_duplicates(db: str) -> None:
    result = run(db, "add", "alice", "I prefer dark mode", "-c", "preference")
    assert result.exit_code == 0, result.output
    assert "Saved mem_" in result.stdout
    assert "User prefers dark mode" in result.stdout

    again = run(db, "add", "alice", "I prefer dark mode", "-c", "preference")
    assert again.exit_code == 4, again.output  # refused: nothing saved, and scripts can tell
    assert "Already saved: User prefers dark mode" in again.stdout

    data = run_json(db, "add", "alice", "I prefer dark mode", "-c", "preference", code=4)
    assert data["success"] is False and data["duplicate"] is True
    assert data["existing_content"] == "User prefers dark mode"


def test_add_options_and_json(db: str) -> None:
    data = add(
        db, "alice", "User works on the billing service", "-c", "project",
        "--tag", "work", "--tag", "billing", "--importance", "7",
        "--metadata", '{"team": "payments"}', "--reasoning", "Helps with code review context",
    )  # fmt: skip
    assert data["success"] is True
    assert data["importance"] == 7
    memory = data["memory"]
    assert memory["tags"] == ["work", "billing"]
    assert memory["metadata"] == {"team": "payments"}
    assert memory["category"] == "project"


def test_search_table_and_json(db: str) -> None:
    add(db, "alice", "I prefer dark mode", "-c", "preference")
    add(db, "alice", "User lives in Lisbon with two cats", "-c", "identity")
    add(db, "bob", "User prefers light mode in every editor", "-c", "preference")

    result = run(db, "search", "alice", "which colour theme does she like?")
    assert result.exit_code == 0, result.output
    assert "User prefers dark mode" in result.stdout
    assert "score" in result.stdout
    assert "light mode" not in result.stdout

    data = run_json(db, "search", "alice", "colour theme", "--limit", "1")
    assert [h["memory"]["content"] for h in data["hits"]] == ["User prefers dark mode"]
    hit = data["hits"][0]
    assert {"score", "relevance", "importance", "recency"} <= hit.keys()

    data = run_json(db, "search", "alice", "theme", "--category", "identity", "--since", "7d")
    assert all(h["memory"]["category"] == "identity" for h in data["hits"])


def test_list_get_update_history_delete(db: str) -> None:
    saved = add(db, "alice", "I prefer dark mode", "-c", "preference")
    mid = saved["memory_id"]
    add(db, "alice", "User lives in Lisbon with two cats", "-c", "identity")

    listing = run_json(db, "list", "alice")
    assert listing["count"] == 2
    assert {m["content"] for m in listing["memories"]} == {
        "User prefers dark mode",
        "User lives in Lisbon with two cats",
    }
    table = run(db, "list", "alice")
    assert table.exit_code == 0 and "User lives in Lisbon" in table.stdout
    page = run_json(db, "list", "alice", "--limit", "1", "--offset", "1")
    assert len(page["memories"]) == 1 and page["count"] == 2
    assert run_json(db, "list", "alice", "--category", "identity")["count"] == 1

    got = run(db, "get", "alice", mid)
    assert got.exit_code == 0, got.output
    assert mid in got.stdout and "User prefers dark mode" in got.stdout

    updated = run_json(
        db, "update", "alice", mid, "--content", "User prefers a dark theme in every app",
        "--importance", "8", "--tag", "ui",
    )  # fmt: skip
    assert updated["id"] == mid
    assert updated["content"] == "User prefers a dark theme in every app"
    assert updated["importance"] == 8 and updated["tags"] == ["ui"]

    events = run_json(db, "history", "alice", mid)["events"]
    assert [e["kind"] for e in events] == ["ADD", "UPDATE"]
    assert events[1]["old_content"] == "User prefers dark mode"
    shown = run(db, "history", "alice", mid)
    assert shown.exit_code == 0 and "UPDATE" in shown.stdout

    deleted = run(db, "delete", "alice", mid)
    assert deleted.exit_code == 0, deleted.output
    gone = run(db, "get", "alice", mid)
    assert gone.exit_code == 3
    assert gone.stderr.startswith("Error: ")
    assert "Traceback" not in gone.output
    assert run_json(db, "get", "alice", mid, code=3)["success"] is False


def test_other_users_memories_are_not_found(db: str) -> None:
    mid = add(db, "alice", "I prefer dark mode", "-c", "preference")["memory_id"]
    assert run(db, "get", "bob", mid).exit_code == 3
    assert run(db, "delete", "bob", mid).exit_code == 3
    assert run(db, "get", "alice", mid).exit_code == 0


def test_clear_needs_yes(db: str) -> None:
    add(db, "alice", "I prefer dark mode", "-c", "preference")
    add(db, "bob", "User prefers light mode in every editor", "-c", "preference")

    refused = run(db, "clear", "alice")
    assert refused.exit_code != 0
    assert "--yes" in refused.stderr
    assert run_json(db, "list", "alice")["count"] == 1

    assert run_json(db, "clear", "alice", "--yes")["deleted"] == 1
    assert run_json(db, "list", "alice")["count"] == 0
    assert run_json(db, "list", "bob")["count"] == 1


def test_export_json_import_round_trip(db: str, tmp_path: Path) -> None:
    contents = {
        add(db, "alice", "I prefer dark mode", "-c", "preference")["content"],
        add(db, "alice", "User lives in Lisbon with two cats", "-c", "identity")["content"],
    }
    out = tmp_path / "alice.json"
    result = run(db, "export", "alice", "--output", str(out))
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert {m["content"] for m in doc["memories"]} == contents

    stdout = run(db, "export", "alice")
    assert json.loads(stdout.stdout)["count"] == 2

    other = f"sqlite:///{tmp_path}/other.db"
    imported = run_json(other, "import", "carol", str(out))
    assert imported == {"success": True, "imported": 2, "skipped": 0}
    listing = run_json(other, "list", "carol")
    assert {m["content"] for m in listing["memories"]} == contents
    assert all(m["user_id"] == "carol" for m in listing["memories"])

    again = run_json(other, "import", "carol", str(out))
    assert again == {"success": True, "imported": 0, "skipped": 2}


def test_import_into_another_user_of_the_same_database(db: str, tmp_path: Path) -> None:
    add(db, "alice", "I prefer dark mode", "-c", "preference")
    out = tmp_path / "alice.json"
    assert run(db, "export", "alice", "-o", str(out)).exit_code == 0
    imported = run_json(db, "import", "bob", str(out))
    assert imported["imported"] == 1
    assert [m["content"] for m in run_json(db, "list", "bob")["memories"]] == [
        "User prefers dark mode"
    ]
    assert run_json(db, "list", "alice")["count"] == 1
    again = run_json(db, "import", "bob", str(out))  # a second time adds nothing
    assert again["imported"] == 0
    assert run_json(db, "list", "bob")["count"] == 1


def test_import_rejects_garbage(db: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("not json", encoding="utf-8")
    result = run(db, "import", "alice", str(bad))
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ")


def test_export_markdown(db: str, tmp_path: Path) -> None:
    add(db, "alice", "I prefer dark mode", "-c", "preference")
    result = run(db, "export", "alice", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# Memories of user alice")
    assert "- User prefers dark mode" in result.stdout

    out = tmp_path / "alice.md"
    written = run_json(db, "export", "alice", "-f", "markdown", "-o", str(out))
    assert written["success"] is True
    assert "User prefers dark mode" in out.read_text(encoding="utf-8")


def test_stats_and_reindex(db: str) -> None:
    add(db, "alice", "I prefer dark mode", "-c", "preference")
    add(db, "bob", "User prefers light mode in every editor", "-c", "preference")

    stats = run_json(db, "stats")
    assert stats["memories"] == 2
    assert stats["embedding_model"]
    table = run(db, "stats")
    assert table.exit_code == 0 and "memories" in table.stdout

    reindexed = run_json(db, "reindex")
    assert reindexed["reindexed"] == 2
    assert reindexed["embedding_model"] == stats["embedding_model"]
    human = run(db, "reindex")
    assert human.exit_code == 0 and "Re-embedded 2 memories" in human.stdout

    found = run_json(db, "search", "alice", "dark theme")
    assert found["hits"][0]["memory"]["content"] == "User prefers dark mode"


def test_validation_errors_exit_2_with_a_message(db: str) -> None:
    result = run(db, "add", "alice", "short")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ")
    assert "content" in result.stderr
    assert "Traceback" not in result.output

    data = run_json(db, "add", "alice", "short", code=2)
    assert data["success"] is False and "content" in data["error"]

    bad_meta = run(db, "add", "alice", "User likes long walks", "--metadata", "[1]")
    assert bad_meta.exit_code == 2 and "metadata" in bad_meta.stderr

    bad_since = run(db, "search", "alice", "walks", "--since", "yesterday")
    assert bad_since.exit_code == 2 and "since" in bad_since.stderr


def test_db_from_environment(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/env.db"
    env = {**ENV, "MEMORYBANK_URL": url}
    result = CliRunner().invoke(app, ["add", "alice", "I prefer dark mode", "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "env.db").exists()


def _walk(command: Any, path: str) -> list[tuple[str, Any]]:
    """Every command under ``command`` (typer vendors click, so this duck-types groups)."""
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _walk(sub, f"{path} {name}")
    return found


def test_every_command_and_option_has_help() -> None:
    root = typer.main.get_command(app)
    commands = _walk(root, "memorybank")
    names = {path for path, _ in commands}
    expected = {
        "add", "search", "list", "get", "update", "delete", "clear", "history", "export",
        "import", "reindex", "stats", "serve", "bench", "bench latency",
    }  # fmt: skip
    assert {f"memorybank {n}" for n in expected} <= names
    missing = []
    for path, command in commands:
        if not (command.help or "").strip():
            missing.append(path)
        for param in command.params:
            if not (getattr(param, "help", None) or "").strip():
                missing.append(f"{path} {param.name}")
    assert missing == []


def test_json_option_everywhere() -> None:
    root = typer.main.get_command(app)
    for path, command in _walk(root, "memorybank"):
        # `mcp` speaks the MCP protocol on stdout, `openapi` prints the schema as JSON: there
        # is no human output to replace.
        if hasattr(command, "commands") or path in ("memorybank mcp", "memorybank openapi"):
            continue
        opts = {o for p in command.params for o in getattr(p, "opts", [])}
        assert "--json" in opts, path


def test_clear_asks_when_interactive(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memorybank.cli._common.interactive", lambda: True)
    add(db, "alice", "I prefer dark mode", "-c", "preference")
    declined = CliRunner().invoke(app, ["clear", "alice", "--db", db], input="n\n", env=ENV)
    assert declined.exit_code == 1
    assert "Delete all 1 memory of user alice?" in declined.output
    assert run_json(db, "list", "alice")["count"] == 1
    accepted = CliRunner().invoke(app, ["clear", "alice", "--db", db], input="y\n", env=ENV)
    assert accepted.exit_code == 0, accepted.output
    assert "Deleted 1 memory." in accepted.stdout
    assert run_json(db, "list", "alice")["count"] == 0


class _FakeReport:
    def table(self) -> Any:
        from rich.table import Table

        table = Table(title="fake latency")
        table.add_column("N")
        table.add_row("10")
        return table

    def as_dict(self) -> dict[str, Any]:
        return {"sizes": [10, 20]}

    def notes(self) -> list[str]:
        return ["block ÷ search 1.5×"]


def test_bench_latency_is_wired(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    def fake_run_latency(**kwargs: Any) -> _FakeReport:
        calls.append(kwargs)
        return _FakeReport()

    monkeypatch.setattr("memorybank_bench.latency.run_latency", fake_run_latency)
    out = tmp_path / "latency.json"
    args = ["bench", "latency", "--sizes", "10,20", "--per-user", "5", "--pool", "30"]
    args += ["--samples", "7", "--workdir", str(tmp_path), "--json", str(out)]
    result = CliRunner().invoke(app, args, env=ENV)
    assert result.exit_code == 0, result.output
    assert "│ 10 │" in result.stdout
    assert "block ÷ search 1.5×" in result.stdout  # the report's notes follow its table
    assert json.loads(out.read_text(encoding="utf-8")) == {"sizes": [10, 20]}
    [kwargs] = calls
    assert kwargs["sizes"] == [10, 20]
    # The pool never exceeds the largest database: small runs embed only what they use.
    assert (kwargs["per_user"], kwargs["pool_size"], kwargs["samples"]) == (5, 20, 7)
    assert kwargs["workdir"] == tmp_path
    assert kwargs["console"] is not None

    bad = CliRunner().invoke(app, ["bench", "latency", "--sizes", "ten"], env=ENV)
    assert bad.exit_code == 2
    assert calls == [kwargs]


def test_a_bad_setting_names_its_variable_and_never_shows_a_key(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYBANK_INLINE_SEARCHES", "maybe")
    result = run(db, "serve", "--port", "1")
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert "MEMORYBANK_INLINE_SEARCHES" in result.output and "'maybe'" in result.output
    monkeypatch.delenv("MEMORYBANK_INLINE_SEARCHES")
    with pytest.raises(ConfigurationError, match="MEMORYBANK_COMPUTE_THREADS"):
        Settings(compute_threads=0)
    monkeypatch.setenv("MEMORYBANK_PG_POOL_SIZE", "0")
    with pytest.raises(ConfigurationError, match="MEMORYBANK_PG_POOL_SIZE") as raised:
        Settings()
    assert "got '0'" in str(raised.value)
    monkeypatch.delenv("MEMORYBANK_PG_POOL_SIZE")
    monkeypatch.setenv("MEMORYBANK_MASTER_KEY", "s3cret-value")
    monkeypatch.setenv("MEMORYBANK_EMBEDDER", "nope")
    with pytest.raises(ConfigurationError) as raised:
        Settings()
    assert "s3cret-value" not in str(raised.value)


# -- safe to point anywhere (issue 20) -------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        ["list", "alice"],
        ["search", "alice", "tea"],
        ["get", "alice", "mem_x"],
        ["history", "alice", "mem_x"],
        ["export", "alice"],
        ["stats"],
        ["delete", "alice", "mem_x"],
        ["reindex"],
    ],
)
def test_commands_that_add_nothing_never_make_a_database(
    tmp_path: Path, command: list[str]
) -> None:
    where = tmp_path / "missing_dir" / "x.db"
    result = run(f"sqlite:///{where}", *command)
    assert result.exit_code == 1
    assert f"no database at {where}" in result.output
    assert not where.parent.exists()


def test_sqlite_query_parameters_are_refused(tmp_path: Path) -> None:
    result = run(f"sqlite:///{tmp_path / 'x.db'}?mode=ro", "add", "alice", "User likes tea")
    assert result.exit_code == 1
    assert "take no query parameters (got '?mode=ro')" in result.output
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_postgresql_is_one_line_within_seconds(tmp_path: Path) -> None:
    from server_helpers import free_port

    started = time.monotonic()
    result = run(f"postgresql://u:secret@127.0.0.1:{free_port()}/x", "list", "alice")
    assert time.monotonic() - started < 5
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: cannot reach PostgreSQL at")
    assert "secret" not in result.output and "Traceback" not in result.output


def test_cli_saves_are_the_users_and_counts_read_well(db: str, tmp_path: Path) -> None:
    data = add(db, "alice", "I prefer green tea", "-c", "preference")
    assert data["memory"]["source"] == "user"
    exported = tmp_path / "alice.json"
    assert run(db, "export", "alice", "--output", str(exported)).exit_code == 0
    imported = run(db, "import", "bob", str(exported))
    assert "Imported 1 memory (0 already there, skipped)." in imported.stdout
    help_text = run(db, "list", "--help").output
    assert "<bool>" not in next(line for line in help_text.splitlines() if "--json" in line)


def test_serve_on_a_busy_port_says_so_without_claiming_to_serve(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(f"sqlite:///{tmp_path / 'x.db'}", "serve", "--port", str(port))
    assert result.exit_code == 1
    assert "Serving" not in result.output
    assert f"cannot listen on 127.0.0.1:{port}" in result.output


def test_openapi_prints_the_servers_schema_without_a_database(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["openapi", "--output", str(tmp_path / "o.json")], env=ENV)
    assert result.exit_code == 0, result.output
    schema = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    assert schema["paths"]["/api/search"]["get"]["operationId"] == "search_memories"
    assert list(tmp_path.iterdir()) == [tmp_path / "o.json"]


def test_db_and_json_also_go_before_the_command(db: str, tmp_path: Path) -> None:
    """``memorybank --db URL list alice``: the global options, for every command that takes
    them; given after the command as well, the command's own win; both beat the environment."""

    def invoke(*args: str, env: dict[str, str | None] = ENV) -> Result:
        return CliRunner().invoke(app, list(args), env=env)

    added = invoke("--db", db, "--json", "add", "alice", "I prefer dark mode", "-c", "preference")
    assert added.exit_code == 0, added.output
    assert json.loads(added.stdout)["success"] is True
    listed = invoke("--db", db, "list", "alice")
    assert listed.exit_code == 0 and "User prefers dark mode" in listed.stdout, listed.output
    assert json.loads(invoke("--json", "--db", db, "list", "alice").stdout)["count"] == 1

    other = f"sqlite:///{tmp_path}/other.db"
    assert invoke("--db", other, "add", "bob", "I prefer tea", "--json").exit_code == 0
    after_wins = invoke("--db", db, "list", "bob", "--db", other, "--json")
    assert json.loads(after_wins.stdout)["count"] == 1, after_wins.output
    from_env = invoke("--json", "list", "bob", env={**ENV, "MEMORYBANK_URL": other})
    assert json.loads(from_env.stdout)["count"] == 1
    env = {**ENV, "MEMORYBANK_URL": other}
    assert json.loads(invoke("--db", db, "--json", "list", "bob", env=env).stdout)["count"] == 0

    # Groups whose every command takes them accept them too.
    user = invoke("--db", db, "--json", "admin", "create-user", "carol")
    assert user.exit_code == 0 and json.loads(user.stdout)["user_id"] == "carol", user.output
    # A command that would ignore the option refuses it, saying so.
    refused = invoke("--db", db, "openapi")
    assert refused.exit_code == 2 and "`memorybank openapi` does not take --db" in refused.output
    refused = invoke("--json", "bench", "latency")
    assert refused.exit_code == 2 and "`memorybank bench` does not take --json" in refused.output
    assert "--db" in invoke("--help").stdout


def test_search_json_is_the_rest_apis_shape(db: str) -> None:
    """One shape per idea: ``memorybank search --json`` answers ``hits`` as ``GET
    /api/search`` does, each hit with the same fields."""
    from fastapi.testclient import TestClient

    import memorybank
    from server_helpers import make_world

    add(db, "alice", "I prefer dark mode", "-c", "preference")
    cli = run_json(db, "search", "alice", "colour theme")
    with memorybank.open(db) as bank:
        world = make_world(bank, users=False)
        rest = TestClient(world.app).get(
            "/api/search", params={"q": "colour theme"}, headers={"X-Memorybank-User": "alice"}
        )
    assert rest.status_code == 200, rest.text
    assert set(cli) - {"query"} == set(rest.json()) == {"hits"}
    assert cli["hits"][0].keys() == rest.json()["hits"][0].keys()
    assert cli["hits"][0]["memory"]["id"] == rest.json()["hits"][0]["memory"]["id"]


def test_list_shows_current_facts_and_marks_replaced_ones_on_request(db: str) -> None:
    old = add(db, "alice", "User lives in Boston")
    new = add(db, "alice", "User moved to Chicago", "--on-conflict", "supersede")
    assert [c["memory_id"] for c in new["replaced"]] == [old["memory_id"]]
    current = run_json(db, "list", "alice")
    assert [m["content"] for m in current["memories"]] == ["User moved to Chicago"]
    assert current["count"] == 1
    everything = run(db, "list", "alice", "--include-superseded")
    assert everything.exit_code == 0, everything.output
    text = " ".join(everything.output.split())
    assert "User lives in Boston" in text and f"superseded by {new['memory_id']}" in text


def test_list_and_search_take_the_same_filters(db: str) -> None:
    """``list`` and ``search`` build one ``MemoryFilter`` from the same options: a repeated
    ``--category``, ``--tag``, ``--min-importance`` and ``--since``; a category that is none
    exits 2 saying which values are."""
    add(db, "alice", "I prefer window seats on flights", "-c", "preference", "-t", "travel")
    add(db, "alice", "My sister Ana lives in Madrid", "-c", "relationship", "--importance", "10")
    add(db, "alice", "I am learning the piano", "-c", "context")
    travel = run_json(db, "list", "alice", "--tag", "travel")["memories"]
    assert [m["content"] for m in travel] == ["User prefers window seats on flights"]
    two = run_json(db, "list", "alice", "-c", "preference", "-c", "relationship")
    assert two["count"] == 2 and {m["category"] for m in two["memories"]} == {
        "preference",
        "relationship",
    }
    important = run_json(db, "list", "alice", "--min-importance", "10", "--since", "7d")
    assert [m["content"] for m in important["memories"]] == ["User's sister Ana lives in Madrid"]
    hits = run_json(db, "search", "alice", "where does Ana live", "-c", "relationship")["hits"]
    assert [h["memory"]["category"] for h in hits] == ["relationship"]
    wrong = run(db, "list", "alice", "-c", "hobby")
    assert wrong.exit_code == 2 and "hobby" in wrong.output and "preference" in wrong.output

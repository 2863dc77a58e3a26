"""The command line says what happened (issue 47): what a save may update and how to settle it,
what ``--on-conflict supersede`` retired, a forget plan of the user's own facts, a spinner on a
terminal only, and help without Python's types, odd line breaks or the seeds' numbers."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from cli_helpers import run, run_json
from memorybank.cli import app


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/t.db"


def command_after(label: str, output: str) -> list[str]:
    """The command line printed after ``label`` (e.g. "replace it:"), as arguments."""
    line = next(line for line in output.splitlines() if label in line)
    words = line.split(label, 1)[1].split()
    assert words[0] == "memorybank", line
    return words[1:]


def test_add_says_what_it_may_update_and_how_to_settle_it(db: str) -> None:
    berlin = run_json(db, "add", "dave", "I live in Berlin")["memory_id"]
    result = run(db, "add", "dave", "I moved to Lisbon")
    assert result.exit_code == 0, result.output
    lisbon = re.search(r"Saved (mem_\w+)", result.stdout)
    assert lisbon is not None
    assert "May update 1 stored fact; both are kept until you settle it:" in result.stdout
    assert f"User lives in Berlin  {berlin}" in result.stdout
    replace = command_after("replace it:", result.stdout)
    both = command_after("both true:", result.stdout)
    assert replace == ["supersede", "dave", berlin, lisbon.group(1)]
    assert both == ["keep-both", "dave", lisbon.group(1), berlin]
    # The pair waits for an answer; each printed command settles it.
    assert len(run_json(db, "pairs", "dave")["pairs"]) == 1
    assert run(db, *both).exit_code == 0
    assert run_json(db, "pairs", "dave") == {"pairs": []}
    listed = {m["content"] for m in run_json(db, "list", "dave")["memories"]}
    assert listed == {"User lives in Berlin", "User moved to Lisbon"}


def test_the_replace_command_retires_the_older_and_restore_brings_it_back(db: str) -> None:
    run_json(db, "add", "dave", "I live in Berlin")
    replace = command_after("replace it:", run(db, "add", "dave", "I moved to Lisbon").stdout)
    done = run(db, *replace)
    assert done.exit_code == 0, done.output
    assert [m["content"] for m in run_json(db, "list", "dave")["memories"]] == [
        "User moved to Lisbon"
    ]
    restore = command_after("undo:", done.stdout)
    assert run(db, *restore).exit_code == 0
    assert len(run_json(db, "list", "dave")["memories"]) == 2


def test_on_conflict_supersede_says_what_it_retired(db: str) -> None:
    berlin = run_json(db, "add", "eve", "I live in Berlin")["memory_id"]
    result = run(db, "add", "eve", "I moved to Lisbon", "--on-conflict", "supersede")
    assert result.exit_code == 0, result.output
    assert "Replaced 1 stored fact (kept in history):" in result.stdout
    assert f"User lives in Berlin  {berlin}" in result.stdout
    assert command_after("undo:", result.stdout) == ["restore", "eve", berlin]
    assert "May update" not in result.stdout  # nothing is left to settle


def test_forget_where_i_live_plans_the_users_own_home(db: str) -> None:
    for text in (
        "I live in Berlin",
        "I moved to Lisbon",
        "My sister Ines lives in Porto",
        "I prefer green tea",
    ):
        run_json(db, "add", "carol", text)
    plan = run_json(db, "forget", "carol", "where I live")
    actions = {step["content"]: step["action"] for step in plan["steps"]}
    assert actions == {
        "User lives in Berlin": "FORGET",
        "User moved to Lisbon": "FORGET",
        "User's sister Ines lives in Porto": "KEEP",
        "User prefers green tea": "KEEP",
    }
    # The text for a person says why, and the command to apply it is one line.
    shown = run(db, "forget", "carol", "where I live").stdout
    assert "of someone else (User's sister)" in shown
    assert command_after("To apply:", shown)[:3] == ["forget", "carol", "--confirm"]


# -- help ---------------------------------------------------------------------------------------


def _commands(command: Any, path: str) -> list[tuple[str, Any]]:
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, f"{path} {name}")
    return found


def test_help_shows_what_to_type_in_flowing_text() -> None:
    root = typer.main.get_command(app)
    runner = CliRunner()
    for path, command in _commands(root, "memorybank"):
        words = path.split()[1:]
        shown = runner.invoke(app, [*words, "--help"], env={"COLUMNS": "300"}).output
        assert not re.search(r"<(bool|str|int|float|path|file|list\[\w+\])>", shown), path
        assert "{" not in shown.splitlines()[1], path  # the usage line: USER, not {user}
        assert not re.search(r"seed 00\d", shown, re.IGNORECASE), path
        for paragraph in (command.help or "").split("\n\n"):
            if not paragraph.startswith((" ", "\b")):
                assert "\n" not in paragraph, f"{path}: {paragraph!r}"
    listing = runner.invoke(app, ["--help"], env={"COLUMNS": "300"}).output
    stats = next(line for line in listing.splitlines() if " stats " in line)
    assert "success metrics of the last 30 days (adoption" in stats  # one line at this width


def test_add_help_names_what_each_option_takes() -> None:
    shown = CliRunner().invoke(app, ["add", "--help"], env={"COLUMNS": "200"}).output
    assert "Usage: memorybank add [OPTIONS] USER CONTENT" in shown
    assert re.search(r"--db\s+URL", shown) and re.search(r"--importance\s+N", shown)
    assert re.search(r"--on-conflict\s+auto\|keep\|supersede", shown)
    assert re.search(r"--help\s+Show this message", shown)


# -- the spinner --------------------------------------------------------------------------------


def _run_with_terminal_stderr(args: list[str], env: dict[str, str]) -> tuple[str, str, int]:
    """``memorybank args`` with standard error on a pseudo-terminal and standard output on a
    pipe: (stdout, what the terminal showed, exit code)."""
    main, side = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "memorybank.cli", *args],
        stdout=subprocess.PIPE,
        stderr=side,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    os.close(side)
    shown = b""
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert process.stdout is not None
    with process.stdout:
        out = process.stdout.read().decode()
    return out, shown.decode(errors="replace"), process.wait(timeout=60)


def test_a_spinner_shows_on_a_terminal_only_and_never_in_json(db: str, tmp_path: Path) -> None:
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "100"}
    env.pop("MEMORYBANK_URL", None)
    out, shown, code = _run_with_terminal_stderr(
        ["add", "ann", "I prefer green tea", "--db", db, "--json"], env
    )
    assert code == 0, shown
    assert "Loading the memory model" in shown  # on the terminal, while the model loads
    assert json.loads(out)["content"] == "User prefers green tea"  # stdout: the JSON alone
    piped = subprocess.run(
        [sys.executable, "-m", "memorybank.cli", "search", "ann", "tea", "--db", db, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert piped.stderr == ""  # not a terminal: nothing at all
    assert json.loads(piped.stdout)["hits"]

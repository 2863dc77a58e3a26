"""What the command-line tests (``tests/cli``) share: running ``memorybank`` in-process on a
database, as a person would type it (wide columns, no server URL from the environment)."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner, Result

from memorybank.cli import app

ENV = {"COLUMNS": "200", "MEMORYBANK_URL": None}


def run(db: str, *args: str, stdin: str | None = None) -> Result:
    """``memorybank <args> --db <db>``, with ``stdin`` typed in."""
    return CliRunner().invoke(app, [*args, "--db", db], env=ENV, input=stdin)


def run_json(db: str, *args: str, code: int = 0) -> Any:
    """The JSON ``memorybank <args> --json`` prints, having exited with ``code``."""
    result = run(db, *args, "--json")
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)

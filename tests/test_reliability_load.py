"""The `memorybank bench load` command, briefly: it starts a server, drives it and reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memorybank.cli import app


@pytest.mark.slow
def test_bench_load_runs_briefly(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    result = CliRunner().invoke(
        app,
        ["bench", "load", "--seconds", "2", "--clients", "4", "--workers", "1",
         "--repeat", "0.5", "--json", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["errors"] == 0
    ops = {o["name"]: o for o in report["ops"]}
    assert ops["search"]["count"] > 0 and ops["save"]["count"] > 0
    assert ops["all"]["p95_ms"] >= ops["all"]["p50_ms"] > 0
    assert "searches/s" in result.output
    assert report["workers"] == 1 and report["repeat"] == 0.5
    # Half the searches repeat a recent question: fewer distinct ones than searches, but many.
    assert 0 < report["distinct_searches"] < ops["search"]["count"]
    assert report["server_cpu_ms_per_request"] > 0
    assert report["client_cpu_ms_per_request"] > 0
    assert "searches were distinct" in result.output

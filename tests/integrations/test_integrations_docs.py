"""docs/integrations.md runs as written: each ``python`` block in a fresh interpreter of its own,
in an empty directory, offline; when a ``text`` block follows, it is what the example prints
(``mem_…`` stands for any memory id). Each runs a second time over what the first left, as a
reader trying it again would (issue 47: the pydantic-ai example failed with ``KeyError``).
CrewAI's example is not run (CrewAI cannot be installed beside the test extras): its route,
the MCP server started as the example starts it, is driven by the MCP SDK's own client."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
BLOCK = re.compile(r"^```(?P<lang>python|text)\n(?P<body>.*?)^```$", re.M | re.S)
MEMORY_ID = re.compile(r"\bmem_[0-9A-Za-z_]+")
FRAMEWORKS = ("langgraph", "pydantic_ai", "agents", "llama_index")
#: Frameworks whose examples are shown but not run: they cannot be installed beside the
#: others (docs/integrations.md says why).
NOT_RUN = ("crewai",)


def examples() -> list[tuple[int, str, str | None]]:
    """(line, code, expected output or None) for each python block."""
    text = DOC.read_text(encoding="utf-8")
    found: list[tuple[int, str, str | None]] = []
    blocks = list(BLOCK.finditer(text))
    for i, block in enumerate(blocks):
        if block["lang"] != "python" or any(f"from {f}" in block["body"] for f in NOT_RUN):
            continue
        after = blocks[i + 1] if i + 1 < len(blocks) else None
        expected = None
        if after is not None and after["lang"] == "text":
            if not text[block.end() : after.start()].strip():
                expected = after["body"]
        found.append((text.count("\n", 0, block.start()) + 1, block["body"], expected))
    return found


def test_every_integration_has_an_example() -> None:
    code = "\n".join(body for _, body, _ in examples())
    for module in ["langgraph", "pydantic_ai", "openai_agents", "llama_index"]:
        assert f"memorybank.integrations.{module}" in code
    assert all(expected is not None for _, _, expected in examples())


@pytest.mark.parametrize(
    ("line", "code", "expected"),
    [pytest.param(*example, id=f"line-{example[0]}") for example in examples()],
)
def test_example_runs(tmp_path: Path, line: int, code: str, expected: str | None) -> None:
    for framework in FRAMEWORKS:
        if f"from {framework}" in code or f"import {framework}" in code:
            pytest.importorskip(framework)
    env = {**os.environ, "MEMORYBANK_HOME": str(tmp_path), "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    env.pop("OPENAI_API_KEY", None)
    for run in ("first", "second"):
        result = subprocess.run(
            [sys.executable, "-W", "error", "-c", code],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        where = f"docs/integrations.md:{line}, {run} run"
        assert result.returncode == 0, f"{where} failed:\n{result.stderr}"
        if expected is not None and run == "first":
            assert MEMORY_ID.sub("mem_…", result.stdout) == expected, where


# -- CrewAI: through MCP --------------------------------------------------------------------------

CREWAI_SERVER = re.compile(
    r'MCPServerStdio\(command="(?P<command>[^"]+)", args=(?P<args>\[[^\]]*\])\)'
)


def test_crewai_is_documented_through_mcp_and_not_as_an_extra() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "## CrewAI through MCP" in text and CREWAI_SERVER.search(text)
    pyproject = (DOC.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert "crewai" not in pyproject.lower()  # no extra that could not be installed


@pytest.mark.slow
def test_the_crewai_example_s_mcp_server_remembers_and_recalls(tmp_path: Path) -> None:
    """What CrewAI's ``MCPServerStdio`` does with the example's command: start it over stdio
    and call its tools, here with the MCP SDK's own client, in an empty MEMORYBANK_HOME."""
    import ast

    import anyio
    from mcp import Client, StdioServerParameters

    found = CREWAI_SERVER.search(DOC.read_text(encoding="utf-8"))
    assert found is not None
    command = str(Path(sys.executable).parent / found["command"])  # the venv's `memorybank`
    args = ast.literal_eval(found["args"])
    env = {**os.environ, "MEMORYBANK_HOME": str(tmp_path)}
    env.pop("MEMORYBANK_URL", None)

    async def main() -> dict[str, Any]:
        params = StdioServerParameters(command=command, args=args, env=env)
        async with Client(params, read_timeout_seconds=120) as client:
            tools = sorted(t.name for t in (await client.list_tools()).tools)
            assert tools == ["forget", "recall", "remember"]
            saved = await client.call_tool("remember", {"fact": "User prefers window seats"})
            assert not saved.is_error, saved
            found = await client.call_tool("recall", {"query": "where does she like to sit?"})
            return {"saved": _json(saved), "found": _json(found)}

    async def bounded() -> dict[str, Any]:
        with anyio.fail_after(240):
            return await main()

    answers = anyio.run(bounded)
    assert answers["saved"]["success"] is True
    assert [f["fact"] for f in answers["found"]["facts"]] == ["User prefers window seats"]


def _json(result: Any) -> Any:
    import json

    (block,) = result.content
    return json.loads(block.text)

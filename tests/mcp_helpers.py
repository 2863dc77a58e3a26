"""The MCP server as a host drives it (stdio, the MCP SDK's own client): what the MCP tests
share, in a module of its own so that any test directory can import it."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

# The stdio tests are marked slow: each spawns a server that loads the embedding model
# (about 1.5 s each, about 20 s in all). Allow for a slow machine.
TIMEOUT_S = 60


def _url(path: Path) -> str:
    return f"sqlite:///{path}"


@asynccontextmanager
async def served(
    db: Path,
    user: str,
    *,
    profile: str | None = None,
    project: str | None = None,
    mode: str = "auto",
    env: dict[str, str] | None = None,
) -> AsyncIterator[Client]:
    """A client connected to ``memorybank mcp`` running as a subprocess over stdio."""
    args = ["-m", "memorybank.cli", "mcp", "--user", user, "--db", _url(db)]
    if profile is not None:
        args += ["--profile", profile]
    if project is not None:
        args += ["--project", project]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    async with Client(params, mode=mode, read_timeout_seconds=TIMEOUT_S) as client:
        yield client


def _text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def _json(result: types.CallToolResult) -> dict[str, Any]:
    value = json.loads(_text(result))
    assert isinstance(value, dict)
    return value


def _run(main: Any, *args: Any) -> None:
    async def bounded() -> None:
        with anyio.fail_after(TIMEOUT_S * 2):
            await main(*args)

    anyio.run(bounded)


__all__ = ["TIMEOUT_S", "_json", "_run", "_text", "_url", "served"]

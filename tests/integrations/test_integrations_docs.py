"""docs/integrations.md runs as written: each ``python`` block in a fresh interpreter of its own,
in an empty directory, offline; when a ``text`` block follows, it is what the example prints
(``mem_…`` stands for any memory id)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

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
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"docs/integrations.md:{line} failed:\n{result.stderr}"
    if expected is not None:
        assert MEMORY_ID.sub("mem_…", result.stdout) == expected, f"docs/integrations.md:{line}"

"""docs/coming-from-mem0.md runs as written: its python block in a fresh interpreter, in an
empty ``MEMORYBANK_HOME``, prints the text block after it, and again when run a second time
over what the first left (issue 47: every doc example runs twice in a row)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "coming-from-mem0.md"
BLOCK = re.compile(r"^```(?P<lang>\w+)\n(?P<body>.*?)^```$", re.M | re.S)


def test_the_switching_example_runs_and_prints_what_the_page_shows(tmp_path: Path) -> None:
    blocks = [(b["lang"], b["body"]) for b in BLOCK.finditer(DOC.read_text(encoding="utf-8"))]
    assert [lang for lang, _ in blocks] == ["python", "text"]
    (_, code), (_, expected) = blocks
    for run in ("first", "second"):
        result = subprocess.run(
            [sys.executable, "-W", "error", "-c", code],
            cwd=tmp_path,
            env={**os.environ, "MEMORYBANK_HOME": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, f"{run} run: {result.stderr}"
        assert result.stdout == expected, f"{run} run"

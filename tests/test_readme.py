"""The README runs as written: every ``sh`` and ``python`` block, in order, in an empty home
(``MEMORYBANK_HOME``) with a ``memorybank serve`` of its own over the same database.

A block right after ``<!-- readme-test: skip (why) -->`` is not run (servers that run until
stopped, the whole test suite, benchmarks). Placeholders stand for what an earlier command
printed: ``mem_…`` the last memory id, ``key_…`` the last API key id, ``mb_…`` the last API
key; ``http://127.0.0.1:8000`` is the test's server.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from server_helpers import spawn_server

README = Path(__file__).resolve().parents[1] / "README.md"
CLIENT_EXAMPLE = README.parent / "clients" / "typescript" / "examples" / "chat-openai.ts"
BLOCK = re.compile(
    r"^(?P<indent> *)```(?P<lang>sh|python)\n(?P<body>.*?)^(?P=indent)```$", re.M | re.S
)
SKIP = re.compile(r"<!-- readme-test: skip \((?P<why>[^)]+)\) -->\s*$")

#: What each placeholder stands for: the last match of the pattern in the output so far.
PLACEHOLDERS = {
    "mem_…": re.compile(r"\bmem_[0-9A-Z]{26}\b"),
    "key_…": re.compile(r"\bkey_[0-9A-Z]{26}\b"),
    "mb_…": re.compile(r"\bmb_[A-Za-z0-9_-]{20,}"),
}
DEFAULT_URL = "http://127.0.0.1:8000"


@dataclass
class Block:
    lang: str
    code: str
    line: int
    skip: str | None


def blocks(text: str) -> list[Block]:
    """The README's sh and python blocks, dedented, with why a block is skipped."""
    found = []
    for match in BLOCK.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skipped = SKIP.search(before)
        indent = len(match["indent"])
        code = "\n".join(line[indent:] for line in match["body"].splitlines())
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(match["lang"], code, line, skipped["why"] if skipped else None))
    return found


class Reader:
    """Runs blocks as a reader would, remembering what they printed."""

    def __init__(self, home: Path, url: str) -> None:
        self.home = home
        self.url = url
        self.printed = ""
        self.env = {
            **os.environ,
            "HOME": str(home),
            "MEMORYBANK_HOME": str(home),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "COLUMNS": "200",
        }
        self.env.pop("MEMORYBANK_URL", None)

    def fill(self, code: str) -> str:
        for placeholder, pattern in PLACEHOLDERS.items():
            if placeholder in code:
                seen = pattern.findall(self.printed)
                assert seen, f"nothing printed before stands for {placeholder}"
                code = code.replace(placeholder, seen[-1])
        return code.replace(DEFAULT_URL, self.url)

    def run(self, command: list[str], where: str) -> None:
        done = subprocess.run(
            command, cwd=self.home, env=self.env, capture_output=True, text=True, timeout=300
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{where} exited {done.returncode}:\n{output}"
        self.printed += output

    def shell(self, block: Block) -> None:
        # Line by line: a placeholder may stand for what the line before printed.
        for offset, line in enumerate(block.code.splitlines(), start=1):
            if line.strip() and not line.lstrip().startswith("#"):
                self.run(["bash", "-ec", self.fill(line)], f"README.md:{block.line + offset}")

    def python(self, block: Block) -> None:
        script = self.home / f"readme_{block.line}.py"
        script.write_text(self.fill(block.code), encoding="utf-8")
        self.run([sys.executable, str(script)], f"README.md:{block.line}")


@pytest.fixture
def reader(tmp_path: Path) -> Iterator[Reader]:
    home = tmp_path / "home"
    home.mkdir()
    env = {"MEMORYBANK_HOME": str(home), "HOME": str(home)}
    proc, url = spawn_server(f"sqlite:///{home / 'memorybank.db'}", env=env)
    try:
        yield Reader(home, url)
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_readme_has_runnable_blocks_and_says_why_it_skips_the_others() -> None:
    found = blocks(README.read_text(encoding="utf-8"))
    assert sum(b.skip is None for b in found) >= 6
    assert all(b.skip for b in found if "make test" in b.code or "serve --port" in b.code)


@pytest.mark.slow
def test_the_readme_runs_as_written(reader: Reader) -> None:
    for block in blocks(README.read_text(encoding="utf-8")):
        if block.skip is None:
            reader.shell(block) if block.lang == "sh" else reader.python(block)
    # What the reader was promised along the way.
    assert "User prefers short answers" in reader.printed
    assert "Imported 1 memory" in reader.printed


def test_the_typescript_chat_is_the_example_the_client_tests_run() -> None:
    # clients/typescript/examples/chat-openai.ts is compiled by tsc and run by `make typescript`
    # against a real server and a scripted chat model; the README shows the same code.
    text = README.read_text(encoding="utf-8")
    shown = re.search(r"```ts\n(import OpenAI.*?)```", text, re.S)
    assert shown is not None
    example = CLIENT_EXAMPLE.read_text(encoding="utf-8")
    code = "\n".join(line for line in example.splitlines() if not line.startswith("//")) + "\n"
    assert code == shown[1].replace('"memorybank-client"', '"../src/index.js"')

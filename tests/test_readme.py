"""The README runs as written: every ``sh`` and ``python`` block, in order, in an empty home
(``MEMORYBANK_HOME``) with a ``memorybank serve`` of its own over the same database.

A block right after ``<!-- readme-test: skip (why) -->`` is only for reading (servers that run
until stopped, the whole test suite, installing, benchmarks); there are few, and each says why.
Every other code block is ``sh`` or ``python``, and runs, or TypeScript, which the TypeScript
client's tests compile and run (the chat example) — a block in any other language (``bash``,
``console``, none) would silently never run, so the test refuses it. Placeholders stand for what
an earlier command printed: ``mem_…`` the last memory id, ``key_…`` the last API key id, ``mb_…``
the last API key; ``http://127.0.0.1:8000`` is the test's server.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from server_helpers import spawn_server

README = Path(__file__).resolve().parents[1] / "README.md"
CLIENT_EXAMPLE = README.parent / "clients" / "typescript" / "examples" / "chat-openai.ts"
BLOCK = re.compile(
    r"^(?P<indent> *)```(?P<lang>[^`\n]*)\n(?P<body>.*?)^(?P=indent)```$", re.M | re.S
)
SKIP = re.compile(r"<!-- readme-test: skip \((?P<why>[^)]+)\) -->\s*$")
#: The languages of the blocks that run, and of those that are checked elsewhere.
RUN = ("sh", "python")
ELSEWHERE = ("ts",)
#: How many blocks may be only for reading: few, so that what the README shows is what runs.
MOST_SKIPPED = 4

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
    """The README's code blocks, dedented, with why a block is skipped."""
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


def test_blocks_are_read_with_their_language_indent_and_skip_reason() -> None:
    text = (
        "Intro\n"
        "<!-- readme-test: skip (serves forever) -->\n"
        "```sh\nmemorybank serve\n```\n"
        "- a list item:\n\n"
        "  ```python\n  print(1)\n  ```\n"
        "```\nno language\n```\n"
    )
    found = blocks(text)
    assert [(b.lang, b.code, b.skip) for b in found] == [
        ("sh", "memorybank serve", "serves forever"),
        ("python", "print(1)", None),
        ("", "no language", None),
    ]


def test_every_code_block_runs_or_says_why_not() -> None:
    found = blocks(README.read_text(encoding="utf-8"))
    unknown = [f"README.md:{b.line} ```{b.lang}" for b in found if b.lang not in RUN + ELSEWHERE]
    assert not unknown, f"blocks that would never run: mark them sh or python: {unknown}"
    skipped = [b for b in found if b.skip is not None]
    assert all(b.lang in RUN for b in skipped)
    assert len(skipped) <= MOST_SKIPPED, [f"README.md:{b.line} ({b.skip})" for b in skipped]
    assert sum(b.skip is None and b.lang in RUN for b in found) >= 7
    assert all(b.skip for b in found if "make test" in b.code or "serve --port" in b.code)


@pytest.mark.slow
def test_the_readme_runs_as_written(reader: Reader) -> None:
    found = blocks(README.read_text(encoding="utf-8"))
    for block in found:
        if block.skip is None and block.lang in RUN:
            reader.shell(block) if block.lang == "sh" else reader.python(block)
    # A reader runs an example again (issue 47): each Python example runs a second time over
    # what the first left, and must not fail. (The shell lines are commands, not examples:
    # adding a fact or a user twice is refused, as the README says.)
    for block in found:
        if block.skip is None and block.lang == "python":
            reader.python(block)
    # What the reader was promised along the way.
    assert "User prefers short answers" in reader.printed  # the clients
    assert "Imported 1 memory" in reader.printed
    assert '"hits"' in reader.printed  # search --json and the REST API say the same
    assert "User prefers tabs over spaces" in reader.printed  # one item POSTed on its own
    assert '"success": true' in reader.printed  # the tools' remember in a project


#: A dotted name of the package the README names in code (`memorybank.core.prompt.auto_recall`).
PACKAGE_NAME = re.compile(r"`(memorybank(?:\.[A-Za-z_]\w*)+)")
#: A method of a bank the README calls (`bank.search(`).
BANK_METHOD = re.compile(r"\bbank\.([a-z_]\w*)\(")


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` is a module of the package or a name in one."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def test_the_readme_names_only_what_exists() -> None:
    """The README offered `bank.context_for(...)` "until the next release" after it was gone
    (issue 47): every name of the package it shows resolves, every bank method it calls is
    one, and it promises nothing for a later release."""
    from memorybank import MemoryBank

    text = README.read_text(encoding="utf-8")
    gone = [name for name in sorted(set(PACKAGE_NAME.findall(text))) if not _resolves(name)]
    gone += [
        f"bank.{m}" for m in sorted(set(BANK_METHOD.findall(text))) if not hasattr(MemoryBank, m)
    ]
    assert not gone, f"the README names what does not exist: {gone}"
    assert "next release" not in text


def test_the_typescript_chat_is_the_example_the_client_tests_run() -> None:
    # clients/typescript/examples/chat-openai.ts is compiled by tsc and run by `make typescript`
    # against a real server and a scripted chat model; the README shows the same code.
    text = README.read_text(encoding="utf-8")
    shown = re.search(r"```ts\n(import OpenAI.*?)```", text, re.S)
    assert shown is not None
    example = CLIENT_EXAMPLE.read_text(encoding="utf-8")
    code = "\n".join(line for line in example.splitlines() if not line.startswith("//")) + "\n"
    assert code == shown[1].replace('"memorybank-client"', '"../src/index.js"')


# -- install lines ------------------------------------------------------------------------------

#: Every page a newcomer reads, and the project's metadata they name extras and versions from.
DOCS = (README, *sorted((README.parent / "docs").glob("*.md")))
PYPROJECT = README.parent / "pyproject.toml"
PIP_INSTALL = re.compile(r"pip install (?P<args>[^`\n#]+)")
FROM_A_CLONE = re.compile(r"^\./memorybank(?:\[(?P<extras>[^\]]+)\])?$")
FROM_A_WHEEL = re.compile(
    r"^memorybank/dist/memorybank-(?P<version>[^-]+)-py3-none-any\.whl(?:\[(?P<extras>[^\]]+)\])?$"
)


def install_lines() -> Iterator[tuple[str, str]]:
    """(where, each argument) of every ``pip install`` line in the docs."""
    for doc in DOCS:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for match in PIP_INSTALL.finditer(line):
                for arg in shlex.split(match["args"].strip().rstrip(".,;)")):
                    if not arg.startswith("-"):
                        yield f"{doc.relative_to(README.parent)}:{n}", arg


def test_every_install_line_works_from_a_clone_or_a_built_wheel() -> None:
    """No package index serves memorybank: each line that installs it names the clone
    (``./memorybank[extra]``, from beside it) or a wheel ``make dist`` built, with extras that
    exist and the version that is built. Other packages (``crewai``) come from the index."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    extras = set(project["optional-dependencies"])
    wrong = []
    seen = 0
    for where, arg in install_lines():
        if "memorybank" not in arg:
            continue
        seen += 1
        match = FROM_A_CLONE.match(arg) or FROM_A_WHEEL.match(arg)
        if match is None:
            wrong.append(f"{where}: {arg!r} needs a package index (use './memorybank[…]')")
            continue
        unknown = set((match["extras"] or "").split(",")) - extras - {""}
        if unknown:
            wrong.append(f"{where}: {arg!r} names extras pyproject.toml lacks: {sorted(unknown)}")
        version = match.groupdict().get("version")
        if version is not None and version != project["version"]:
            wrong.append(f"{where}: {arg!r} is not the version built ({project['version']})")
    assert seen >= 8, "the docs' install lines were not found: is PIP_INSTALL still right?"
    assert not wrong, "\n".join(wrong)

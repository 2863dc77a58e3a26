"""memorybank installs as a package: ``python -m build`` makes an sdist and a wheel (the wheel
built from the sdist) that carry the tokenizer files and the web UI, and the wheel installed in
a fresh virtual environment runs ``memorybank add``, ``search`` and ``serve`` with the
repository nowhere on ``sys.path``.

The fresh environment gets the dependencies from pip's usual places (its cache, else the
index pip is configured with), as someone installing memorybank would. Building and
installing take a minute or two: the install test is marked slow.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server_helpers import free_port

ROOT = Path(__file__).resolve().parents[1]

#: Files besides the code that the package needs at run time (pyproject's package-data).
DATA_FILES = (
    "memorybank/py.typed",
    "memorybank/_model/tokenizer.json",
    "memorybank/_model/tokenizer_config.json",
    "memorybank/_model/NOTICE",
    "memorybank/server/ui/index.html",
    "memorybank/server/ui/app.js",
    "memorybank/server/ui/app.css",
    "memorybank/server/ui/live.js",
    "memorybank/server/ui/chart.umd.min.js",
    "memorybank/server/ui/chart.js-LICENSE.md",
)


def _source_files() -> list[str]:
    """The repository's files as a clone has them (tracked, plus new files not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    return [name for name in listed.stdout.decode().split("\0") if (ROOT / name).is_file()]


def _run(command: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build`` over a copy of the repository (building writes egg-info into the
    source tree, which must stay the clone's): the folder holding the sdist and the wheel."""
    work = tmp_path_factory.mktemp("build")
    source = work / "memorybank"
    for name in _source_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    _run([sys.executable, "-m", "build", "--outdir", work / "dist", source], cwd=work)
    return work / "dist"


def _one(folder: Path, pattern: str) -> Path:
    [found] = folder.glob(pattern)
    return found


@pytest.mark.slow
def test_the_sdist_and_the_wheel_carry_the_model_files_and_the_ui(dist: Path) -> None:
    with zipfile.ZipFile(_one(dist, "memorybank-*.whl")) as wheel:
        in_wheel = set(wheel.namelist())
        entry_points = wheel.read(next(n for n in in_wheel if n.endswith("entry_points.txt")))
    assert set(DATA_FILES) <= in_wheel, set(DATA_FILES) - in_wheel
    assert "memorybank_bench/__init__.py" in in_wheel  # `memorybank bench`, with the extra
    assert "memorybank = memorybank.cli:main" in entry_points.decode()
    with tarfile.open(_one(dist, "memorybank-*.tar.gz")) as sdist:
        in_sdist = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    assert {f"src/{name}" for name in DATA_FILES} <= in_sdist
    assert {"pyproject.toml", "README.md"} <= in_sdist


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed: its ``bin`` folder."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    _run([sys.executable, "-m", "venv", venv], cwd=venv.parent)
    pip = [venv / "bin" / "python", "-m", "pip", "install", "--quiet"]
    _run([*pip, _one(dist, "memorybank-*.whl")], cwd=venv.parent)
    return venv / "bin"


@pytest.fixture
def outside(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A working folder away from the repository and an environment without it: no
    PYTHONPATH, an empty MEMORYBANK_HOME, no database URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "MEMORYBANK_"))}
    env |= {"MEMORYBANK_HOME": str(tmp_path / "home"), "HOME": str(tmp_path), "COLUMNS": "200"}
    work = tmp_path / "work"
    work.mkdir()
    yield work, env


@pytest.mark.slow
def test_the_installed_package_runs_from_anywhere(
    installed: Path, outside: tuple[Path, dict[str, str]]
) -> None:
    work, env = outside
    where = _run(
        [installed / "python", "-c", "import memorybank; print(memorybank.__file__)"], work, env
    )
    assert Path(where.strip()).is_relative_to(installed.parent), where
    assert not Path(where.strip()).is_relative_to(ROOT)

    memorybank = installed / "memorybank"
    saved = _run([memorybank, "add", "alice", "I prefer dark mode", "-c", "preference"], work, env)
    assert "User prefers dark mode" in saved
    found = json.loads(_run([memorybank, "search", "alice", "UI theme", "--json"], work, env))
    assert [hit["memory"]["content"] for hit in found["hits"]] == ["User prefers dark mode"]

    port = free_port()
    log = work / "serve.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [memorybank, "serve", "--port", str(port)],
            cwd=work,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, log.read_text(errors="replace")
            try:
                health = httpx.get(f"{url}/healthz", timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the installed server did not come up"
                time.sleep(0.1)
        assert health.json() == {"status": "ok"}
        page = httpx.get(f"{url}/", timeout=10)
        assert page.status_code == 200 and "<title>memorybank</title>" in page.text
        script = httpx.get(f"{url}/app.js", timeout=10)
        assert script.status_code == 200 and script.text.strip()
        hits = httpx.get(
            f"{url}/api/search", params={"q": "UI theme"}, headers={"X-Memorybank-User": "alice"}
        )
        assert [hit["memory"]["content"] for hit in hits.json()["hits"]] == [
            "User prefers dark mode"
        ]
    finally:
        server.terminate()
        server.wait(30)

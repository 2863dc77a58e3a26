"""``memorybank bench …`` where the benchmarks or their ``bench`` extra are not installed: one
line saying how to install them, and a non-zero exit.

The CLI runs in a subprocess where the missing module is blocked the way Python itself
supports (``sys.modules[name] = None`` makes ``import name`` raise ``ModuleNotFoundError``),
so the real imports of the real commands are what fails.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memorybank.cli.bench import bench_installed

_RUN_WITHOUT = (
    "import sys; sys.modules[sys.argv.pop(1)] = None; "
    "from memorybank.cli import main; sys.argv[0] = 'memorybank'; main()"
)


def _memorybank_without(module: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``memorybank <args>`` in a fresh interpreter where ``module`` cannot be imported."""
    return subprocess.run(
        [sys.executable, "-c", _RUN_WITHOUT, module, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "MEMORYBANK_HOME": str(cwd), "COLUMNS": "200"},
    )


@pytest.mark.parametrize(
    ("missing", "args"),
    [
        ("psutil", ["bench", "latency", "--sizes", "10", "--workdir", "work"]),
        ("psutil", ["bench", "load", "--seconds", "1"]),
        ("memorybank_bench", ["bench", "locomo", "--data", "locomo.json"]),
        ("memorybank_bench", ["bench", "facts", "--data", "locomo.json"]),
        ("memorybank_bench", ["bench", "lifecycle", "scenarios.jsonl"]),
        ("memorybank_bench", ["bench", "latency", "--sizes", "10", "--workdir", "work"]),
    ],
)
def test_a_missing_bench_extra_says_how_to_install_it(
    tmp_path: Path, missing: str, args: list[str]
) -> None:
    result = _memorybank_without(missing, *args, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"Error: the benchmarks are not installed ({missing} is missing): "
        "pip install 'memorybank[bench]'"
    ]
    assert list(tmp_path.iterdir()) == []  # nothing was started or built


def test_help_needs_no_benchmarks(tmp_path: Path) -> None:
    result = _memorybank_without("memorybank_bench", "bench", "latency", "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "--sizes" in result.stdout


def test_other_import_errors_are_not_hidden() -> None:
    with pytest.raises(ModuleNotFoundError) as raised, bench_installed():
        import memorybank_no_such_module  # type: ignore[import-not-found]  # noqa: F401
    assert raised.value.name == "memorybank_no_such_module"

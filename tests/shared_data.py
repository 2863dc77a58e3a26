"""The project's shared data (``../shared`` beside the clone, or ``$MEMORYBANK_SHARED``): the
LoCoMo and fact-lifecycle development sets and the referee scorer, which stay outside the
repository (their licences do not allow redistribution). Tests that need them skip with one
line saying what is missing; on CI (``CI`` set) a missing file fails the test instead, so the
quality gates cannot silently stop running there."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MEMORYBANK_SHARED") or ROOT.parent / "shared")


def shared_file(relative: str) -> Path:
    """``relative``'s path under the shared folder; the calling test skips (fails on CI)
    when the file is absent."""
    path = SHARED / relative
    if not path.is_file():
        message = (
            f"needs {path} (the project's shared data: put it in ../shared beside the clone "
            "or set MEMORYBANK_SHARED)"
        )
        if os.environ.get("CI"):
            pytest.fail(message + "; CI is set, so its absence is a failure")
        pytest.skip(message)
    return path

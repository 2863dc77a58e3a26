"""Periods named in queries become time windows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memorybank.rules.timeparse import time_windows

NOW = datetime(2026, 3, 15, 12, tzinfo=UTC)


def d(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "inside", "outside"),
    [
        ("Who did Maria have dinner with on May 3, 2023?", d(2023, 5, 3), d(2023, 6, 1)),
        ("What painting did she show on 13 October, 2023?", d(2023, 10, 14), d(2023, 9, 1)),
        ("What happened on 2023-10-13?", d(2023, 10, 13), d(2023, 11, 13)),
        ("What did Maria donate in December 2023?", d(2023, 12, 20), d(2023, 11, 20)),
        ("What class did she start in Dec. 2023", d(2024, 1, 5), d(2024, 2, 1)),  # told after
        ("When did Melanie go camping in June?", d(2021, 6, 10), d(2021, 8, 10)),
        ("How many times did she go to the beach in 2023?", d(2023, 7, 1), d(2024, 1, 2)),
        ("What did I do yesterday?", d(2026, 3, 14, 9), d(2026, 3, 1)),
        ("Anything from last week?", d(2026, 3, 5), d(2026, 2, 1)),
    ],
)
def test_windows(query: str, inside: datetime, outside: datetime) -> None:
    windows = time_windows(query, NOW)
    assert any(w.contains(inside) for w in windows)
    assert not any(w.contains(outside) for w in windows)


@pytest.mark.parametrize(
    "query",
    ["What does Caroline like?", "May I ask about her sister?", "On February 30, 2023?", ""],
)
def test_no_window(query: str) -> None:
    assert time_windows(query, NOW) == []

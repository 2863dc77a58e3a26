"""The shipped judge (:class:`memorybank.providers.judges.LocalJudge`) as every path calls it."""

from __future__ import annotations

import pytest

from memorybank.providers.judges.local import LocalJudge

PAIRS = [
    ("User lives in Lisbon", "User moved to Porto"),
    ("User lives in Paris", "User moved to Rome"),  # as many tokens: no padding differs
    ("User likes tea", "User likes coffee"),
]


@pytest.mark.xfail(
    strict=True,
    reason="known: the int8 model is quantised dynamically, one activation scale per batch, so "
    "a pair's scores depend on the pairs scored with it (Lisbon/Porto: update 0.85 alone, "
    "0.96 beside two others); saves, consolidation and the block batch differently",
)
def test_a_pair_scores_the_same_whatever_it_is_scored_with() -> None:
    together = LocalJudge().score(PAIRS)
    for pair, scores in zip(PAIRS, together, strict=True):
        [alone] = LocalJudge().score([pair])  # a fresh judge: each caches its answers
        assert alone.update == pytest.approx(scores.update, abs=0.01)
        assert alone.duplicate == pytest.approx(scores.duplicate, abs=0.01)

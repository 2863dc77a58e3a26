"""The shipped judge (:class:`memorybank.providers.judges.LocalJudge`) as every path calls it."""

from __future__ import annotations

import pytest

from memorybank.providers.judges.local import LocalJudge

PAIRS = [
    ("User lives in Lisbon", "User moved to Porto"),
    ("User lives in Paris", "User moved to Rome"),  # as many tokens: no padding differs
    ("User likes tea", "User likes coffee"),
]


def test_a_pair_scores_the_same_whatever_it_is_scored_with() -> None:
    # The int8 model quantises its activations over the whole input: batched, Lisbon/Porto
    # scored update 0.85 alone and 0.96 beside two others. It now runs one pair at a time.
    together = LocalJudge().score(PAIRS)
    for pair, scores in zip(PAIRS, together, strict=True):
        [alone] = LocalJudge().score([pair])  # a fresh judge: each caches its answers
        assert alone.update == pytest.approx(scores.update, abs=1e-6)
        assert alone.duplicate == pytest.approx(scores.duplicate, abs=1e-6)

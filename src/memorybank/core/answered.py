"""The person's answers "both are true" (:func:`memorybank.services.pairs.keep_both`), as
the two paths that place an older fact beside a newer one read them: the search, which puts
an older fact right after the newer one that may update it, and the prompt block, which
notes it under the newer one as "earlier, may be outdated". A pair answered "both are true"
is no update on either path.

>>> from memorybank.stores.sqlite import SQLiteStore
>>> both = kept_both(SQLiteStore(":memory:", dimension=3), ["mem_a", "mem_b"])
>>> both("mem_a", "mem_b")
False
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memorybank.stores.base import Store


def kept_both(store: Store, memory_ids: Sequence[str]) -> Callable[[str, str], bool]:
    """Whether two of ``memory_ids`` were answered "both are true" (either order). The store
    is read once, on the first question: most searches and blocks ask none."""
    answers: list[set[frozenset[str]]] = []

    def answered(a: str, b: str) -> bool:
        if not answers:
            answers.append(store.distinct_pairs(list(memory_ids)))
        return frozenset((a, b)) in answers[0]

    return answered


__all__ = ["kept_both"]

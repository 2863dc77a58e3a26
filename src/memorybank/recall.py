"""Auto-recall: the memory block for the message at hand.

Seed 004's runtime "auto-retrieves relevant context": before the assistant answers, the
caller's always-loaded facts (seed 000: identity, preference and relationship facts; the
workspace's facts) and the memories relevant to the user's current message are rendered into
one block within a token budget. Relevance is the calibrated ``SearchHit.relevance``
(:mod:`memorybank.retrieval`), so the cut-off means the same for every user and query: a
message about something never remembered adds nothing beyond the always-loaded part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybank.context import system_prompt
from memorybank.model import Caller
from memorybank.retrieval import RECALL_MIN_RELEVANCE
from memorybank.tokens import Encoding

if TYPE_CHECKING:
    from memorybank.bank import MemoryBank


def context_for(
    bank: MemoryBank,
    ctx: Caller,
    message: str,
    budget_tokens: int = 500,
    *,
    min_relevance: float = RECALL_MIN_RELEVANCE,
    encoding: Encoding = "o200k_base",
) -> str:
    """The ``<memories>`` block for ``message``, in at most ``budget_tokens`` tokens: the
    always-loaded facts, then the memories whose relevance to ``message`` is at least
    ``min_relevance`` (best first, each whole or not at all). Empty when there is nothing to
    show or memory is off for ``ctx``.

    >>> _ = bank.save("kim", "User's name is Kim", "identity")
    >>> _ = bank.save("kim", "User is training for the Berlin marathon in September", "context")
    >>> kim = Caller(user_id="kim")
    >>> print(context_for(bank, kim, "Any tips for my marathon training?"))  # doctest: +ELLIPSIS
    <memories>
    ...
    ## About This User
    - User's name is Kim
    ## Relevant To This Message
    - User is training for the Berlin marathon in September
    </memories>
    >>> print(context_for(bank, kim, "What is the capital of Peru?"))  # doctest: +ELLIPSIS
    <memories>
    ...
    ## About This User
    - User's name is Kim
    </memories>
    """
    return system_prompt(
        bank, ctx, "", budget_tokens, encoding, message=message, min_relevance=min_relevance
    )


__all__ = ["context_for"]

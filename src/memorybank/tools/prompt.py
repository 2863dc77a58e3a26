"""A profile's system prompt: its guidance plus the memories pre-loaded for this caller."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorybank.core.prompt import system_prompt as memory_block
from memorybank.rules.tokens import count_tokens
from memorybank.tools.profiles import profile as find_profile

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank
    from memorybank.model import Caller


def system_prompt(
    bank: MemoryBank,
    caller: Caller,
    profile: str = "default",
    budget_tokens: int = 500,
    *,
    message: str | None = None,
) -> str:
    """Profile ``profile``'s guidance plus the caller's pre-loaded memories (identity,
    preference and relationship first, then the project's), never over ``budget_tokens`` o200k
    tokens. Given the user's current ``message``, the memories relevant to it take the budget
    first and lead the block, and the pre-loaded ones fill what is left (auto-recall,
    :func:`memorybank.core.prompt.system_prompt`); every profile gets the same block.

    >>> from memorybank.tools import Caller
    >>> _ = bank.save("u1", "User prefers dark mode", "preference")
    >>> print(system_prompt(bank, Caller(user_id="u1"), "default", 300))
    You have a long-term memory of this user. ...
    ## About This User
    - User prefers dark mode
    </memories>
    """
    guidance = find_profile(profile).guidance
    text = memory_block(bank, caller, guidance, budget_tokens, message=message)
    # Seed 002 §8.3: how large the memory block is, and its share of the system prompt.
    total = count_tokens(text)
    block = max(0, total - count_tokens(guidance)) if text != guidance else 0
    bank.usage.prompt_built(caller.user_id, block_tokens=block, prompt_tokens=total)
    return text


__all__ = ["system_prompt"]

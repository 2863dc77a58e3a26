"""memorybank as a LlamaIndex memory block: long-term memory beside the chat history.

:class:`MemoryBankBlock` is a ``BaseMemoryBlock`` for ``llama_index.core.memory.Memory``
(``Memory.from_defaults(memory_blocks=[MemoryBankBlock(bank=bank, caller=caller)])``):

* **get**: the caller's ``<memories>`` block for the latest user message (the bank's
  auto-recall, :func:`memorybank.core.prompt.auto_recall`: what is relevant to that message,
  then the always-loaded facts, in at most ``budget_tokens`` tokens), which the agent's memory
  puts into the system message;
* **put**: the messages the memory flushes out of its short-term window are remembered as a
  conversation (:func:`memorybank.services.conversations.remember_conversation`): the turns
  are kept and the facts they state are saved, with the bank's LLM if it has one, else the
  explicit statements ("my name is …", "I prefer …", "remember that …").

As everywhere, the application sets the :class:`~memorybank.model.Caller` (whose memory it
is); nothing in the conversation can choose another. With memory off for the caller the block
is empty and remembers nothing.

>>> from memorybank.model import Caller
>>> block = MemoryBankBlock(bank=bank, caller=Caller(user_id="ana"))
>>> block.name, block.priority
('memorybank', 0)
"""

from __future__ import annotations

import asyncio
from typing import Any

try:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole
    from llama_index.core.memory import BaseMemoryBlock
    from pydantic import ConfigDict, Field
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "memorybank.integrations.llama_index needs LlamaIndex: "
        "pip install './memorybank[llama-index]' (from a clone)"
    ) from exc

from memorybank.core.bank import MemoryBank
from memorybank.core.prompt import auto_recall
from memorybank.model import Caller
from memorybank.services.conversations import remember_conversation

__all__ = ["MemoryBankBlock"]

# The roles a conversation memory keeps: what the user and the assistant said.
_SAID = {MessageRole.USER: "user", MessageRole.ASSISTANT: "assistant"}


class MemoryBankBlock(BaseMemoryBlock[str]):
    """The caller's memorybank memories as a LlamaIndex memory block (see the module)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str = Field(default="memorybank", description="The block's name in the prompt.")
    description: str | None = Field(
        default="What the assistant remembers about the user, from memorybank.",
        description="A description of the memory block.",
    )
    bank: MemoryBank = Field(description="The bank the memories live in.")
    caller: Caller = Field(description="Whose memories: set by the application.")
    budget_tokens: int = Field(default=500, ge=50, description="The block's size at most.")

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The ``<memories>`` block for the latest user message (or the always-loaded facts
        when there is none yet)."""
        del block_kwargs
        question = next(
            (
                m.content
                for m in reversed(messages or [])
                if m.role == MessageRole.USER and m.content
            ),
            None,
        )
        if question is None:
            question = "What do you know about me?"
        return await asyncio.to_thread(
            auto_recall, self.bank, self.caller, question, self.budget_tokens
        )

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Remember what the user and the assistant said in ``messages``."""
        said = [
            {"role": _SAID[m.role], "content": m.content}
            for m in messages
            if m.role in _SAID and m.content and m.content.strip()
        ]
        if said and self.caller.memory_enabled:
            await asyncio.to_thread(remember_conversation, self.bank, self.caller, said)

"""What a tool is, and who it runs for.

The :class:`~memorybank.model.Caller` comes from the host application (who the user is, which
thread and project), never from the model: the model only fills a tool's arguments, so it cannot
choose whose memory it touches. A :class:`Tool` pairs one pydantic arguments model (the single
source of its JSON schema) with a handler over :class:`~memorybank.MemoryBank`. A
:class:`Profile` is a named tool set plus the system-prompt guidance that teaches a model to use
it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel


class SafetyTier(StrEnum):
    """Whether calling a tool can change anything (seed 004)."""

    READ_ONLY = "read_only"
    SIDE_EFFECTING = "side_effecting"


#: ``handler(bank, caller, args)``; a tool with ``uses_llm`` also takes ``llm=`` (the chat model
#: for this call, or ``None`` for the bank's own).
Handler = Callable[..., Any]


@dataclass(frozen=True)
class Tool:
    """One function the model can call.

    ``arguments`` is the pydantic model the model's JSON is validated against (and whose JSON
    schema is exported); ``handler(bank, caller, args)`` returns a JSON-serialisable value (a dict,
    or a string for profiles whose seed answers in text).
    """

    name: str
    description: str
    arguments: type[BaseModel]
    handler: Handler
    tier: SafetyTier
    timeout_s: float
    uses_llm: bool = False
    #: Counted against the caller's write limit although it changes no memory (a forget
    #: preview: it stores a plan and may ask an LLM). Side-effecting tools always count.
    limited: bool = False

    @property
    def counted(self) -> bool:
        """Whether a call costs a unit of the caller's write limit before it runs."""
        return self.tier == SafetyTier.SIDE_EFFECTING or self.limited


@dataclass(frozen=True)
class Profile:
    """A named tool set with its system-prompt guidance (one per seed, plus ``default``)."""

    name: str
    tools: tuple[Tool, ...]
    guidance: str
    description: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    def tool(self, name: str) -> Tool | None:
        """The tool called ``name``, if the profile has it."""
        return next((t for t in self.tools if t.name == name), None)

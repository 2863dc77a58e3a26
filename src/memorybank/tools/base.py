"""What a tool is, and the context it runs in.

A :class:`ToolContext` comes from the host application (who the user is, which thread and
project), never from the model: the model only fills a tool's arguments, so it cannot choose
whose memory it touches. A :class:`Tool` pairs one pydantic arguments model (the single source
of its JSON schema) with a handler over :class:`~memorybank.MemoryBank`. A :class:`Profile` is
a named tool set plus the system-prompt guidance that teaches a model to use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from memorybank.bank import MemoryBank


class SafetyTier(StrEnum):
    """Whether calling a tool can change anything (seed 004)."""

    READ_ONLY = "read_only"
    SIDE_EFFECTING = "side_effecting"


class ToolContext(BaseModel):
    """Who is calling, set by the host application for each conversation turn.

    >>> ToolContext(user_id="alice", project_id="apollo", thread_id="t1")
    ToolContext(...)
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    project_id: str | None = None
    thread_id: str | None = None
    role: Literal["owner", "admin", "member"] | None = None
    org_id: str | None = None
    # Only an org admin may search across the org (seed 003's orgWide).
    org_admin: bool = False
    memory_enabled: bool = True
    supports_tools: bool = True


Handler = Callable[["MemoryBank", ToolContext, Any], Any]


@dataclass(frozen=True)
class Tool:
    """One function the model can call.

    ``arguments`` is the pydantic model the model's JSON is validated against (and whose JSON
    schema is exported); ``handler(bank, ctx, args)`` returns a JSON-serialisable value (a dict,
    or a string for profiles whose seed answers in text).
    """

    name: str
    description: str
    arguments: type[BaseModel]
    handler: Handler
    tier: SafetyTier
    timeout_s: float


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

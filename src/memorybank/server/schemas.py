"""Request and response bodies of the REST API (separate from the core records)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memorybank.model import Memory


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


def memory_json(memory: Memory) -> dict[str, Any]:
    """A stored memory as every response shows it."""
    return memory.model_dump(mode="json")


class ErrorBody(BaseModel):
    """Every error answer: ``{"error": "<what to fix>"}``; a duplicate (409) adds
    ``duplicate`` and the ``existing`` memory."""

    model_config = ConfigDict(extra="allow")

    error: str


class AddFact(_Body):
    """``POST /api/memory/user`` and ``/api/memory/drive/{driveId}``."""

    fact: str = Field(description="The fact, e.g. 'User prefers dark mode'")
    category: str | None = Field(default=None, description="identity, preference, …")


class ClearRequest(_Body):
    """The second step of clearing a scope."""

    confirm_token: str


class MemoryPatch(_Body):
    """``PATCH /api/memories/{id}``: only the fields given change."""

    content: str | None = None
    category: str | None = None
    importance: int | None = Field(default=None, ge=1, le=10)
    tags: list[str] | None = None


class ForgetRequest(_Body):
    """``POST /api/forget/preview``."""

    query: str
    project_id: str | None = None


class ThreadCreate(_Body):
    """``POST /api/threads``."""

    project_id: str | None = None
    memory_enabled: bool = True
    title: str | None = None


class ThreadPatch(_Body):
    """``PATCH /api/threads/{id}``: only the fields given change."""

    project_id: str | None = None
    memory_enabled: bool | None = None
    title: str | None = None


class ToolCall(_Body):
    """``POST /api/tools/{profile}/call``: what the model asked for."""

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    thread_id: str | None = None


class ProviderUpdate(_Body):
    """``PUT /api/settings/providers/{kind}``: leave ``api_key`` out to keep the stored one."""

    base_url: str
    model: str
    api_key: str | None = None
    enabled: bool = True


class ProviderView(BaseModel):
    """A provider setting as the API shows it: never the key, only whether one is set."""

    kind: Literal["embedding", "llm"]
    base_url: str
    model: str
    enabled: bool
    key_set: bool
    key_hint: str | None


class ProjectView(BaseModel):
    """A project the caller belongs to."""

    id: str
    name: str
    role: Literal["owner", "admin", "member"]


class Me(BaseModel):
    """``GET /api/me``."""

    user_id: str
    name: str
    mode: Literal["local", "auth"]
    projects: list[ProjectView]
    org_admin: bool


class ThreadView(BaseModel):
    """A thread."""

    id: str
    project_id: str | None
    title: str | None
    memory_enabled: bool
    created_at: str
    updated_at: str

"""The account records: users, projects and roles, API keys, threads, provider settings.

Plain typed values with no I/O, apart from :mod:`memorybank.services.accounts`
(the service) so that the
SQL stores keeping them (:mod:`memorybank.stores.accounts_sql`) need not import the service
that uses those stores. :mod:`memorybank.services.accounts` re-exports every name.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memorybank.model.memory import Role, new_id, utcnow

OrgRole = Literal["admin", "member"]
ProviderKind = Literal["embedding", "llm"]

ROLES: tuple[Role, ...] = ("owner", "admin", "member")
ORG_ROLES: tuple[OrgRole, ...] = ("admin", "member")
PROVIDER_KINDS: tuple[ProviderKind, ...] = ("embedding", "llm")


class User(BaseModel):
    """Someone who may call the server."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    created_at: datetime = Field(default_factory=utcnow)


class Project(BaseModel):
    """A shared memory scope (seed 002's drive, seed 001's folder), optionally in an org."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    org_id: str | None = None
    created_at: datetime = Field(default_factory=utcnow)


class Membership(BaseModel):
    """A user's role in a project."""

    model_config = ConfigDict(frozen=True)

    project_id: str
    user_id: str
    role: Role


class ApiKey(BaseModel):
    """An API key's record: never the key itself, only the hash of it."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=lambda: new_id("key"))
    user_id: str
    key_hash: str
    label: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    revoked_at: datetime | None = None


class Thread(BaseModel):
    """A conversation: its project decides the tools' scope, ``memory_enabled`` whether the
    model gets memory tools at all (seed 001's per-chat toggle)."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=lambda: new_id("thr"))
    user_id: str
    project_id: str | None = None
    title: str | None = None
    memory_enabled: bool = True
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class ProviderSettings(BaseModel):
    """A user's own embedding or LLM provider, as stored: the key only encrypted."""

    model_config = ConfigDict(frozen=True)

    user_id: str
    kind: ProviderKind
    base_url: str
    model: str
    enabled: bool = True
    key_ciphertext: bytes | None = Field(default=None, repr=False)
    key_hint: str | None = None
    updated_at: datetime = Field(default_factory=utcnow)

    @property
    def key_set(self) -> bool:
        """Whether an API key is stored."""
        return self.key_ciphertext is not None


__all__ = [
    "ORG_ROLES",
    "PROVIDER_KINDS",
    "ROLES",
    "ApiKey",
    "Membership",
    "OrgRole",
    "Project",
    "ProviderKind",
    "ProviderSettings",
    "Role",
    "Thread",
    "User",
]

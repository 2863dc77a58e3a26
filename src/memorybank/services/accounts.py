"""Who may use a server: users, projects (seed 002's drives) with roles, API keys, threads and
bring-your-own provider settings.

:class:`Accounts` is the service; it keeps no state of its own and stores everything through an
:class:`AccountStore` in the same database as the memories
(:class:`memorybank.stores.accounts_sql.SqlAccountStore`, in the SQLite file or the PostgreSQL
database of the bank's store). The records themselves are in :mod:`memorybank.model.accounts`.

* API keys are ``mb_`` + 32 random bytes (urlsafe base64), shown once by
  :meth:`Accounts.create_key` and stored only as their SHA-256 (the keys have 256 bits of
  entropy, so a fast hash is enough).
* Provider API keys (seed 001's BYOK) are encrypted at rest with Fernet (AES-128-CBC +
  HMAC-SHA256) under the server's master key (:func:`load_master_key`), decrypted only by
  :meth:`Accounts.provider_secret` when a call needs them, and never returned otherwise: a
  :class:`ProviderSettings` only says whether a key is set and its last four characters.

>>> from memorybank.settings import Settings
>>> accounts = Accounts.open(bank, Settings(master_key="a-server-secret"))
>>> accounts.create_user("alice", name="Alice").id
'alice'
>>> key, raw = accounts.create_key("alice")
>>> accounts.authenticate(raw).id
'alice'
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import secrets
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from cryptography.fernet import Fernet, InvalidToken
from pydantic import SecretStr

from memorybank.errors import ConfigurationError, NotFound, ValidationError
from memorybank.model import Caller, utcnow
from memorybank.model.accounts import (
    ORG_ROLES,
    PROVIDER_KINDS,
    ROLES,
    ApiKey,
    Membership,
    OrgRole,
    Project,
    ProviderKind,
    ProviderSettings,
    Role,
    Thread,
    User,
)
from memorybank.providers.netguard import AddressPolicy, url_problem
from memorybank.rules.permissions import require_org_admin
from memorybank.stores.accounts_sql import sql_accounts

if TYPE_CHECKING:
    from memorybank.core.bank import MemoryBank


class KeySettings(Protocol):
    """Where the master key comes from: the fields of :class:`memorybank.Settings` this module
    reads (the settings are built at the edge; a service only receives them)."""

    @property
    def master_key(self) -> SecretStr | None: ...

    @property
    def key_file(self) -> Path | None: ...

    @property
    def home(self) -> Path: ...


#: The user of single-user local mode (no users configured).
LOCAL_USER = "local"
KEY_PREFIX = "mb_"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")


class AccountStore(Protocol):
    """Where :class:`Accounts` keeps its records."""

    def add_user(self, user: User) -> None: ...
    def get_user(self, user_id: str) -> User | None: ...
    def list_users(self) -> list[User]: ...
    def count_users(self) -> int: ...
    def add_project(self, project: Project) -> None: ...
    def get_project(self, project_id: str) -> Project | None: ...
    def set_member(self, membership: Membership) -> None: ...
    def member_role(self, project_id: str, user_id: str) -> Role | None: ...
    def user_projects(self, user_id: str) -> list[tuple[Project, Role]]: ...
    def add_key(self, key: ApiKey) -> None: ...
    def key_by_hash(self, key_hash: str) -> ApiKey | None: ...
    def revoke_key(self, key_id: str, at: datetime) -> bool: ...
    def list_keys(self, user_id: str) -> list[ApiKey]: ...
    def set_org_member(self, org_id: str, user_id: str, role: OrgRole) -> None: ...
    def user_orgs(self, user_id: str) -> list[tuple[str, OrgRole]]: ...
    def save_thread(self, thread: Thread) -> None: ...
    def get_thread(self, thread_id: str) -> Thread | None: ...
    def list_threads(self, user_id: str) -> list[Thread]: ...
    def save_provider(self, settings: ProviderSettings) -> None: ...
    def get_provider(self, user_id: str, kind: ProviderKind) -> ProviderSettings | None: ...
    def list_providers(self, user_id: str) -> list[ProviderSettings]: ...
    def delete_provider(self, user_id: str, kind: ProviderKind) -> bool: ...
    def memory_project(self, memory_id: str) -> tuple[bool, str | None]: ...


def hash_key(raw: str) -> str:
    """The stored form of an API key."""
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def load_master_key(settings: KeySettings) -> bytes:
    """The Fernet key encrypting provider keys: derived from ``MEMORYBANK_MASTER_KEY`` if set,
    else read from the key file (default ``$MEMORYBANK_HOME/master.key``), which is created
    with mode 0600 on first use."""
    if settings.master_key is not None:
        secret = settings.master_key.get_secret_value().encode("utf-8")
        return base64.urlsafe_b64encode(hashlib.sha256(secret).digest())
    path = settings.key_file or settings.home / "master.key"
    try:
        return _read_or_create_key(Path(path))
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read or create the master key file {path}: {exc.strerror}; set "
            "MEMORYBANK_MASTER_KEY or MEMORYBANK_KEY_FILE to a writable place"
        ) from exc


def _read_or_create_key(path: Path) -> bytes:
    try:
        key = path.read_bytes().strip()
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        key = Fernet.generate_key()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process won the race
            return path.read_bytes().strip()
        with os.fdopen(fd, "wb") as out:
            out.write(key + b"\n")
        return key
    try:
        Fernet(key)
    except ValueError:
        raise ConfigurationError(f"{path} does not hold a Fernet key") from None
    return key


def _check_id(value: object, field: str) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ValidationError(
            f"{field} must be 1–64 letters, digits, '.', '_', '@' or '-', starting with a "
            "letter or digit",
            field=field,
        )
    return value


class Accounts:
    """Users, projects, roles, API keys, threads and provider settings over one store."""

    def __init__(self, store: AccountStore, master_key: bytes | None = None) -> None:
        self.store = store
        self._fernet = Fernet(master_key) if master_key is not None else None

    @classmethod
    def open(cls, bank: MemoryBank, settings: KeySettings) -> Accounts:
        """Accounts in the same database as ``bank``'s memories (SQLite file or PostgreSQL)."""
        return cls(sql_accounts(bank.store), load_master_key(settings))

    @classmethod
    def of(cls, bank: MemoryBank) -> Accounts:
        """The accounts of ``bank``'s database for users, roles and keys only: without the
        master key (none is read or created), so no provider key can be read or stored."""
        return cls(sql_accounts(bank.store))

    # -- users and keys ---------------------------------------------------------------------

    def has_users(self) -> bool:
        """Whether any user is configured (if not, the server runs in local mode)."""
        return self.store.count_users() > 0

    def create_user(self, user_id: str, *, name: str | None = None) -> User:
        """Add a user; raises :class:`ValidationError` if the id is taken or malformed."""
        _check_id(user_id, "user_id")
        if user_id == LOCAL_USER:
            raise ValidationError(f"{LOCAL_USER!r} is reserved for local mode", field="user_id")
        if self.store.get_user(user_id) is not None:
            raise ValidationError(f"user {user_id!r} exists already", field="user_id")
        user = User(id=user_id, name=name or user_id)
        self.store.add_user(user)
        return user

    def user(self, user_id: str) -> User:
        """The user, or :class:`NotFound`."""
        user = self.store.get_user(user_id)
        if user is None:
            raise NotFound(f"no user {user_id!r}")
        return user

    def create_key(self, user_id: str, *, label: str | None = None) -> tuple[ApiKey, str]:
        """A new API key for the user: its record and the key itself (shown once)."""
        self.user(user_id)
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        key = ApiKey(user_id=user_id, key_hash=hash_key(raw), label=label)
        self.store.add_key(key)
        return key, raw

    def revoke_key(self, key_id: str) -> None:
        """Revoke a key for good; :class:`NotFound` if there is no such active key."""
        if not self.store.revoke_key(key_id, utcnow()):
            raise NotFound(f"no active API key {key_id!r}")

    def keys(self, user_id: str) -> list[ApiKey]:
        """The user's key records (hashes only)."""
        return self.store.list_keys(user_id)

    def authenticate(self, raw: str) -> User | None:
        """The user owning an active key ``raw``, else ``None``."""
        if not raw.startswith(KEY_PREFIX) or len(raw) > 200:
            return None
        key = self.store.key_by_hash(hash_key(raw))
        if key is None or key.revoked_at is not None:
            return None
        return self.store.get_user(key.user_id)

    # -- projects and orgs ------------------------------------------------------------------

    def create_project(
        self, project_id: str, *, owner: str, name: str | None = None, org_id: str | None = None
    ) -> Project:
        """Add a project with ``owner`` as its owner."""
        _check_id(project_id, "project_id")
        self.user(owner)
        if org_id is not None:
            _check_id(org_id, "org_id")
        if self.store.get_project(project_id) is not None:
            raise ValidationError(f"project {project_id!r} exists already", field="project_id")
        project = Project(id=project_id, name=name or project_id, org_id=org_id)
        self.store.add_project(project)
        self.store.set_member(Membership(project_id=project_id, user_id=owner, role="owner"))
        return project

    def add_member(self, project_id: str, user_id: str, role: str) -> Membership:
        """Give ``user_id`` ``role`` in the project (again: changes the role)."""
        if role not in ROLES:
            raise ValidationError(f"role {role!r} is not one of owner, admin, member", field="role")
        if self.store.get_project(project_id) is None:
            raise NotFound(f"no project {project_id!r}")
        self.user(user_id)
        membership = Membership(project_id=project_id, user_id=user_id, role=role)
        self.store.set_member(membership)
        return membership

    def role(self, project_id: str, user_id: str) -> Role | None:
        """The user's role in the project, ``None`` for non-members and unknown projects."""
        return self.store.member_role(project_id, user_id)

    def author_role(self, project_id: str, user_id: str) -> Role | None:
        """The role now of whoever saved a project fact, for deciding what their fact may
        retire (:data:`memorybank.core.consolidate.RoleOf`): their role in the project, or
        ``None`` once they left it; in local mode (no users) the one person at the machine
        owns every project."""
        if not self.has_users():
            return "owner"
        return self.role(project_id, user_id)

    def projects(self, user_id: str) -> list[tuple[Project, Role]]:
        """The projects the user belongs to, with the role in each."""
        return self.store.user_projects(user_id)

    def project(self, project_id: str) -> Project | None:
        """The project, if it exists."""
        return self.store.get_project(project_id)

    def add_org_member(self, org_id: str, user_id: str, role: str = "member") -> None:
        """Put the user in the org (the same table :func:`org_users` reads)."""
        _check_id(org_id, "org_id")
        if role not in ORG_ROLES:
            raise ValidationError(f"org role {role!r} is not admin or member", field="org_role")
        self.user(user_id)
        self.store.set_org_member(org_id, user_id, role)

    def orgs(self, user_id: str) -> list[tuple[str, OrgRole]]:
        """The orgs the user belongs to, with the role in each."""
        return self.store.user_orgs(user_id)

    def memory_project(self, memory_id: str) -> tuple[bool, str | None]:
        """Whether a memory exists and the project it belongs to (``None``: private)."""
        return self.store.memory_project(memory_id)

    # -- threads ----------------------------------------------------------------------------

    def create_thread(
        self,
        user_id: str,
        *,
        project_id: str | None = None,
        title: str | None = None,
        memory_enabled: bool = True,
    ) -> Thread:
        """A new conversation of the user's (the caller checks project membership)."""
        thread = Thread(
            user_id=user_id, project_id=project_id, title=title, memory_enabled=memory_enabled
        )
        self.store.save_thread(thread)
        return thread

    def thread(self, thread_id: str, user_id: str) -> Thread:
        """One of the user's threads, or :class:`NotFound` (also for other users' threads)."""
        thread = self.store.get_thread(thread_id)
        if thread is None or thread.user_id != user_id:
            raise NotFound(f"no thread {thread_id!r}")
        return thread

    def threads(self, user_id: str) -> list[Thread]:
        """The user's threads, newest first."""
        return self.store.list_threads(user_id)

    def update_thread(
        self,
        thread_id: str,
        user_id: str,
        *,
        title: str | None = None,
        memory_enabled: bool | None = None,
        project_id: str | None = None,
        clear_project: bool = False,
    ) -> Thread:
        """Rename a thread, switch its memory on or off, or move it to another project."""
        thread = self.thread(thread_id, user_id)
        update: dict[str, object] = {"updated_at": utcnow()}
        if title is not None:
            update["title"] = title
        if memory_enabled is not None:
            update["memory_enabled"] = memory_enabled
        if project_id is not None or clear_project:
            update["project_id"] = project_id
        changed = thread.model_copy(update=update)
        self.store.save_thread(changed)
        return changed

    # -- bring-your-own providers -----------------------------------------------------------

    @property
    def cipher(self) -> Fernet | None:
        """The master key's cipher (provider keys and webhook secrets are sealed with it);
        ``None`` when no master key is configured."""
        return self._fernet

    def _cipher(self) -> Fernet:
        if self._fernet is None:
            raise ConfigurationError(
                "no master key: set MEMORYBANK_MASTER_KEY to store provider keys"
            )
        return self._fernet

    def set_provider(
        self,
        user_id: str,
        kind: str,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        enabled: bool = True,
        address_policy: AddressPolicy | None = None,
    ) -> ProviderSettings:
        """Create or change the user's provider of ``kind``; ``api_key=None`` keeps the stored
        key (so enabling, disabling or changing the model never needs the key again).

        ``base_url`` must be http(s) with a host and no ``user:pass@``, query or fragment;
        with an ``address_policy`` (the server's, for its users) a host written as an IP
        literal must be an address the policy allows (names are checked on connecting)."""
        if kind not in PROVIDER_KINDS:
            raise ValidationError(f"provider kind {kind!r} is not embedding or llm", field="kind")
        problem = url_problem(base_url, address_policy)
        if problem is not None:
            raise ValidationError(f"base_url {problem}", field="base_url")
        if not model or not model.strip():
            raise ValidationError("model is required", field="model")
        old = self.store.get_provider(user_id, kind)
        ciphertext = old.key_ciphertext if old else None
        hint = old.key_hint if old else None
        if api_key is not None:
            if not api_key.strip():
                raise ValidationError("api_key is empty: leave it out to keep the stored key")
            ciphertext = self._cipher().encrypt(api_key.encode("utf-8"))
            hint = "…" + api_key[-4:] if len(api_key) >= 12 else "…"
        settings = ProviderSettings(
            user_id=user_id,
            kind=kind,
            base_url=base_url,
            model=model.strip(),
            enabled=enabled,
            key_ciphertext=ciphertext,
            key_hint=hint,
        )
        self.store.save_provider(settings)
        return settings

    def providers(self, user_id: str) -> list[ProviderSettings]:
        """The user's provider settings (keys still encrypted)."""
        return self.store.list_providers(user_id)

    def provider(self, user_id: str, kind: ProviderKind) -> ProviderSettings | None:
        """One provider setting of the user's, if stored."""
        return self.store.get_provider(user_id, kind)

    def delete_provider(self, user_id: str, kind: str) -> None:
        """Forget the user's provider of ``kind`` and its key."""
        if kind not in PROVIDER_KINDS or not self.store.delete_provider(user_id, kind):
            raise NotFound(f"no {kind} provider configured")

    def provider_secret(self, settings: ProviderSettings) -> str | None:
        """The decrypted API key of ``settings``: call only right before using it."""
        if settings.key_ciphertext is None:
            return None
        try:
            return self._cipher().decrypt(settings.key_ciphertext).decode("utf-8")
        except InvalidToken:
            raise ConfigurationError(
                f"the stored {settings.kind} key cannot be decrypted with this master key; "
                "store the key again"
            ) from None


# -- org membership as the bank's store keeps it (seed 003's orgWide) -------------------------
#
# An org admin's org-wide read covers the private memory of the org's members. Who they are is
# kept in the bank's store (``org_members``, the table :meth:`Accounts.add_org_member` also
# writes with a role), so a bank without a server's accounts can still have orgs.


def _required(value: str, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationError(f"{field} is required", field=field)
    return value


def join_org(bank: MemoryBank, org_id: str, user_id: str) -> None:
    """Record that ``user_id`` belongs to ``org_id`` (again changes nothing)."""
    bank.store.add_org_member(_required(org_id, "org_id"), _required(user_id, "user_id"))


def leave_org(bank: MemoryBank, org_id: str, user_id: str) -> bool:
    """Remove ``user_id`` from ``org_id``; whether they were a member."""
    return bank.store.remove_org_member(_required(org_id, "org_id"), _required(user_id, "user_id"))


def org_users(bank: MemoryBank, org_id: str) -> list[str]:
    """The members of ``org_id``, sorted.

    >>> join_org(bank, "acme", "alice")
    >>> org_users(bank, "acme")
    ['alice']
    """
    return bank.store.org_users(_required(org_id, "org_id"))


def org_readers(bank: MemoryBank, caller: Caller, argument: str = "orgWide") -> list[str]:
    """Whose private memory an org-wide read by ``caller`` covers: the members of the org
    ``caller`` administers, and the caller. Anyone but an org admin gets
    :class:`~memorybank.PermissionDenied` (``argument`` names the option in messages)."""
    org = require_org_admin(caller, argument)
    return sorted({*org_users(bank, org), caller.user_id})


# ProviderKind, ProviderSettings, Role and Thread are memorybank.model.accounts' records, listed
# here only while server/ still imports them from this module.
__all__ = [
    "LOCAL_USER",
    "AccountStore",
    "Accounts",
    "ProviderKind",
    "ProviderSettings",
    "Role",
    "Thread",
    "hash_key",
    "KeySettings",
    "load_master_key",
    "join_org",
    "leave_org",
    "org_readers",
    "org_users",
]

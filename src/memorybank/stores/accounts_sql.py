"""The accounts (:class:`memorybank.services.accounts.AccountStore`) in a SQL store's own database.

The SQLite and PostgreSQL stores keep accounts in the same tables (SQLite migration 3,
PostgreSQL migration 2) with times as integer microseconds, so one set of statements, in the
stores' shared dialect (:mod:`.sql`), serves both. :class:`SqlAccountStore` runs them in the
store's own transactions (its :class:`~memorybank.stores.sql.SqlDatabase`), so accounts and
memories share one database, one lock and one backup, and every replica of a server sees the
same users and keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

from memorybank.model.accounts import (
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
from memorybank.model.stored import from_us, to_us
from memorybank.stores.base import Store, require_sql
from memorybank.stores.sql import SqlDatabase, upsert

_us = to_us
_dt = from_us
_opt_dt = from_us


THREAD_COLUMNS = "id, user_id, project_id, title, memory_enabled, created_us, updated_us"
PROVIDER_COLUMNS = "user_id, kind, base_url, model, key_ciphertext, key_hint, enabled, updated_us"
KEY_COLUMNS = "id, user_id, key_hash, label, created_us, revoked_us"


_SAVE_THREAD = upsert("threads", THREAD_COLUMNS, "id")
_SAVE_PROVIDER = upsert("provider_settings", PROVIDER_COLUMNS, "user_id, kind")


def _thread(row: tuple[Any, ...]) -> Thread:
    return Thread(
        id=row[0],
        user_id=row[1],
        project_id=row[2],
        title=row[3],
        memory_enabled=bool(row[4]),
        created_at=_dt(row[5]),
        updated_at=_dt(row[6]),
    )


def _provider(row: tuple[Any, ...]) -> ProviderSettings:
    return ProviderSettings(
        user_id=row[0],
        kind=row[1],
        base_url=row[2],
        model=row[3],
        key_ciphertext=None if row[4] is None else bytes(row[4]),
        key_hint=row[5],
        enabled=bool(row[6]),
        updated_at=_dt(row[7]),
    )


def _key(row: tuple[Any, ...]) -> ApiKey:
    return ApiKey(
        id=row[0],
        user_id=row[1],
        key_hash=row[2],
        label=row[3],
        created_at=_dt(row[4]),
        revoked_at=_opt_dt(row[5]),
    )


def _project(row: tuple[Any, ...]) -> Project:
    return Project(id=row[0], name=row[1], org_id=row[2], created_at=_dt(row[3]))


class SqlAccountStore:
    """An :class:`~memorybank.services.accounts.AccountStore` in the database of ``store``.

    :meth:`fetch`, :meth:`execute` and :meth:`execute_many` run one statement of the shared
    dialect (``?`` placeholders) in a transaction of its own.
    """

    def __init__(self, database: SqlDatabase) -> None:
        self.database = database

    def fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one query, read in one snapshot."""
        with self.database.reading() as txn:
            return txn.fetch(sql, params)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement in a write transaction; the number of rows it changed."""
        with self.database.writing() as txn:
            return txn.execute(sql, params)

    def execute_many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Run one statement once per parameter row, all in one write transaction."""
        with self.database.writing() as txn:
            txn.execute_many(sql, rows)

    def _one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        with self.database.reading() as txn:
            return txn.one(sql, params)

    # -- users ------------------------------------------------------------------------------

    def add_user(self, user: User) -> None:
        """Insert a user."""
        self.execute(
            "INSERT INTO users (id, name, created_us) VALUES (?, ?, ?)",
            (user.id, user.name, _us(user.created_at)),
        )

    def get_user(self, user_id: str) -> User | None:
        """One user."""
        row = self._one("SELECT id, name, created_us FROM users WHERE id = ?", (user_id,))
        return None if row is None else User(id=row[0], name=row[1], created_at=_dt(row[2]))

    def list_users(self) -> list[User]:
        """Every user, by id."""
        rows = self.fetch("SELECT id, name, created_us FROM users ORDER BY id")
        return [User(id=r[0], name=r[1], created_at=_dt(r[2])) for r in rows]

    def count_users(self) -> int:
        """How many users there are."""
        row = self._one("SELECT count(*) FROM users")
        return int(row[0]) if row else 0

    # -- projects ---------------------------------------------------------------------------

    def add_project(self, project: Project) -> None:
        """Insert a project."""
        self.execute(
            "INSERT INTO projects (id, name, org_id, created_us) VALUES (?, ?, ?, ?)",
            (project.id, project.name, project.org_id, _us(project.created_at)),
        )

    def get_project(self, project_id: str) -> Project | None:
        """One project."""
        row = self._one(
            "SELECT id, name, org_id, created_us FROM projects WHERE id = ?", (project_id,)
        )
        return None if row is None else _project(row)

    def set_member(self, membership: Membership) -> None:
        """Add a member or change their role."""
        self.execute(
            "INSERT INTO project_members (project_id, user_id, role, added_us) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (project_id, user_id) DO UPDATE SET role = "
            "excluded.role",
            (membership.project_id, membership.user_id, membership.role, _us(datetime.now(UTC))),
        )

    def member_role(self, project_id: str, user_id: str) -> Role | None:
        """The user's role in the project, if a member."""
        row = self._one(
            "SELECT role FROM project_members WHERE project_id = ? AND user_id = ?",
            (project_id, user_id),
        )
        return None if row is None else cast(Role, row[0])

    def user_projects(self, user_id: str) -> list[tuple[Project, Role]]:
        """The user's projects with roles, by project id."""
        rows = self.fetch(
            "SELECT p.id, p.name, p.org_id, p.created_us, m.role FROM projects p "
            "JOIN project_members m ON m.project_id = p.id WHERE m.user_id = ? ORDER BY p.id",
            (user_id,),
        )
        return [(_project(r), cast(Role, r[4])) for r in rows]

    # -- API keys ---------------------------------------------------------------------------

    def add_key(self, key: ApiKey) -> None:
        """Insert a key record (its hash only)."""
        self.execute(
            "INSERT INTO api_keys (id, user_id, key_hash, label, created_us) "
            "VALUES (?, ?, ?, ?, ?)",
            (key.id, key.user_id, key.key_hash, key.label, _us(key.created_at)),
        )

    def key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key record with this hash."""
        row = self._one(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = ?", (key_hash,))
        return None if row is None else _key(row)

    def revoke_key(self, key_id: str, at: datetime) -> bool:
        """Mark an active key revoked; whether there was one."""
        changed = self.execute(
            "UPDATE api_keys SET revoked_us = ? WHERE id = ? AND revoked_us IS NULL",
            (_us(at), key_id),
        )
        return changed > 0

    def list_keys(self, user_id: str) -> list[ApiKey]:
        """The user's key records, oldest first."""
        rows = self.fetch(
            f"SELECT {KEY_COLUMNS} FROM api_keys WHERE user_id = ? ORDER BY created_us",
            (user_id,),
        )
        return [_key(r) for r in rows]

    # -- orgs -------------------------------------------------------------------------------

    def set_org_member(self, org_id: str, user_id: str, role: OrgRole) -> None:
        """Add an org member or change their org role."""
        self.execute(
            "INSERT INTO org_members (org_id, user_id, added_us, role) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (org_id, user_id) DO UPDATE SET role = excluded.role",
            (org_id, user_id, _us(datetime.now(UTC)), role),
        )

    def user_orgs(self, user_id: str) -> list[tuple[str, OrgRole]]:
        """The user's orgs with roles, by org id."""
        rows = self.fetch(
            "SELECT org_id, role FROM org_members WHERE user_id = ? ORDER BY org_id", (user_id,)
        )
        return [(str(r[0]), cast(OrgRole, r[1])) for r in rows]

    # -- threads ----------------------------------------------------------------------------

    def save_thread(self, thread: Thread) -> None:
        """Insert or replace a thread."""
        self.execute(
            _SAVE_THREAD,
            (
                thread.id,
                thread.user_id,
                thread.project_id,
                thread.title,
                # A bool binds as 0/1 in SQLite and as a boolean in PostgreSQL.
                thread.memory_enabled,
                _us(thread.created_at),
                _us(thread.updated_at),
            ),
        )

    def get_thread(self, thread_id: str) -> Thread | None:
        """One thread."""
        row = self._one(f"SELECT {THREAD_COLUMNS} FROM threads WHERE id = ?", (thread_id,))
        return None if row is None else _thread(row)

    def list_threads(self, user_id: str) -> list[Thread]:
        """The user's threads, newest first."""
        rows = self.fetch(
            f"SELECT {THREAD_COLUMNS} FROM threads WHERE user_id = ? "
            "ORDER BY created_us DESC, id DESC",
            (user_id,),
        )
        return [_thread(r) for r in rows]

    # -- provider settings ------------------------------------------------------------------

    def save_provider(self, settings: ProviderSettings) -> None:
        """Insert or replace a provider setting (the key already encrypted)."""
        self.execute(
            _SAVE_PROVIDER,
            (
                settings.user_id,
                settings.kind,
                settings.base_url,
                settings.model,
                settings.key_ciphertext,
                settings.key_hint,
                settings.enabled,
                _us(settings.updated_at),
            ),
        )

    def get_provider(self, user_id: str, kind: ProviderKind) -> ProviderSettings | None:
        """One provider setting."""
        row = self._one(
            f"SELECT {PROVIDER_COLUMNS} FROM provider_settings WHERE user_id = ? AND kind = ?",
            (user_id, kind),
        )
        return None if row is None else _provider(row)

    def list_providers(self, user_id: str) -> list[ProviderSettings]:
        """The user's provider settings, by kind."""
        rows = self.fetch(
            f"SELECT {PROVIDER_COLUMNS} FROM provider_settings WHERE user_id = ? ORDER BY kind",
            (user_id,),
        )
        return [_provider(r) for r in rows]

    def delete_provider(self, user_id: str, kind: ProviderKind) -> bool:
        """Delete one provider setting; whether there was one."""
        changed = self.execute(
            "DELETE FROM provider_settings WHERE user_id = ? AND kind = ?", (user_id, kind)
        )
        return changed > 0

    # -- memories ---------------------------------------------------------------------------

    def memory_project(self, memory_id: str) -> tuple[bool, str | None]:
        """Whether a memory exists, and its project (for routes addressed by id only)."""
        row = self._one("SELECT project_id FROM memories WHERE id = ?", (memory_id,))
        return (False, None) if row is None else (True, row[0])


def sql_accounts(store: Store) -> SqlAccountStore:
    """The account tables in the SQL database of ``store``; a
    :class:`~memorybank.errors.ConfigurationError` for a store that has none."""
    return SqlAccountStore(require_sql(store, "accounts"))


__all__ = [
    "KEY_COLUMNS",
    "PROVIDER_COLUMNS",
    "THREAD_COLUMNS",
    "SqlAccountStore",
    "sql_accounts",
]

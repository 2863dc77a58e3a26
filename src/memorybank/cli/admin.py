"""``memorybank admin …``: users, orgs, projects, roles and API keys of the server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from memorybank.cli._common import DbOption, JsonOption, answer, handles_errors, open_bank
from memorybank.cli._help import App

if TYPE_CHECKING:
    from memorybank.services.accounts import Accounts

admin_app = App(
    help="Users, projects, roles and API keys of the server (shown once, stored hashed).",
    no_args_is_help=True,
)


@contextmanager
def _accounts(db: str | None) -> Iterator[Accounts]:
    """The accounts of the bank at ``db`` (or the configured one), open for the block."""
    from memorybank.services.accounts import Accounts
    from memorybank.settings import Settings

    with open_bank(db, create=True) as bank:
        yield Accounts.open(bank, Settings(url=db) if db is not None else Settings())


class OrgRoleChoice(StrEnum):
    """Roles in an org."""

    ADMIN = "admin"
    MEMBER = "member"


class RoleChoice(StrEnum):
    """Roles in a project."""

    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"


@admin_app.command("create-user")
@handles_errors
def admin_create_user(
    user: Annotated[str, typer.Argument(help="The new user's id.")],
    name: Annotated[str | None, typer.Option("--name", help="Display name.")] = None,
    org: Annotated[str | None, typer.Option("--org", help="Put the user in this org.")] = None,
    org_role: Annotated[
        OrgRoleChoice, typer.Option("--org-role", help="The user's role in --org.")
    ] = OrgRoleChoice.MEMBER,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add a user (then `create-key` gives them an API key)."""
    with _accounts(db) as accounts:
        created = accounts.create_user(user, name=name)
        if org is not None:
            accounts.add_org_member(org, user, org_role.value)
    answer(
        as_json,
        {"user_id": created.id, "name": created.name, "org": org},
        f"Created user {created.id}" + (f" in org {org} ({org_role.value})" if org else ""),
    )


@admin_app.command("create-project")
@handles_errors
def admin_create_project(
    project: Annotated[str, typer.Argument(help="The new project's id.")],
    owner: Annotated[str, typer.Option("--owner", help="The user who owns it.")],
    name: Annotated[str | None, typer.Option("--name", help="Display name.")] = None,
    org: Annotated[str | None, typer.Option("--org", help="The org it belongs to.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add a project (a shared memory scope) with its owner."""
    with _accounts(db) as accounts:
        created = accounts.create_project(project, owner=owner, name=name, org_id=org)
    answer(
        as_json,
        {"project_id": created.id, "name": created.name, "owner": owner},
        f"Created project {created.id} owned by {owner}",
    )


@admin_app.command("add-member")
@handles_errors
def admin_add_member(
    project: Annotated[str, typer.Argument(help="The project id.")],
    user: Annotated[str, typer.Argument(help="The user id.")],
    role: Annotated[RoleChoice, typer.Option("--role", help="owner, admin or member.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Give a user a role in a project (again: changes the role)."""
    with _accounts(db) as accounts:
        accounts.add_member(project, user, role.value)
    answer(
        as_json,
        {"project_id": project, "user_id": user, "role": role.value},
        f"{user} is now {role.value} of {project}",
    )


@admin_app.command("create-key")
@handles_errors
def admin_create_key(
    user: Annotated[str, typer.Argument(help="The user the key belongs to.")],
    label: Annotated[str | None, typer.Option("--label", help="What the key is for.")] = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create an API key. It is printed once and only its hash is stored."""
    with _accounts(db) as accounts:
        key, raw = accounts.create_key(user, label=label)
    answer(
        as_json,
        {"key_id": key.id, "user_id": user, "key": raw},
        f"API key {key.id} for {user} (shown once, store it now):",
        raw,
    )


@admin_app.command("revoke-key")
@handles_errors
def admin_revoke_key(
    key_id: Annotated[str, typer.Argument(help="The key id (key_…), not the key.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Revoke an API key for good."""
    with _accounts(db) as accounts:
        accounts.revoke_key(key_id)
    answer(as_json, {"key_id": key_id, "revoked": True}, f"Revoked {key_id}")

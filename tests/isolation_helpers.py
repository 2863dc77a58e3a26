"""The world of the isolation suite (``test_isolation.py``): users of two orgs with projects,
roles and an outsider, the statuses the server owes each of them, and the ledger of facts.

Every saved fact holds one token (``zq<n>k``), so a leak is a token in the wrong place and a
resurrection is a deleted token anywhere. Ids (ULIDs, upper case) and keys never match it.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memorybank import MemoryBank
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.services.accounts import Accounts
from memorybank.settings import Settings
from memorybank.stores.sqlite import SQLiteStore

TOPICS = ("hiking trips", "green tea", "the Rust compiler", "jazz records", "sailing boats")
TOKEN = re.compile(r"\bzq\d+k\b")


@dataclass
class Fact:
    """Where one token's memory lives and what it says now."""

    owner: str  # who saved it (the private scope's user for private facts)
    project: str | None
    memory_id: str
    content: str


class Ledger:
    """The ground truth of a state machine: live facts by token, and deleted tokens."""

    def __init__(self) -> None:
        self._counter = itertools.count()
        self.live: dict[str, Fact] = {}
        self.deleted: set[str] = set()
        self.ever: dict[str, Fact] = {}  # every fact once saved, deleted ones included

    def fact(self, topic: str, verb: str = "likes") -> tuple[str, str]:
        """A new token and a third-person fact about ``topic`` holding it."""
        n = next(self._counter)
        token = f"zq{n}k"
        # Two values apart from any other fact (the token and a year): two facts of one topic
        # are never read as one fact changed, which a save would supersede (issue 26).
        return token, f"User {verb} {topic} a lot since {1000 + n}, remembered as {token}"

    def add(self, owner: str, project: str | None, memory_id: str, content: str) -> str:
        """Record a saved fact; its token (exactly one in ``content``)."""
        tokens = TOKEN.findall(content)
        assert len(tokens) == 1, content
        fact = Fact(owner, project, memory_id, content)
        self.live[tokens[0]] = self.ever[tokens[0]] = fact
        return str(tokens[0])

    def drop(self, token: str) -> None:
        """The fact of ``token`` was deleted."""
        self.live.pop(token, None)
        self.deleted.add(token)

    def token_of(self, memory_id: str) -> str | None:
        """The live token whose memory has this id."""
        return next((t for t, f in self.live.items() if f.memory_id == memory_id), None)

    def where(self, keep: Callable[[Fact], bool]) -> set[str]:
        """Live tokens whose fact passes ``keep``."""
        return {token for token, fact in self.live.items() if keep(fact)}

    def check(self, text: str, allowed: Iterable[str], where: str) -> set[str]:
        """Fail if ``text`` shows a token outside ``allowed`` or a deleted one; the tokens."""
        tokens = set(TOKEN.findall(text))
        leaked = tokens - set(allowed)
        assert not tokens & self.deleted, f"{where} shows deleted {sorted(tokens & self.deleted)}"
        assert not leaked, f"{where} shows {sorted(leaked)}"
        return tokens


MASTER = "test-master-key-not-a-secret"
ORGS = {"acme": {"ann": "admin", "bob": "member", "cy": "member"}, "globex": {"dee": "admin"}}
ORGS["globex"]["eve"] = "member"
PROJECTS = {  # apollo in acme, zeus in globex; cy belongs to both, frank to nothing
    "apollo": {"ann": "owner", "bob": "admin", "cy": "member"},
    "zeus": {"dee": "owner", "cy": "admin", "eve": "member"},
}
USERS = ("ann", "bob", "cy", "dee", "eve", "frank")
WHERE = (None, "apollo", "zeus")


@dataclass
class Template:
    """A database holding the accounts, copied for each example, and the users' API keys."""

    path: Path
    keys: dict[str, str]


def server_settings(path: Path) -> Settings:
    """The server of the world: auth mode, a write rate no example reaches."""
    return Settings(  # type: ignore[call-arg]
        url=f"sqlite:///{path}", master_key=MASTER, ai_write_rate_per_minute=1_000_000
    )


def make_template(folder: Path, embedder: LocalEmbedder) -> Template:
    path = folder / "template.db"
    keys: dict[str, str] = {}
    with MemoryBank(SQLiteStore(path, dimension=embedder.dimension), embedder) as bank:
        accounts = Accounts.open(bank, server_settings(path))
        for user in USERS:
            accounts.create_user(user, name=user.title())
            keys[user] = accounts.create_key(user)[1]
        for org, members in ORGS.items():
            for user, org_role in members.items():
                accounts.add_org_member(org, user, org_role)
        for project, roles in PROJECTS.items():
            owner = next(u for u, r in roles.items() if r == "owner")
            org = next(o for o, members in ORGS.items() if owner in members)
            accounts.create_project(project, owner=owner, org_id=org)
            for user, role in roles.items():
                if role != "owner":
                    accounts.add_member(project, user, role)
    return Template(path, keys)


def role(user: str, project: str | None) -> str | None:
    return "owner" if project is None else PROJECTS[project].get(user)


def org_admin_of(user: str) -> str | None:
    return next((org for org, members in ORGS.items() if members.get(user) == "admin"), None)


def manage_status(user: str, project: str | None, ok: int = 200) -> int:
    """The status of a manual add / edit / delete / clear: non-members 404, members 403."""
    found = role(user, project)
    return 404 if found is None else 403 if found == "member" else ok


def view_status(user: str, project: str | None, ok: int = 200) -> int:
    return 404 if role(user, project) is None else ok


def sse_result(text: str) -> dict[str, Any]:
    """The JSON-RPC ``result`` of a streamable-HTTP answer (one SSE ``message`` event)."""
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    assert len(data) == 1, text[:300]
    message = json.loads(data[0])
    assert "result" in message, message
    result: dict[str, Any] = message["result"]
    return result


@dataclass
class Plan:
    """A forget plan as previewed."""

    plan_id: str
    user: str
    project: str | None
    memory_ids: list[str]
    done: bool = False


#: The callers the library is called as: a user naming their private scope or a project they
#: belong to (the host checks membership, as the server does; the library trusts its caller).
LIBRARY_CALLERS = [(u, p) for u in USERS for p in WHERE if role(u, p) is not None]


def reaches(user: str, project: str | None, fact: Fact) -> bool:
    """Whether a library call as ``user`` naming ``project`` reaches ``fact``."""
    if fact.project is None:
        return fact.owner == user
    return fact.project == project

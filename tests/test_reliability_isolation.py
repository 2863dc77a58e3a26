"""Isolation as a property: random operations by several users in several projects, through the
library and the tool dispatcher, never show a memory to anyone outside its scope, and deleted
text never comes back (search, recent, export, history, the system-prompt block, recall).

Every saved fact carries a unique token (``zq<n>k``, see ``isolation_helpers``), so a leak is a
token in the wrong place. Callers only name projects they belong to (membership is the host's
job, as in the server; ``test_reliability_isolation_rest.py`` drives the server itself).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
    run_state_machine_as_test,
)

from isolation_helpers import TOPICS, Ledger
from memorybank import MemoryBank, NotFound
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.services import transfer
from memorybank.services.forget import forget_confirm, forget_preview
from memorybank.stores.sqlite import SQLiteStore
from memorybank.tools import Caller, profile, system_prompt
from memorybank.tools import call as tool_call

USERS = ("ann", "bob", "cy")
PROJECTS = {"apollo": {"ann", "bob"}, "zeus": {"bob", "cy"}}
EMBEDDER: list[LocalEmbedder] = []


def member_projects(user: str) -> list[str | None]:
    return [None, *sorted(p for p, members in PROJECTS.items() if user in members)]


caller = st.sampled_from([(u, p) for u in USERS for p in member_projects(u)])


class Isolation(RuleBasedStateMachine):
    memories = Bundle("memories")

    def __init__(self) -> None:
        super().__init__()
        embedder = EMBEDDER[0]
        # A file, not ":memory:": apsw's SQLite omits shared cache, so every thread of an
        # in-memory store would get its own empty database (see docs/reliability.md).
        self.tmp = tempfile.TemporaryDirectory()
        path = Path(self.tmp.name) / "iso.db"
        self.bank = MemoryBank(SQLiteStore(path, dimension=embedder.dimension), embedder)
        self.ledger = Ledger()
        self.default = profile("default")

    def teardown(self) -> None:
        self.store_close()

    def store_close(self) -> None:
        self.bank.store.close()  # type: ignore[attr-defined]
        self.tmp.cleanup()

    # -- what a caller may see --------------------------------------------------------------

    def visible(self, user: str, project: str | None) -> set[str]:
        return self.ledger.where(
            lambda f: (
                (f.project is None and f.owner == user)
                or (f.project is not None and f.project == project)
            )
        )

    def check_text(self, user: str, project: str | None, text: str, where: str) -> None:
        self.ledger.check(text, self.visible(user, project), f"{where} for {user}/{project}")

    def note(self, user: str, project: str | None, memory_id: str, content: str) -> None:
        memory = self.bank.get(memory_id, user, project_id=project)
        assert memory.user_id == user and memory.project_id in (None, project)
        self.ledger.add(user, memory.project_id, memory_id, content)

    # -- operations -------------------------------------------------------------------------

    @rule(target=memories, who=caller, topic=st.sampled_from(TOPICS))
    def save(self, who: tuple[str, str | None], topic: str) -> Any:
        user, project = who
        token, text = self.ledger.fact(topic)
        result = self.bank.save(user, text, "preference", project_id=project)
        if not result.success:
            return None
        self.note(user, project, result.memory_id or "", result.content)
        return token

    @rule(target=memories, who=caller, topic=st.sampled_from(TOPICS))
    def remember_tool(self, who: tuple[str, str | None], topic: str) -> Any:
        user, project = who
        token, text = self.ledger.fact(topic)
        ctx = Caller(user_id=user, project_id=project)
        result = tool_call(self.bank, self.default, "remember", {"fact": text}, ctx)
        if not result.get("success"):
            return None
        self.note(user, project, result["id"], result["fact"])
        return token

    @rule(who=caller, topic=st.sampled_from(TOPICS), scopes=st.sampled_from(["all", "user"]))
    def search(self, who: tuple[str, str | None], topic: str, scopes: Any) -> None:
        user, project = who
        hits = self.bank.search(user, topic, project_id=project, scopes=scopes, limit=50)
        for hit in hits:
            self.check_text(user, project, hit.memory.content, "search")
            if hit.memory.project_id is None:
                assert hit.memory.user_id == user

    @rule(who=caller)
    def recent_and_export(self, who: tuple[str, str | None]) -> None:
        user, project = who
        for memory in self.bank.recent(user, project_id=project, limit=500):
            self.check_text(user, project, memory.content, "recent")
        self.check_text(
            user, project, transfer.export(self.bank, user, project_id=project), "export"
        )
        self.check_text(user, project, transfer.export(self.bank, user, "markdown"), "export md")
        ctx = Caller(user_id=user, project_id=project)
        prompt = system_prompt(self.bank, ctx, "default", 2000)
        self.check_text(user, project, prompt, "system prompt")

    @rule(who=caller, topic=st.sampled_from(TOPICS))
    def recall_tool(self, who: tuple[str, str | None], topic: str) -> None:
        user, project = who
        ctx = Caller(user_id=user, project_id=project)
        result = tool_call(self.bank, self.default, "recall", {"query": topic}, ctx)
        assert result["success"], result
        self.check_text(user, project, str(result), "recall")

    @rule(token=memories, who=caller, topic=st.sampled_from(TOPICS))
    def update(self, token: str | None, who: tuple[str, str | None], topic: str) -> None:
        if token is None or token not in self.ledger.live:
            return
        fact = self.ledger.live[token]
        owner, proj, memory_id = fact.owner, fact.project, fact.memory_id
        user, project = who
        allowed = (proj is None and user == owner) or (proj is not None and proj == project)
        new = f"User now likes {topic} even more, remembered as {token}"
        if not allowed:
            with pytest.raises(NotFound):
                self.bank.update(memory_id, user, project_id=project, content=new)
            return
        fact.content = self.bank.update(memory_id, user, project_id=project, content=new).content
        events = self.bank.history(memory_id, user, project_id=project)
        self.check_text(user, project, str([e.model_dump() for e in events]), "history")

    @rule(token=consumes(memories), who=caller, via_tool=st.booleans())
    def delete(self, token: str | None, who: tuple[str, str | None], via_tool: bool) -> None:
        if token is None or token not in self.ledger.live:
            return
        fact = self.ledger.live[token]
        owner, proj, memory_id = fact.owner, fact.project, fact.memory_id
        user, project = who
        allowed = (proj is None and user == owner) or (proj is not None and proj == project)
        if via_tool:
            ctx = Caller(user_id=user, project_id=project)
            result = tool_call(self.bank, self.default, "forget", {"id": memory_id}, ctx)
            assert bool(result.get("success")) == allowed, result
        elif allowed:
            self.bank.delete(memory_id, user, project_id=project)
        else:
            with pytest.raises(NotFound):
                self.bank.delete(memory_id, user, project_id=project)
        if allowed:
            self.ledger.drop(token)
            events = self.bank.history(memory_id, owner if proj is None else user, project_id=proj)
            self.check_text(user, project, str([e.model_dump() for e in events]), "history")

    @rule(who=caller, topic=st.sampled_from(TOPICS))
    def forget_by_query(self, who: tuple[str, str | None], topic: str) -> None:
        user, project = who
        ctx = Caller(user_id=user, project_id=project)
        preview = forget_preview(self.bank, ctx, topic)
        for item in preview.items:
            self.check_text(user, project, item.memory.content, "forget preview")
        result = forget_confirm(self.bank, ctx, preview.plan.id)
        gone = set(result.forgotten)
        for token, fact in list(self.ledger.live.items()):
            if fact.memory_id in gone:
                self.ledger.drop(token)

    @invariant()
    def deleted_text_is_gone(self) -> None:
        if not self.ledger.deleted:
            return
        for user in USERS:
            for project in member_projects(user):
                for memory in self.bank.list(user, project_id=project, limit=10_000):
                    self.check_text(user, project, memory.content, "list")


@pytest.mark.slow
def test_isolation_state_machine(embedder: LocalEmbedder) -> None:
    EMBEDDER[:] = [embedder]
    run_state_machine_as_test(
        Isolation,
        settings=settings(
            max_examples=80,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )

"""What the isolation state machines share: facts that carry a unique token, and the ledger of
where each live fact is and which were deleted.

Every saved fact holds one token (``zq<n>k``), so a leak is a token in the wrong place and a
resurrection is a deleted token anywhere. Ids (ULIDs, upper case) and keys never match it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

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
        token = f"zq{next(self._counter)}k"
        return token, f"User {verb} {topic} a lot, remembered as {token}"

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

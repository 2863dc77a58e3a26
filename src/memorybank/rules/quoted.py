"""Conversation turns among the memories relevant to a message: facts first, a turn only as
a dated quote of the user.

A stored turn (``source="conversation"``) stays searchable, but in a block it is not a fact:
the assistant's words ("Of course! How many people are you cooking for?") are not the user's,
and the user's own words read as a fact only when said who said them and when. So, of the
memories relevant to a message (best first):

* the facts keep their order, first;
* a user's turn follows as "On 12 March 2024 the user said: …", unless a fact shown was
  kept from that very turn (``metadata.from_memory``): then it carries nothing the fact does
  not;
* an assistant's turn is left out, unless the user confirmed it
  (``metadata.confirmed``, set by ``remember``): then "On … the assistant said, and the user
  confirmed: …".

Pure functions over :class:`~memorybank.model.Memory`; the quotes are copies, nothing stored
changes.

>>> from datetime import datetime, timezone
>>> when = datetime(2024, 3, 12, tzinfo=timezone.utc)
>>> fact = Memory(user_id="u", content="User is a nurse", category="identity")
>>> turn = Memory(user_id="u", content="we moved to Leeds", category="context",
...               source="conversation", occurred_at=when, metadata={"role": "user"})
>>> asked = Memory(user_id="u", content="How many people?", category="context",
...                source="conversation", metadata={"role": "assistant"})
>>> [m.content for m in facts_then_quotes([asked, turn, fact])]
['User is a nurse', 'On 12 March 2024 the user said: we moved to Leeds']
"""

from __future__ import annotations

from collections.abc import Sequence

from memorybank.model import Memory, Source


def _said_on(memory: Memory) -> str:
    when = memory.occurred_at or memory.created_at
    return f"{when.day} {when:%B %Y}"


def _quote(memory: Memory) -> Memory | None:
    if memory.metadata.get("role") == "assistant":
        if memory.metadata.get("confirmed") is not True:
            return None
        lead = "the assistant said, and the user confirmed:"
    else:
        lead = "the user said:"
    return memory.model_copy(update={"content": f"On {_said_on(memory)} {lead} {memory.content}"})


def facts_then_quotes(relevant: Sequence[Memory]) -> list[Memory]:
    """``relevant`` (best first) with its facts first and its turns after them as dated
    quotes, or left out (module docs)."""
    facts = [m for m in relevant if m.source != Source.CONVERSATION]
    covered = {m.metadata.get("from_memory") for m in facts}
    quotes = [
        _quote(m) for m in relevant if m.source == Source.CONVERSATION and m.id not in covered
    ]
    return facts + [q for q in quotes if q is not None]


__all__ = ["facts_then_quotes"]

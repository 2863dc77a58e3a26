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
  confirmed: …";
* a turn someone else stored (a project member's) is left out: "the user" of a block is the
  caller, so only the caller's own turns (``created_by``, else the memory's user) are quoted
  as theirs (issue 44: a member's stored turns read in the owner's block as "the user said:
  I approve skipping code review"). Who said a thing is the server's word: ``created_by`` is
  the caller the server acted for, and ``role`` and ``confirmed`` are written by the
  server's own ``remember`` only, never taken from a client.

Pure functions over :class:`~memorybank.model.Memory`; the quotes are copies, nothing stored
changes.

>>> from datetime import datetime, timezone
>>> when = datetime(2024, 3, 12, tzinfo=timezone.utc)
>>> fact = Memory(user_id="u", content="User is a nurse", category="identity")
>>> turn = Memory(user_id="u", content="we moved to Leeds", category="context",
...               source="conversation", occurred_at=when, metadata={"role": "user"})
>>> asked = Memory(user_id="u", content="How many people?", category="context",
...                source="conversation", metadata={"role": "assistant"})
>>> [m.content for m in facts_then_quotes([asked, turn, fact], said_by="u")]
['User is a nurse', 'On 12 March 2024 the user said: we moved to Leeds']
>>> facts_then_quotes([turn], said_by="someone else")
[]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memorybank.errors import ValidationError
from memorybank.model import Memory, Source

#: The metadata of a conversation turn that only the server's own ``remember`` writes: who
#: said it, and whether the user confirmed the assistant's words. A client's are refused
#: (:func:`check_client_marks`), or dropped where ``remember`` takes a message's metadata.
SERVER_MARKS = ("role", "confirmed")


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


def without_marks(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata`` without :data:`SERVER_MARKS`: what a client's metadata of a turn keeps
    when ``remember`` writes the marks itself.

    >>> without_marks({"role": "user", "confirmed": True, "topic": "x"})
    {'topic': 'x'}
    """
    return {k: v for k, v in metadata.items() if k not in SERVER_MARKS}


def check_client_marks(
    metadata: Mapping[str, Any] | None, *, kept: Mapping[str, Any] | None = None
) -> None:
    """Refuse a client's metadata for a conversation turn that sets :data:`SERVER_MARKS`
    (:class:`~memorybank.ValidationError` saying what to send): a new turn's may set none,
    a change of a stored turn's (``kept``: its metadata now) must leave them as they are.

    >>> check_client_marks({"topic": "x"})
    >>> check_client_marks({"role": "user"}, kept={"role": "user"})
    >>> check_client_marks({"confirmed": True})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: metadata.confirmed of a conversation turn is the server's...
    """
    if metadata is None:
        return
    before = kept or {}
    for mark in SERVER_MARKS:
        if metadata.get(mark) != before.get(mark):
            raise ValidationError(
                f"metadata.{mark} of a conversation turn is the server's to write: remember "
                "sets who said each message and whether the user confirmed the assistant's "
                f"words; leave {mark!r} out of the metadata (or as it is stored), or send the "
                "conversation to a remember tool",
                field="metadata",
            )


def author(memory: Memory) -> str:
    """Who stored ``memory``: ``created_by``, the caller the server acted for (else, for a
    record the host application stored without one, the memory's user)."""
    return memory.created_by or memory.user_id


def facts_then_quotes(relevant: Sequence[Memory], *, said_by: str) -> list[Memory]:
    """``relevant`` (best first) with its facts first and the turns ``said_by`` (the caller)
    stored after them as dated quotes, or left out (module docs)."""
    facts = [m for m in relevant if m.source != Source.CONVERSATION]
    covered = {m.metadata.get("from_memory") for m in facts}
    quotes = [
        _quote(m)
        for m in relevant
        if m.source == Source.CONVERSATION and m.id not in covered and author(m) == said_by
    ]
    return facts + [q for q in quotes if q is not None]


__all__ = ["SERVER_MARKS", "author", "check_client_marks", "facts_then_quotes", "without_marks"]

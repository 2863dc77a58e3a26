"""The events of memory a caller may see (:func:`read_events`): every change to a
memory, recorded by the store in the same transaction as the change (see
:class:`~memorybank.model.Event`), read in order after the last one seen.

A caller sees the events of their private scope and of the projects they name, which the
adapter has checked they belong to (the REST API: every project the principal is a member
of). Events never carry the text of a deleted memory.

>>> mid = bank.save("u1", "User drinks green tea", "preference").memory_id
>>> [(e.type, e.channel, e.content) for e in read_events(bank.store, "u1")]
[('created', <Channel.AI: 'ai'>, 'User drinks green tea')]
>>> bank.delete(mid, "u1")
>>> [(e.type, e.content) for e in read_events(bank.store, "u1")]
[('deleted', None)]
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from memorybank.errors import ValidationError
from memorybank.model import Event, EventType, Scope
from memorybank.stores.base import Store

#: The most events one read returns.
MAX_EVENTS = 1000
#: The largest event id a caller may name (both databases hold 64-bit integers).
MAX_EVENT_ID = 2**62


def scope_keys_of(user_id: str, project_ids: Sequence[str], include_private: bool) -> list[str]:
    """The store's scope keys of a user's private scope and of some projects."""
    keys = [Scope(user_id=user_id).key] if include_private else []
    return keys + [Scope(user_id=user_id, project_id=p).key for p in project_ids]


def read_events(
    store: Store,
    user_id: str,
    *,
    project_ids: Sequence[str] = (),
    include_private: bool = True,
    after: int = 0,
    limit: int = 100,
    types: Collection[EventType] | None = None,
) -> list[Event]:
    """Events numbered above ``after`` of the caller's private scope (unless
    ``include_private`` is false) and of ``project_ids``, oldest first, at most ``limit``;
    only those of ``types`` when given."""
    if not isinstance(user_id, str) or not user_id.strip():
        raise ValidationError("user_id is required", field="user_id")
    if not 1 <= limit <= MAX_EVENTS:
        raise ValidationError(f"limit {limit} must be between 1 and {MAX_EVENTS}", field="limit")
    if not 0 <= after <= MAX_EVENT_ID:
        raise ValidationError("after must be 0 or an event id", field="after")
    keys = scope_keys_of(user_id, project_ids, include_private)
    found = store.events(keys, after, limit)
    return found if types is None else [e for e in found if e.type in types]


__all__ = ["MAX_EVENTS", "MAX_EVENT_ID", "read_events", "scope_keys_of"]

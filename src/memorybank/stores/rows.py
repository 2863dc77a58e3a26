"""Rows read back into records, whatever the database holds.

Everything a store writes was validated on its way in, but a database can still hold a row no
check passed: one written by an older version (a time out of range, metadata nested hundreds
deep), or by hand. Such a row must cost at most itself, never its scope or another tenant's:
every read decodes it with its bad fields repaired (a time brought into range, unreadable
metadata or tags dropped, an unknown category made ``context`` …), and logs a warning once per
row and field, so the row stays visible and its owner can fix or delete it.

The common row takes the fast path (:func:`~memorybank.model.stored.memory_from_row`, which
trusts the row) plus a few type checks; only a row that fails them is looked at field by field.

>>> from memorybank.model.times import MAX_US
>>> row = (1, "mem_1", "u1", None, "User likes tea", "nonsense", "semantic", None, "[]",
...        "{not json", 5, "ai", None, None, None, 0, 10**20, None, None, None, None, None)
>>> memory = memory_of(row, row[8], row[9])
>>> memory.category, memory.metadata, memory.updated_at.year
(<Category.CONTEXT: 'context'>, {}, 9999)
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError as PydanticValidationError

from memorybank.model import (
    EVENT_TYPES,
    Category,
    Channel,
    Decision,
    Domain,
    Event,
    EventKind,
    HistoryEvent,
    Memory,
    Ring,
    Source,
)
from memorybank.model.stored import memory_from_row, speaker_of
from memorybank.model.times import MAX_US, MIN_US, clamped_us, from_us
from memorybank.rules.inputs import METADATA_MAX_DEPTH, deeper_than

log = logging.getLogger("memorybank.stores")

# (row id, field) pairs already logged: a bad row is read on every listing of its scope.
_LOGGED: set[tuple[str, str]] = set()
_LOGGED_MAX = 10_000
_DECODE_ERRORS = (KeyError, TypeError, ValueError, OverflowError, OSError, RecursionError)
_TOMBSTONES = (EventKind.DELETE, EventKind.CLEAR, EventKind.FORGET)


def repaired(what: str, row_id: object, field: str, how: str) -> None:
    """Log (once per row and field) that a stored row's ``field`` could not be read as it is
    and was read as ``how``."""
    key = (f"{what} {row_id!r}", field)
    if key in _LOGGED:
        return
    if len(_LOGGED) >= _LOGGED_MAX:
        _LOGGED.clear()
    _LOGGED.add(key)
    log.warning("stored %s %r: %s cannot be read as stored; read as %s", what, row_id, field, how)


# -- JSON columns -------------------------------------------------------------------------------


def tolerant_json(data: bytes | bytearray | memoryview | str) -> Any:
    """PostgreSQL's jsonb as Python values, or ``None`` for a value Python cannot decode (a
    document nested past Python's recursion limit): the memory's decoder then repairs the
    field, where a raising loader failed the whole query."""
    try:
        return json.loads(bytes(data) if isinstance(data, memoryview) else data)
    except (ValueError, RecursionError):
        return None


def tags_of(raw: Any, memory_id: object) -> tuple[str, ...]:
    """A row's tags column (JSON text in SQLite, decoded jsonb in PostgreSQL) as a tuple of
    strings; anything else is read as no tags."""
    if raw == "[]":
        return ()
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = None
    if isinstance(value, list) and all(isinstance(tag, str) for tag in value):
        return tuple(value)
    repaired("memory", memory_id, "tags", "no tags")
    return ()


def metadata_of(raw: Any, memory_id: object) -> dict[str, Any]:
    """A row's metadata column as a JSON object nested at most
    :data:`~memorybank.rules.inputs.METADATA_MAX_DEPTH` deep; anything else (not JSON, not
    an object, nested deeper than any save allows) is read as ``{}``."""
    if raw == "{}":
        return {}
    value = raw
    if isinstance(raw, str):
        # Nesting needs brackets: text with few of them is not walked (the common case).
        deep = raw.count("{") + raw.count("[") > METADATA_MAX_DEPTH
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = None
    else:
        deep = isinstance(raw, dict) and any(isinstance(v, dict | list) for v in raw.values())
    if isinstance(value, dict) and not (deep and deeper_than(value, METADATA_MAX_DEPTH)):
        return value
    repaired("memory", memory_id, "metadata", "{}")
    return {}


def speaker_in(metadata: Any) -> str | None:
    """:func:`~memorybank.model.stored.speaker_of` a row's decoded metadata, ``None`` for
    metadata that is not an object."""
    return speaker_of(metadata) if isinstance(metadata, Mapping) else None


# -- memories -----------------------------------------------------------------------------------


def memory_of(row: Sequence[Any], tags: Any, metadata: Any) -> Memory:
    """The memory of a row in the stores' column order, ``tags`` and ``metadata`` as the
    database gave them; never raises (see the module documentation)."""
    tag_tuple, meta = tags_of(tags, row[1]), metadata_of(metadata, row[1])
    try:
        memory = memory_from_row(row, tag_tuple, meta)
    except _DECODE_ERRORS:
        return _repaired_memory(row, tag_tuple, meta)
    # What the fast path takes on trust without raising: text, whole numbers, and times that
    # a record may carry (the few microseconds past 9999-12-31T23:59:59 Python still reads).
    occurred, reinforced = row[17], row[21]
    if (
        type(row[1]) is not str
        or type(row[2]) is not str
        or type(row[4]) is not str
        or type(row[10]) is not int
        or not 1 <= row[10] <= 10
        or not MIN_US <= row[15] <= MAX_US
        or not MIN_US <= row[16] <= MAX_US
        or not (occurred is None or MIN_US <= occurred <= MAX_US)
        or not (reinforced is None or MIN_US <= reinforced <= MAX_US)
    ):
        return _repaired_memory(row, tag_tuple, meta)
    return memory


def _repaired_memory(row: Sequence[Any], tags: tuple[str, ...], meta: dict[str, Any]) -> Memory:
    """The memory of a row the fast path refused, each field read on its own."""
    memory_id = _text(row[1]) or "mem_unreadable"

    def fix(field: str, how: str) -> None:
        repaired("memory", memory_id, field, how)

    created = _time(row[15], "created_at", memory_id) or from_us(0)
    updated = _time(row[16], "updated_at", memory_id) or created
    return Memory.from_trusted(
        id=memory_id,
        user_id=_text(row[2]) or "",
        project_id=_text(row[3]),
        content=_text(row[4]) or "",
        category=_member(Category, row[5], Category.CONTEXT, fix, "category"),
        ring=_member(Ring, row[6], Ring.SEMANTIC, fix, "ring"),
        domain=None if row[7] is None else _member(Domain, row[7], None, fix, "domain"),
        tags=tags,
        metadata=meta,
        importance=_importance(row[10], fix),
        source=_member(Source, row[11], Source.AI, fix, "source"),
        created_by=_text(row[12]),
        reasoning=_text(row[13]),
        session_id=_text(row[14]),
        created_at=created,
        updated_at=updated,
        occurred_at=_time(row[17], "occurred_at", memory_id),
        embedding_model=_text(row[18]),
        decision=_decision(row[19], fix),
        superseded_by=_text(row[20]),
        reinforced_at=_time(row[21], "reinforced_at", memory_id),
    )


def _text(value: Any) -> str | None:
    """A text column as a string (a blob or number stored by hand is read as text)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _time(value: Any, field: str, row_id: object, what: str = "memory") -> datetime | None:
    """A microseconds column as a time: out of range brought to the nearest readable time,
    not a number read as none."""
    if value is None:
        return None
    if type(value) is float and math.isfinite(value):  # SQLite keeps what it is given
        value = int(value)
    if type(value) is int:
        us = clamped_us(value)
        if us != value:
            repaired(what, row_id, field, "the nearest time in the years 1-9999")
        return from_us(us)
    repaired(what, row_id, field, "none")
    return None


def _member(kind: Any, value: Any, default: Any, fix: Any, field: str) -> Any:
    try:
        return kind(value)
    except (ValueError, TypeError):
        fix(field, repr(default))
        return default


def _importance(value: Any, fix: Any) -> int:
    if type(value) is int and 1 <= value <= 10:
        return value
    fix("importance", "5 (or the nearest of 1-10)")
    return min(max(value, 1), 10) if type(value) is int else 5


def _decision(value: Any, fix: Any) -> Decision | None:
    if value is None:
        return None
    try:
        return Decision.model_validate_json(value)
    except (PydanticValidationError, ValueError, TypeError):
        fix("decision", "none")
        return None


# -- events -------------------------------------------------------------------------------------


def event_of(row: Sequence[Any]) -> Event:
    """An :class:`Event` from a history row (seq, kind, memory, user, project, actor,
    channel, new text, time). Never skips a row: readers page by the events' numbers and
    count what they got, so a row of an unknown kind is read as ``updated`` without text (a
    client reads the memory again), and a time out of range as the nearest readable one."""
    seq = int(row[0])
    try:
        kind = EventKind(row[1])
    except ValueError:
        repaired("event", seq, "kind", "updated")
        kind, content = EventKind.UPDATE, None
    else:
        content = None if kind in _TOMBSTONES else _text(row[7])
    return Event(
        id=seq,
        type=EVENT_TYPES[kind],
        memory_id=_text(row[2]) or "",
        user_id=_text(row[3]) or "",
        project_id=_text(row[4]),
        actor=_text(row[5]),
        channel=_channel(row[6], "event", seq),
        content=content,
        at=_time(row[8], "at", seq, "event") or from_us(0),
    )


def history_event_of(row: Sequence[Any]) -> HistoryEvent | None:
    """A :class:`HistoryEvent` from a history row (id, memory, user, project, kind, old text,
    new text, actor, time, channel); ``None`` (logged) for one of a kind no version wrote."""
    try:
        kind = EventKind(row[4])
    except ValueError:
        repaired("history event", row[0], "kind", "nothing: the event is left out")
        return None
    return HistoryEvent.model_construct(
        id=_text(row[0]) or "",
        memory_id=_text(row[1]) or "",
        user_id=_text(row[2]) or "",
        project_id=_text(row[3]),
        kind=kind,
        old_content=_text(row[5]),
        new_content=_text(row[6]),
        actor=_text(row[7]),
        created_at=_time(row[8], "created_at", row[0], "history event") or from_us(0),
        channel=_channel(row[9], "history event", row[0]),
    )


def _channel(value: Any, what: str, row_id: object) -> Channel | None:
    if value is None:
        return None
    try:
        return Channel(value)
    except ValueError:
        repaired(what, row_id, "channel", "none")
        return None


__all__ = [
    "event_of",
    "history_event_of",
    "memory_of",
    "metadata_of",
    "repaired",
    "speaker_in",
    "tags_of",
    "tolerant_json",
]

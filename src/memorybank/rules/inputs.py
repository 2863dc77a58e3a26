"""Checks every input meets, whatever it is: text no store can keep and no tokenizer reads
(lone surrogates), text no search can take, metadata nested too deeply, and a memory's own
time later than now. Pure functions; refusals are :class:`~memorybank.errors.ValidationError`
saying what to fix, and never echo the offending text.

>>> check_query("green tea")
'green tea'
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from memorybank.errors import ValidationError

#: How deeply metadata may nest. Deeper is never a real use case, and JSON encoders recurse:
#: metadata nested ~250 deep was stored, then every read of its scope failed to serialise it.
METADATA_MAX_DEPTH = 64
#: How far in the future a memory's own times (``created_at``; an import's ``updated_at`` and
#: ``reinforced_at``) may be: the clocks of the host and the server may differ a little. A
#: later time would stay "new" to ranking until it came, and never decay before then.
CLOCK_SKEW = timedelta(minutes=5)


def unpaired_surrogate(value: object, where: str = "") -> str | None:
    """Where ``value`` (a string, or JSON made of dicts and lists) holds a lone surrogate,
    and which, as ``"title: unpaired surrogate U+D800 at position 3"``; ``None`` if nowhere.

    JSON may spell one (``"\\ud800"``), but it is no character: no store can keep it as UTF-8
    and no tokenizer reads it, so every input is checked for one before it goes further.

    >>> unpaired_surrogate({"messages": [{"content": "hi \\ud800"}]})
    'messages[0].content: unpaired surrogate U+D800 at position 3'
    >>> unpaired_surrogate("emoji \\U0001f600") is None
    True
    """
    stack: list[tuple[object, str]] = [(value, where)]
    seen: set[int] = set()  # each list and object once: a host's value may share or cycle
    while stack:
        item, path = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                code = ord(item[exc.start])
                return f"{path or 'text'}: unpaired surrogate U+{code:04X} at position {exc.start}"
        elif isinstance(item, Mapping):
            for key, inner in reversed(list(item.items())):
                # A name may hold the surrogate itself: shown escaped, never echoed as it is.
                name = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
                child = f"{path}.{name}" if path else name
                stack += [(inner, child), (key, f"{child} (the name)")]
        elif isinstance(item, list | tuple):
            stack += [(inner, f"{path}[{i}]") for i, inner in reversed(list(enumerate(item)))]
    return None


def check_query(text: str, field: str = "query") -> str:
    """``text`` if a search can take it: no lone surrogate (no tokenizer reads one) and no NUL
    (PostgreSQL cannot bind one); other control characters are harmless in a query, and a
    chat message searched for as it came may well hold some.

    >>> check_query("tea\\x00")
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: query contains a NUL character (U+0000) at position 3: remove it
    """  # noqa: E501
    found = unpaired_surrogate(text, field)
    if found is not None:
        raise ValidationError(f"{found}: remove it", field=field)
    if "\x00" in text:
        raise ValidationError(
            f"{field} contains a NUL character (U+0000) at position {text.index(chr(0))}: "
            "remove it",
            field=field,
        )
    return text


def deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests objects and lists more than ``limit`` levels (walked without
    recursion, and no further than ``limit`` + 1 levels).

    >>> deeper_than({"a": [{"b": 1}]}, 2), deeper_than({"a": [{"b": 1}]}, 3)
    (True, False)
    """
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, Mapping):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list | tuple):
            stack += [(v, depth + 1) for v in item]
    return False


def check_not_future(moment: datetime | None, now: datetime, field: str) -> None:
    """Refuse a memory's own time later than ``now`` + :data:`CLOCK_SKEW` (see there).

    >>> from datetime import UTC
    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> check_not_future(datetime(2026, 1, 2, tzinfo=UTC), now, "created_at")
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: created_at 2026-01-02T00:00:00+00:00 is in the future (now is 2026-01-01T00:00:00+00:00): a memory cannot have been learnt later than now; send the time it was learnt, with its UTC offset
    """  # noqa: E501
    if moment is None:
        return
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=now.tzinfo)
    if aware > now + CLOCK_SKEW:
        raise ValidationError(
            f"{field} {moment.isoformat()} is in the future (now is {now.isoformat()}): a "
            "memory cannot have been learnt later than now; send the time it was learnt, with "
            "its UTC offset",
            field=field,
        )


def check_label(value: str | None, field: str) -> None:
    """Refuse an id or name (one line of plain text: a memory id, a session, an author)
    holding a control character or a lone surrogate, which no store may keep as it is.

    >>> check_label("thread\\n1", "session_id")
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: session_id contains a control character U+000A at position 6: remove it
    """  # noqa: E501
    if value is None:
        return
    found = unpaired_surrogate(value, field)
    if found is not None:
        raise ValidationError(f"{found}: remove it", field=field)
    for position, char in enumerate(value):
        if char < " " or "\x7f" <= char <= "\x9f":
            raise ValidationError(
                f"{field} contains a control character U+{ord(char):04X} at position "
                f"{position}: remove it",
                field=field,
            )


__all__ = [
    "CLOCK_SKEW",
    "METADATA_MAX_DEPTH",
    "check_label",
    "check_not_future",
    "check_query",
    "deeper_than",
    "unpaired_surrogate",
]

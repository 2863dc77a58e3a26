"""The keyword filters of search, list and count, turned into a
:class:`~memorybank.model.MemoryFilter`.

>>> memory_filter(category="preference", since="7d").category
(<Category.PREFERENCE: 'preference'>,)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, TypedDict

from memorybank.errors import ValidationError
from memorybank.model import Category, Domain, MemoryFilter, Ring, Source, utcnow
from memorybank.rules.inputs import unpaired_surrogate

_SINCE = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "90d": timedelta(days=90),
}
_SINCE_UNITS = {"h": "hours", "d": "days", "w": "weeks"}
# What a metadata filter's name may not hold (see _metadata): quotes and backslashes end or
# escape SQLite's JSON path, control characters (NUL above all) cut it short.
_BAD_NAME = re.compile(r'["\\\x00-\x1f\x7f]')

#: The furthest back a ``since`` period may reach: 100 years (a longer one is a mistake, and
#: past ~2000 years the date itself would not exist).
SINCE_MAX = timedelta(days=36_525)
_SINCE_UNIT_MAX = {unit: SINCE_MAX // timedelta(**{name: 1}) for unit, name in _SINCE_UNITS.items()}
_SINCE_MOST = (
    f"at most {_SINCE_UNIT_MAX['d']}d (100 years; {_SINCE_UNIT_MAX['h']}h, {_SINCE_UNIT_MAX['w']}w)"
)


def parse_since(since: str | datetime | timedelta | None) -> datetime | None:
    """``"24h"``/``"7d"``/``"30d"``/``"90d"`` (or ``"12h"``, ``"3d"``), a timedelta or a
    datetime → the datetime it means; ``None`` → ``None``. A period reaches back at most
    :data:`SINCE_MAX` (100 years); a longer one is a :class:`~memorybank.ValidationError`
    saying the most each unit allows.

    >>> parse_since(None) is None
    True
    >>> round((utcnow() - parse_since("3d")) / timedelta(days=1))
    3
    >>> parse_since("9999999999d")
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: since '9999999999d' reaches back too far: at most 36525d (100 years; 876600h, 5217w)
    """  # noqa: E501
    if since is None or isinstance(since, datetime):
        return since
    if isinstance(since, timedelta):
        if since > SINCE_MAX:
            raise ValidationError(
                f"since {since} reaches back too far: {_SINCE_MOST}", field="since"
            )
        return utcnow() - since
    if since in _SINCE:
        return utcnow() - _SINCE[since]
    match = re.fullmatch(r"([0-9]+)([hdw])", since.strip())
    if not match:
        return _iso(since)
    digits, unit = match.groups()
    # Compared as text first: int() of thousands of digits is itself an error.
    if len(digits.lstrip("0")) > 9 or int(digits) > _SINCE_UNIT_MAX[unit]:
        raise ValidationError(
            f"since {_shown(since)} reaches back too far: {_SINCE_MOST}", field="since"
        )
    return utcnow() - timedelta(**{_SINCE_UNITS[unit]: int(digits)})


def _iso(since: str) -> datetime:
    """An ISO date or datetime (UTC unless it says otherwise), or the error listing what
    ``since`` accepts."""
    try:
        moment = datetime.fromisoformat(since.strip())
        if moment.tzinfo is None:
            return moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC)  # year 1 or 9999 with an offset leaves the calendar
    except (ValueError, OverflowError):
        raise ValidationError(
            f"since {_shown(since)} is not understood: use 24h, 7d, 30d, 90d, a number with "
            "h/d/w, or an ISO datetime such as 2025-01-31T09:00:00Z",
            field="since",
        ) from None


def _shown(value: str) -> str:
    """``value`` for an error message, cut short: an attacker-sized one must not flood it."""
    return repr(value if len(value) <= 40 else value[:39] + "…")


def _tuple(value: Any, kind: type[Enum], field: str) -> tuple[Any, ...] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else list(value)
    out: list[Any] = []
    for v in values:
        try:
            out.append(kind(v))
        except ValueError:
            # The value is echoed cut short: a query parameter may be thousands of characters.
            shown = _shown(v) if isinstance(v, str) else type(v).__name__
            choices = ", ".join(str(c.value) for c in kind)
            raise ValidationError(
                f"{field}: {shown} is not one of {choices}", field=field
            ) from None
    return tuple(out)


def _metadata(conditions: Mapping[str, Any]) -> dict[str, Any]:
    """``metadata``'s conditions, if every one can be asked of a store: each name a string
    without quotes, backslashes or control characters (SQLite spells the name into a JSON
    path, where those break it), each value JSON a store can compare.

    >>> _metadata({'a\\\\': 1})
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: metadata filter name 'a\\\\' may not contain quotes, backslashes or control characters: filter on another key
    """  # noqa: E501
    if not isinstance(conditions, Mapping):
        raise ValidationError(
            "metadata filter must be an object of names and values", field="metadata"
        )
    found = unpaired_surrogate(conditions, "metadata")
    if found is not None:
        raise ValidationError(f"{found}: remove it", field="metadata")
    for name, value in conditions.items():
        if not isinstance(name, str) or not name or _BAD_NAME.search(name):
            shown = _shown(name) if isinstance(name, str) else type(name).__name__
            raise ValidationError(
                f"metadata filter name {shown} may not contain quotes, backslashes or control "
                "characters: filter on another key",
                field="metadata",
            )
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            raise ValidationError(
                f"metadata filter value of {_shown(name)} is not JSON a store can compare: use "
                "a string, number, boolean, null, list or object",
                field="metadata",
            ) from None
        if "\x00" in json.dumps(value, ensure_ascii=False):
            raise ValidationError(
                f"metadata filter value of {_shown(name)} contains a NUL character: remove it",
                field="metadata",
            )
    return dict(conditions)


class FilterArgs(TypedDict, total=False):
    """The keyword filters of search, list and count, as :func:`memory_filter` takes
    them (a list matches any of its values; ``since`` may be ``"7d"``); each adapter either
    passes these or builds the :class:`~memorybank.model.MemoryFilter` itself."""

    category: Category | str | Sequence[str] | None
    tags: Sequence[str] | None
    ring: Ring | str | Sequence[str] | None
    domain: Domain | str | Sequence[str] | None
    min_importance: int | None
    since: str | datetime | timedelta | None
    until: datetime | None
    metadata: Mapping[str, Any] | None
    session_id: str | None
    source: Source | str | Sequence[str] | None
    superseded: bool | None


def memory_filter(
    *,
    category: Any = None,
    tags: Sequence[str] | None = None,
    ring: Any = None,
    domain: Any = None,
    min_importance: int | None = None,
    since: str | datetime | timedelta | None = None,
    until: datetime | None = None,
    metadata: Mapping[str, Any] | None = None,
    session_id: str | None = None,
    source: Any = None,
    superseded: bool | None = None,
) -> MemoryFilter:
    """The filter these keywords ask for; a value that names no category, ring, domain or
    source is a :class:`~memorybank.ValidationError` saying which."""
    return MemoryFilter(
        category=_tuple(category, Category, "category"),
        tags=None if tags is None else tuple(tags),
        ring=_tuple(ring, Ring, "ring"),
        domain=_tuple(domain, Domain, "domain"),
        min_importance=min_importance,
        since=parse_since(since),
        until=until,
        metadata=None if metadata is None else _metadata(metadata),
        session_id=session_id,
        source=_tuple(source, Source, "source"),
        superseded=superseded,
    )


def where(given: MemoryFilter | None, filters: FilterArgs, **fixed: bool | None) -> MemoryFilter:
    """The filter of a call that takes a :class:`~memorybank.model.MemoryFilter` or keyword
    filters (never both: which would win is unclear), with ``fixed`` fields (a search's
    ``superseded``) set over it.

    >>> where(None, {"category": "preference"}, superseded=False).superseded
    False
    >>> where(MemoryFilter(min_importance=5), {"tags": ["x"]})
    Traceback (most recent call last):
    ...
    memorybank.errors.ValidationError: pass a MemoryFilter or keyword filters (tags), not both
    """
    if given is not None and filters:
        raise ValidationError(
            f"pass a MemoryFilter or keyword filters ({', '.join(filters)}), not both"
        )
    found = given if given is not None else memory_filter(**filters)
    return found.model_copy(update=fixed) if fixed else found


__all__ = ["SINCE_MAX", "FilterArgs", "memory_filter", "parse_since", "where"]

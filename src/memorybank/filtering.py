"""The keyword filters of search, list, recent and count, turned into a
:class:`~memorybank.model.MemoryFilter`.

>>> memory_filter(category="preference", since="7d").category
(<Category.PREFERENCE: 'preference'>,)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from memorybank.errors import ValidationError
from memorybank.model import Category, Domain, MemoryFilter, Ring, Source, utcnow

_SINCE = {
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "90d": timedelta(days=90),
}


def parse_since(since: str | datetime | timedelta | None) -> datetime | None:
    """``"24h"``/``"7d"``/``"30d"``/``"90d"`` (or ``"12h"``, ``"3d"``), a timedelta or a
    datetime → the datetime it means; ``None`` → ``None``.

    >>> parse_since(None) is None
    True
    >>> round((utcnow() - parse_since("3d")) / timedelta(days=1))
    3
    """
    if since is None or isinstance(since, datetime):
        return since
    if isinstance(since, timedelta):
        return utcnow() - since
    if since in _SINCE:
        return utcnow() - _SINCE[since]
    match = re.fullmatch(r"(\d+)([hdw])", since.strip())
    if not match:
        raise ValidationError(
            f"since {since!r} is not understood: use 24h, 7d, 30d, 90d, a number with h/d/w, "
            "or an ISO datetime",
            field="since",
        )
    unit = {"h": "hours", "d": "days", "w": "weeks"}[match.group(2)]
    return utcnow() - timedelta(**{unit: int(match.group(1))})


def _tuple(value: Any, kind: Callable[[Any], Any], field: str) -> tuple[Any, ...] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else list(value)
    try:
        return tuple(kind(v) for v in values)
    except ValueError as exc:
        raise ValidationError(f"{field}: {exc}", field=field) from exc


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
        metadata=None if metadata is None else dict(metadata),
        session_id=session_id,
        source=_tuple(source, Source, "source"),
        superseded=superseded,
    )


__all__ = ["memory_filter", "parse_since"]

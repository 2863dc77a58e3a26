"""Times as the stores keep them: integer microseconds since the epoch, in UTC.

Every time a record carries must survive that round trip, or no read of its scope could turn
the stored number back into a date: ``9999-12-31T23:59:59-14:00`` is a valid ISO time, but in
UTC it is year 10000, which Python's dates do not reach. :data:`StoredTime` is the one check,
on every time field of the records (:mod:`memorybank.model.memory`), so a write through any
adapter (REST, tools, MCP, import, the library) refuses such a time before it is stored.

>>> storable_time(datetime(2026, 1, 1, tzinfo=UTC)).year
2026
>>> storable_time(datetime.fromisoformat("9999-12-31T23:59:59-14:00"))
Traceback (most recent call last):
...
ValueError: 9999-12-31T23:59:59-14:00 is not a time the store can keep: in UTC it falls outside the years 1-9999; send a time within them (with its UTC offset, or in UTC)
"""  # noqa: E501

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, overload

from pydantic import AfterValidator

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The earliest and latest microseconds a date can be read back from (years 1 and 9999),
#: with a second's margin: :func:`from_us` goes through a float, which rounds at the edges.
MIN_US = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // timedelta(microseconds=1) + 1_000_000
MAX_US = (datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC) - _EPOCH) // timedelta(microseconds=1)


@overload
def to_us(value: datetime) -> int: ...
@overload
def to_us(value: None) -> None: ...
@overload
def to_us(value: datetime | None) -> int | None: ...
def to_us(value: datetime | None) -> int | None:
    """A time as integer microseconds since the epoch, as the stores keep it (naive = UTC)."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp() * 1_000_000)


@overload
def from_us(value: int) -> datetime: ...
@overload
def from_us(value: None) -> None: ...
@overload
def from_us(value: int | None) -> datetime | None: ...
def from_us(value: int | None) -> datetime | None:
    """The aware UTC time of :func:`to_us`'s microseconds."""
    if value is None:
        return None
    return datetime.fromtimestamp(value / 1_000_000, UTC)


def storable_time(value: datetime) -> datetime:
    """``value`` unchanged if the stores can keep it and read it back, else a ``ValueError``
    saying what to send instead (pydantic reports it on the field that holds the time)."""
    us = to_us(value)
    if not MIN_US <= us <= MAX_US:
        raise ValueError(
            f"{value.isoformat()} is not a time the store can keep: in UTC it falls outside "
            "the years 1-9999; send a time within them (with its UTC offset, or in UTC)"
        )
    return value


#: A time a record may carry: one :func:`storable_time` accepts.
StoredTime = Annotated[datetime, AfterValidator(storable_time)]


def clamped_us(value: int) -> int:
    """Stored microseconds brought into the range :func:`from_us` reads (a row written
    before times were checked, or by hand): the nearest time that is."""
    return min(max(value, MIN_US), MAX_US)


__all__ = ["MAX_US", "MIN_US", "StoredTime", "clamped_us", "from_us", "storable_time", "to_us"]

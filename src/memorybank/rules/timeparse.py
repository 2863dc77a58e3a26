"""When a query is about: dates and periods named in its text, as time windows.

"What did Maria donate in December 2023?" is about December 2023; the memories that answer it
happened then (their ``occurred_at``) or were told shortly after. Retrieval boosts memories
inside the windows found here. Only explicit calendar expressions and a few relative ones
("yesterday", "last week") are read; anything else yields no window and changes nothing.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
_MONTHS["sept"] = 9
_MONTH = (
    r"(january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"

_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\.?\s+{_DAY},?\s+{_YEAR}\b")
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\.?,?\s+{_YEAR}\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\.?,?\s+(?:of\s+)?{_YEAR}\b")
_IN_MONTH = re.compile(rf"\b(?:in|during|since|by|early|late|mid)\s+{_MONTH}\b")
_IN_YEAR = re.compile(rf"\b(?:in|during)\s+{_YEAR}\b")
_ISO = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")

# What people tell of an event comes in the days after it; a window reaches this far past
# the period named.
AFTERWARDS = timedelta(days=14)


@dataclass(frozen=True)
class TimeWindow:
    """A span of time, or a month of any year (``month`` set, ``start``/``end`` unset)."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None

    def contains(self, when: datetime) -> bool:
        """Whether ``when`` falls inside (for a bare month: within it or just after it)."""
        if self.month is not None:
            return when.month == self.month or (when - AFTERWARDS).month == self.month
        assert self.start is not None and self.end is not None
        return self.start <= when < self.end


def _day(year: int, month: int, day: int) -> TimeWindow | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return TimeWindow(start - timedelta(days=1), start + timedelta(days=2) + AFTERWARDS)


def _month(year: int, month: int) -> TimeWindow:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = start + timedelta(days=calendar.monthrange(year, month)[1])
    return TimeWindow(start, end + AFTERWARDS)


def _relative(text: str, now: datetime) -> list[TimeWindow]:
    spans = {
        "today": (timedelta(days=1), timedelta(0)),
        "yesterday": (timedelta(days=2), timedelta(days=1)),
        "this week": (timedelta(days=7), timedelta(0)),
        "last week": (timedelta(days=14), timedelta(days=5)),
        "this month": (timedelta(days=31), timedelta(0)),
        "last month": (timedelta(days=62), timedelta(days=25)),
        "this year": (timedelta(days=366), timedelta(0)),
        "last year": (timedelta(days=731), timedelta(days=330)),
    }
    return [
        TimeWindow(now - back, now - forward + timedelta(days=1))
        for phrase, (back, forward) in spans.items()
        if re.search(rf"\b{phrase}\b", text)
    ]


def time_windows(query: str, now: datetime) -> list[TimeWindow]:
    """The time windows ``query`` names, most specific first; empty when it names none.

    >>> now = datetime(2026, 1, 1, tzinfo=UTC)
    >>> [w.start.date() for w in time_windows("Who did Maria meet on May 3, 2023?", now)]
    [datetime.date(2023, 5, 2)]
    """
    text = query.lower()
    days = [
        _day(int(m.group(3)), _MONTHS[m.group(1)], int(m.group(2)))
        for m in _MONTH_DAY_YEAR.finditer(text)
    ]
    days += [
        _day(int(m.group(3)), _MONTHS[m.group(2)], int(m.group(1)))
        for m in _DAY_MONTH_YEAR.finditer(text)
    ]
    days += [_day(int(m.group(1)), int(m.group(2)), int(m.group(3))) for m in _ISO.finditer(text)]
    found = [w for w in days if w is not None]
    if found:
        return found
    months = [_month(int(m.group(2)), _MONTHS[m.group(1)]) for m in _MONTH_YEAR.finditer(text)]
    if months:
        return months
    bare = [TimeWindow(month=_MONTHS[m.group(1)]) for m in _IN_MONTH.finditer(text)]
    years = [
        TimeWindow(datetime(int(y), 1, 1, tzinfo=UTC), datetime(int(y) + 1, 1, 1, tzinfo=UTC))
        for y in _IN_YEAR.findall(text)
    ]
    return bare + years + _relative(text, now)

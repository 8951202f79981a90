"""Relative time phrases ("last month", "yesterday", "next May", "two years ago") resolved
against the valid time of the entry that says them.

Parsing is parsedatetime's (a dbt dependency, so always installed) and month arithmetic is
dateutil's; this module only decides which phrases to look for and fixes two of
parsedatetime's answers that are wrong for us: "next May" said in September gives May of the
year after next, and "last night"/"last weekend" are not understood (status 0 or time-only).

The result is a day: midnight UTC of the resolved date, or the entry's own valid time when the
phrase means the same day ("today"). Month- and year-level phrases resolve to the first day of
that month or year ("last month" said on 14 May -> 1 April), the earliest time the fact held.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime, timezone

import parsedatetime
from dateutil.relativedelta import SA, relativedelta

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_NUM = r"(?:\d{1,3}|a few|a couple of|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"

# Longest alternatives first, so "the day before yesterday" wins over "yesterday".
PHRASE = re.compile(
    rf"\b(?:the day before yesterday|yesterday|today|tomorrow|last night|tonight"
    rf"|(?:last|next|this) (?:week|weekend|month|year)"
    rf"|(?:last|next|this) (?:{_DAYS})"
    rf"|(?:last|next|this|in) (?:{_MONTHS})\b(?! \d)"
    rf"|{_NUM} (?:day|week|month|year)s? ago)\b",
    re.I,
)

_MONTH_NO = {m: i for i, m in enumerate(_MONTHS.split("|"), 1)}
# for readers of questions (query/timewindow.py)
MONTHS, MONTH_NO = _MONTHS, _MONTH_NO


@functools.cache
def _calendar():
    return parsedatetime.Calendar(parsedatetime.Constants(usePyICU=False))


def find(text: str, start: int = 0, end: int | None = None) -> re.Match[str] | None:
    """The first relative time phrase in ``text[start:end]``."""
    return PHRASE.search(text, start, len(text) if end is None else end)


def resolve(phrase: str, anchor: datetime, *, past: bool = False) -> datetime | None:
    """The day ``phrase`` means when said at ``anchor`` (UTC), or None if it is not one we resolve.

    ``past``: the phrase describes something that already happened, so a bare month ("in
    March") means the latest March not after the anchor rather than the next one."""

    anchor = anchor if anchor.tzinfo else anchor.replace(tzinfo=timezone.utc)
    anchor = anchor.astimezone(timezone.utc)
    p = " ".join(phrase.lower().split())
    day = anchor.replace(hour=0, minute=0, second=0, microsecond=0)
    words = p.split()
    if len(words) == 2 and words[1] in _MONTH_NO:
        month = _MONTH_NO[words[1]]
        first = day.replace(day=1, month=month)
        if words[0] == "next":
            result = first if month > anchor.month else first + relativedelta(years=1)
        elif words[0] == "last":
            result = first if month < anchor.month else first - relativedelta(years=1)
        elif past:  # "in May" of a past event: the latest May not after the anchor
            result = first if month <= anchor.month else first - relativedelta(years=1)
        else:  # "this May" / "in May" of a plan: this year's, or next year's once it has passed
            result = first if words[0] == "this" or month >= anchor.month else first + relativedelta(years=1)
        return result
    if p in ("last night",):
        p = "yesterday"
    elif p == "tonight":
        p = "today"
    elif p == "the day before yesterday":
        return day - relativedelta(days=2)
    elif p in ("last weekend",):
        return day - relativedelta(days=1) + relativedelta(weekday=SA(-1))
    elif p in ("this weekend", "next weekend"):
        sat = day + relativedelta(weekday=SA(+1))  # the coming Saturday (today if it is one)
        return sat + relativedelta(weeks=1) if p == "next weekend" else sat
    # Vague counts get a number so that the day is near the truth; the phrase itself is kept.
    p = p.replace("a couple of ", "2 ").replace("a few ", "3 ")
    dt, status = _calendar().parseDT(p, sourceTime=anchor.replace(tzinfo=None))
    if not status & 1:  # 1 = a date was parsed; 2 alone = only a time of day
        return None
    resolved = dt.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=timezone.utc)
    return anchor if resolved == day else resolved

"""The time window a question names: "in 2022", "in June 2021", "last May", "last week",
"before she moved".

The context compiler retrieves from inside the window as one more route (a prefilter on
valid time, pushed into the evidence index), so what was said then ranks ahead of what merely
shares words with the question. Relative phrases reuse the extraction pass's resolver
(claims/timephrase.py) against the moment the question is asked about (``as_of``, else now).
A window relative to an event ("before she moved") needs the event's time: the caller passes
``event_time(predicate, names)``, which looks it up in the state fold (when the newest
``lives_in`` fact for that person began).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from dateutil.relativedelta import relativedelta

from claims import timephrase

_MONTHS = timephrase.MONTHS
_MONTH_NO = timephrase.MONTH_NO
_YEAR = r"(?:19|20)\d\d"
_EDGE = r"(?:in|during|throughout|since|before|after|by|from)"

# "in June 2021", "before June of 2021", "June 2021"
_MONTH_YEAR = re.compile(rf"\b(?:({_EDGE}) )?(?:(?:early|mid|late) )?({_MONTHS}),? (?:of )?({_YEAR})\b", re.I)
# "in 2022", "before 2020", "since 2019"
_YEAR_ONLY = re.compile(rf"\b({_EDGE}) (?:early |mid |late )?(?:the year )?({_YEAR})\b", re.I)
# "before she moved", "after Elena joined"; the verb names the fact whose start is the event.
EVENT_VERBS = {
    "moved": "lives_in",
    "relocated": "lives_in",
    "joined": "works_at",
    "started working": "works_at",
    "changed jobs": "works_at",
    "enrolled": "studies_at",
    "started studying": "studies_at",
}
_EVENT = re.compile(
    rf"\b(before|after|since) ([\w'-]+)(?: had)? ({'|'.join(map(re.escape, EVENT_VERBS))})\b",
    re.I,
)

_PRONOUNS = {"he", "she", "they", "i", "we", "you", "it"}

EventLookup = Callable[[str, list[str]], "datetime | None"]


@dataclass(frozen=True)
class TimeWindow:
    """Valid times ``start <= t < end`` (either side open when None) and the phrase that named them."""

    start: datetime | None
    end: datetime | None
    phrase: str

    def contains(self, t: datetime | None) -> bool:
        if t is None:
            return False
        return (self.start is None or t >= self.start) and (self.end is None or t < self.end)

    def bounds(self) -> tuple[datetime | None, datetime | None]:
        return self.start, self.end

    def to_dict(self) -> dict[str, str | None]:
        return {
            "phrase": self.phrase,
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
        }


def _edge(word: str | None, start: datetime, end: datetime, phrase: str) -> TimeWindow:
    """A period, or the half-line before or after it when the question says so."""
    word = (word or "in").lower()
    if word == "before":
        return TimeWindow(None, start, phrase)
    if word == "by":
        return TimeWindow(None, end, phrase)
    if word == "after":
        return TimeWindow(end, None, phrase)
    if word in ("since", "from"):
        return TimeWindow(start, None, phrase)
    return TimeWindow(start, end, phrase)


def _utc(y: int, m: int = 1, d: int = 1) -> datetime:
    return datetime(y, m, d, tzinfo=timezone.utc)


# How long the period a relative phrase names lasts, from the day resolve() gives.
def _span(phrase: str) -> relativedelta:
    p = phrase.lower()
    if "weekend" in p:
        return relativedelta(days=2)
    if "week" in p:
        return relativedelta(weeks=1)
    if "month" in p or any(m in p.split() for m in _MONTH_NO):
        return relativedelta(months=1)
    if "year" in p:
        return relativedelta(years=1)
    return relativedelta(days=1)


def question_window(question: str, *, anchor: datetime | None = None, event_time: EventLookup | None = None) -> TimeWindow | None:
    """The window the question names, or None. ``anchor`` is the time relative phrases count
    from (``as_of`` of the ask, else now)."""
    anchor = anchor or datetime.now(timezone.utc)
    m = _MONTH_YEAR.search(question)
    if m:
        start = _utc(int(m.group(3)), _MONTH_NO[m.group(2).lower()])
        return _edge(m.group(1), start, start + relativedelta(months=1), m.group(0))
    m = _YEAR_ONLY.search(question)
    if m:
        y = int(m.group(2))
        return _edge(m.group(1), _utc(y), _utc(y + 1), m.group(0))
    m = _EVENT.search(question)
    if m and event_time is not None:
        who = m.group(2)
        names = [] if who.lower() in _PRONOUNS else [who]
        at = event_time(EVENT_VERBS[m.group(3).lower()], names)
        if at is not None:
            return _edge(m.group(1), at, at, m.group(0))
    m = timephrase.find(question)
    if m:
        phrase = m.group(0)
        day = timephrase.resolve(phrase, anchor, past=True)
        if day is not None:
            day = day.replace(hour=0, minute=0, second=0, microsecond=0)
            span = _span(phrase)
            if phrase.lower().endswith("ago") and span != relativedelta(days=1):
                # "three weeks ago": a period around that day, not one starting on it
                half = (day + span) - day
                return TimeWindow(day - half / 2, day + half / 2, phrase)
            return TimeWindow(day, day + span, phrase)
    return None

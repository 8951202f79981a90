"""The window a question names (query/timewindow), read from the question alone: no index, no model."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from query.timewindow import question_window

UTC = timezone.utc


ANCHOR = datetime(2024, 6, 15, 12, 0, tzinfo=UTC)  # a Saturday


def d(*a: int) -> datetime:
    return datetime(*a, tzinfo=UTC)


@pytest.mark.parametrize(
    "question, start, end",
    [
        ("What did Elena do in May 2023?", d(2023, 5, 1), d(2023, 6, 1)),
        ("What was planned for early March of 2021?", d(2021, 3, 1), d(2021, 4, 1)),
        ("Where did she work in 2022?", d(2022, 1, 1), d(2023, 1, 1)),
        ("What happened before 2020?", None, d(2020, 1, 1)),
        ("What changed since 2023?", d(2023, 1, 1), None),
        ("What did we agree after June 2024?", d(2024, 7, 1), None),
        ("What happened last May?", d(2024, 5, 1), d(2024, 6, 1)),
        ("Who called yesterday?", d(2024, 6, 14), d(2024, 6, 15)),
        ("What did we discuss last month?", d(2024, 5, 1), d(2024, 6, 1)),
    ],
)
def test_the_window_a_question_names(question, start, end):
    w = question_window(question, anchor=ANCHOR)
    assert w is not None and (w.start, w.end) == (start, end), w
    assert w.phrase.lower() in question.lower()


def test_no_window_when_the_question_names_no_time():
    assert question_window("Where does Elena live?", anchor=ANCHOR) is None
    assert question_window("How many orders did Tomasz place?", anchor=ANCHOR) is None


def test_a_window_relative_to_an_event_asks_the_state_fold_when_it_happened():
    asked = []

    def event_time(predicate, names):
        asked.append((predicate, names))
        return d(2024, 4, 1)

    w = question_window("Where did Elena live before she moved?", anchor=ANCHOR, event_time=event_time)
    assert (w.start, w.end) == (None, d(2024, 4, 1)) and asked == [("lives_in", [])]
    w = question_window("What did Priya do after Elena joined?", anchor=ANCHOR, event_time=event_time)
    assert (w.start, w.end) == (d(2024, 4, 1), None) and asked[-1] == ("works_at", ["Elena"])
    # no known event: no window (rather than a guess)
    assert question_window("Where was he before he moved?", anchor=ANCHOR, event_time=lambda p, n: None) is None

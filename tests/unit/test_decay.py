"""Decay as a ranking signal (query/retrieve.py decay()): old evidence that no context showed
lately ranks lower, never out; a showing counts as recent; off at weight 0."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from query.config import PRESETS, QueryConfig
from query.retrieve import decay

NOW = datetime(2026, 6, 1, tzinfo=timezone.utc)


def _slots(*ages_days: float) -> list[dict]:
    return [{"hit": {"entry_id": f"e{i}", "valid_at": NOW - timedelta(days=a)}, "score": 1.0} for i, a in enumerate(ages_days)]


def _ranked(slots) -> list[str]:
    return [s["hit"]["entry_id"] for s in sorted(slots, key=lambda s: (-s["score"], s["hit"]["entry_id"]))]


def test_an_old_hit_ranks_below_an_equally_relevant_recent_one_and_stays():
    slots = _slots(400, 0, 30)
    decay(slots, 180, 0.2, None, usage={})
    assert _ranked(slots) == ["e1", "e2", "e0"]
    assert len(slots) == 3 and all(s["score"] > 0.8 for s in slots), "never below 1 - weight of the score"
    assert slots[1]["score"] == 1.0, "the newest candidate is now: no decay"


def test_half_of_the_weight_is_lost_after_one_half_life():
    slots = _slots(180)
    slots.append({"hit": {"entry_id": "new", "valid_at": NOW}, "score": 1.0})
    decay(slots, 180, 0.2, None, usage={})
    assert slots[0]["score"] == pytest.approx(0.9)


def test_a_showing_counts_as_recent():
    slots = _slots(400, 10)
    decay(slots, 180, 0.5, None, usage={"e0": NOW - timedelta(days=1)})
    assert _ranked(slots) == ["e0", "e1"], "shown yesterday: younger than a turn of ten days ago"


def test_age_counts_up_to_as_of():
    slots = _slots(400, 0)
    decay(slots, 180, 0.5, NOW - timedelta(days=400), usage={})
    assert slots[0]["score"] == 1.0, "valid at the as-of time: no age"
    assert slots[1]["score"] == 1.0, "after the as-of time: no negative age"


def test_off_by_default_in_every_preset():
    assert QueryConfig().decay_weight == 0
    assert all(p.decay_weight == 0 for p in PRESETS.values())

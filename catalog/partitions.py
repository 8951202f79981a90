"""Partitions: ledger days.

A ledger day is the UTC date of an entry's transaction time (``recorded_at``): the ledger only
grows, so a past day's entries never change (an erasure rewrites them under its own protocol).
Views partitioned by ledger day re-compile exactly the days a version upgrade touches.

The partitions are the ledger days that exist, not a calendar: a dynamic partitions definition
whose keys are added when a day first has entries (by the ledger-head sensor under the daemon,
by the runner before `memc build` and `memc backfill`). A daily calendar from 2024-01-01 showed
1,066 partitions and 1,065 "Missing" on a home with one ledger day, and the UI's backfill of
"Missing" would have queued 1,065 empty days; now "Missing" means a ledger day with entries and
no claims yet. ``recorded_at`` never decreases with seq, so days are added in date order, and
Dagster's order of dynamic keys (insertion order) is the date order a range of days needs.
"""

from __future__ import annotations

from typing import Iterable

import dagster as dg

LEDGER_DAYS = dg.DynamicPartitionsDefinition(name="ledger_days")

# The in-process runner materializes a range of days in one run; that needs single-run
# backfills on every partitioned asset in the selection (docs/stack-notes.md), and assets that return
# MaterializeResult (an IO manager cannot persist one output for several partitions).
SINGLE_RUN = dg.BackfillPolicy.single_run()

# A single run over a range of days (what `memc build` and `memc backfill` launch in-process).
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def range_tags(first_day: str, last_day: str) -> dict[str, str]:
    return {RANGE_START_TAG: first_day, RANGE_END_TAG: last_day}


def new_ledger_days(days: Iterable[str], known: Iterable[str]) -> list[str]:
    """The ledger days (ISO dates) not yet partitions, in date order: what to add. A day earlier
    than the last known one would land after it in Dagster's order and break every range over
    it; the ledger never produces one (recorded_at never decreases), so it is refused loudly."""
    have = list(known)
    new = sorted(set(days) - set(have))
    if new and have and new[0] < max(have):
        raise ValueError(f"ledger day {new[0]} is earlier than the last ledger-day partition {max(have)}: "
                         "recorded_at must never decrease with seq (memc ledger verify)")
    return new


def register_ledger_days(instance: dg.DagsterInstance, days: Iterable[str]) -> list[str]:
    """Add the ledger days that are not partitions yet to the instance; returns the added ones."""
    new = new_ledger_days(days, instance.get_dynamic_partitions(LEDGER_DAYS.name))
    if new:
        instance.add_dynamic_partitions(LEDGER_DAYS.name, new)
    return new

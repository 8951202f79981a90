"""Partitions: ledger days.

A ledger day is the UTC date of an entry's transaction time (``recorded_at``): the ledger only
grows, so a past day's entries never change (an erasure rewrites them under its own protocol).
Views partitioned by ledger day re-compile exactly the days a version upgrade touches.
"""

import dagster as dg

# end_offset=1: today's partition exists, so what was ingested a minute ago can be compiled.
LEDGER_DAYS = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_offset=1, timezone="UTC")

# The in-process runner materializes a range of days in one run; that needs single-run
# backfills on every partitioned asset in the selection (docs/stack-notes.md), and assets that return
# MaterializeResult (an IO manager cannot persist one output for several partitions).
SINGLE_RUN = dg.BackfillPolicy.single_run()

# A single run over a range of days (what `memc build` and `memc backfill` launch in-process).
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def range_tags(first_day: str, last_day: str) -> dict[str, str]:
    return {RANGE_START_TAG: first_day, RANGE_END_TAG: last_day}

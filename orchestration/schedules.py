"""Schedules: nightly dreaming."""

import dagster as dg

from orchestration.keys import CENTRALITY

nightly_dreaming = dg.ScheduleDefinition(
    name="nightly_dreaming",
    cron_schedule="0 3 * * *",
    target=dg.AssetSelection.assets(CENTRALITY).upstream(),
    description="Rebuild the views the graph needs and run dreaming: PageRank and Louvain communities per scope, written back to the ledger as derived claims.",
    default_status=dg.DefaultScheduleStatus.STOPPED,
)

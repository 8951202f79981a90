"""Schedules: nightly dreaming (an explicit alternative to its automation condition) and view compaction."""

import dagster as dg

from catalog.keys import CENTRALITY, EVIDENCE_INDEX
from catalog.resources import MemcResource
from orchestration import maintenance
from orchestration.settings import Settings

nightly_dreaming = dg.ScheduleDefinition(
    name="nightly_dreaming",
    cron_schedule="0 3 * * *",
    target=dg.AssetSelection.assets(CENTRALITY).upstream(),
    description=(
        "Rebuild the views the graph needs and run dreaming: PageRank and Louvain communities per scope, written "
        "back to the ledger as derived claims. Stopped by default: centrality's own automation condition already "
        "dreams nightly; start this one to force a full recompile before dreaming."
    ),
    default_status=dg.DefaultScheduleStatus.STOPPED,
)


@dg.op(description="Compact the LanceDB evidence table: merge fragments, fold indexes, drop versions older than 10 minutes.")
def compact_evidence_table(context: dg.OpExecutionContext, memc: MemcResource) -> None:
    stats = maintenance.compact_views(memc.home)
    context.log.info(f"view compaction: {stats}")
    if stats.get("compacted"):
        before, after = stats["before"], stats["after"]
        context.log_event(
            dg.AssetObservation(
                asset_key=EVIDENCE_INDEX,
                metadata={
                    "compaction/versions_before": before["versions"],
                    "compaction/versions_after": after["versions"],
                    "compaction/bytes_before": before["bytes"],
                    "compaction/bytes_after": after["bytes"],
                    "dagster/row_count": after["rows"],
                },
            )
        )


@dg.job(description="View compaction (LanceDB versions and fragments). The ledger's files are never rewritten here.")
def compact_views():
    compact_evidence_table()


def compaction_schedule(settings: Settings) -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(
        name="view_compaction",
        cron_schedule=settings.compaction_cron,
        job=compact_views,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Weekly by default (memc.toml [automation] compaction_cron).",
    )

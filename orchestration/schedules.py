"""Schedules: nightly dreaming (an explicit alternative to its automation condition), view compaction
and ledger compaction."""

import dagster as dg

from assets.ledger import DATA_VERSION_TAG
from catalog.keys import CENTRALITY, EVIDENCE_INDEX, LEDGER
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


@dg.op(description="Merge runs of small ledger batch files into files of up to 50,000 entries (seqs, ids, keys and "
       "values unchanged; crash-safe; under the ledger's rewrite lock, as an erasure's purge, and the home's build "
       "lock, so no build reads the ledger's files meanwhile).")
def compact_ledger_files(context: dg.OpExecutionContext, memc: MemcResource) -> None:
    stats = maintenance.compact_ledger(memc.home)
    context.log.info(f"ledger compaction: {stats}")
    context.log_event(
        dg.AssetObservation(
            asset_key=LEDGER,
            metadata={
                "compaction/files_before": stats["files_before"],
                "compaction/files_after": stats["files_after"],
                "compaction/files_merged": stats["files_merged"],
                "compaction/head": stats["head"],
            },
            # The head, as every observation of the ledger carries: Dagster reads the ledger's data
            # version from its latest observation, and one without read as "INITIAL", so every
            # view showed as stale after a compaction that changed no entry.
            tags={DATA_VERSION_TAG: str(stats["head"])},
        )
    )


@dg.job(description="Ledger compaction: small batch files (one per append) merged so reads cost what a bulk-written "
        "ledger's do. The protocol is ledger/store.py's.")
def compact_ledger():
    compact_ledger_files()


def ledger_compaction_schedule(settings: Settings) -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(
        name="ledger_compaction",
        cron_schedule=settings.compaction_cron,
        job=compact_ledger,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Beside view compaction (memc.toml [automation] compaction_cron); runs queue one at a time.",
    )

"""Sensors: the inbox. Files dropped into <home>/inbox are ingested by a run of ``ingest_inbox``."""

import dagster as dg

from ingestion.inbox import pending_inbox_files, process_inbox
from orchestration.keys import LEDGER
from orchestration.resources import MemcResource


@dg.op(description="Ingest every ready file in the inbox: each file one atomic append; bad files go to rejected/ with an error report.")
def ingest_inbox_files(context: dg.OpExecutionContext, memc: MemcResource) -> None:
    ledger = memc.ledger()
    report = process_inbox(memc.home, ledger)
    context.log.info(str(report))
    stats = ledger.stats()
    # Record the new head on the source asset so that its downstream views see new data.
    context.log_event(
        dg.AssetObservation(
            asset_key=LEDGER,
            metadata={"head_seq": stats["head_seq"], "dagster/row_count": stats["entries"]},
            tags={"dagster/data_version": str(stats["head_seq"])},
        )
    )


@dg.job(description="Ingest the inbox folder into the ledger.")
def ingest_inbox():
    ingest_inbox_files()


@dg.sensor(job=ingest_inbox, minimum_interval_seconds=15, default_status=dg.DefaultSensorStatus.RUNNING)
def inbox_sensor(context: dg.SensorEvaluationContext, memc: MemcResource):
    """Starts an ingest run when the inbox holds files that have stopped growing."""
    files = pending_inbox_files(memc.home)
    if not files:
        return dg.SkipReason("inbox is empty")
    signature = "|".join(f"{p.name}:{p.stat().st_mtime_ns}" for p in files)
    if signature == context.cursor:
        return dg.SkipReason("files already handed to a run")
    context.update_cursor(signature)
    return dg.RunRequest(run_key=signature, tags={"memc/inbox_files": str(len(files))})

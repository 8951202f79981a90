"""Sensors: the inbox (files dropped into <home>/inbox are ingested by a run of ``ingest_inbox``),
the ledger head (an observation of the source asset whenever it grew, from any writer, and a
partition for each new ledger day) and the views' lag behind it (their freshness)."""

import json
from datetime import datetime, timedelta, timezone
from typing import Mapping

import dagster as dg

from assets.ledger import DATA_VERSION_TAG, observation_event
from ingestion.inbox import pending_inbox_files, process_inbox
from catalog.keys import LEDGER
from catalog.partitions import LEDGER_DAYS, new_ledger_days
from claims.ledger_days import ledger_days
from catalog.resources import MemcResource
from checks.lag import view_lag
from checks.quality import LAG_ASSETS, lag_check_name, lag_evaluation


@dg.op(
    description="Ingest every ready file in the inbox and its folders: each file one atomic append, in the scope "
    "and visibility its folder's memc-inbox.toml (or its own <file>.memc.toml) sets; bad files go to rejected/ "
    "with an error report. Entries made public only because nothing gave a visibility are logged as warnings."
)
def ingest_inbox_files(context: dg.OpExecutionContext, memc: MemcResource) -> None:
    ledger = memc.ledger()
    report = process_inbox(memc.home, ledger)
    context.log.info(report.summary())
    for warning in report.warnings:
        context.log.warning(warning)
    # Record the new head on the source asset so that its downstream views see new data.
    context.log_event(observation_event(ledger))


@dg.job(description="Ingest the inbox folder into the ledger.")
def ingest_inbox():
    ingest_inbox_files()


def make_inbox_sensor(interval_seconds: int = 15) -> dg.SensorDefinition:
    @dg.sensor(name="inbox_sensor", job=ingest_inbox, minimum_interval_seconds=interval_seconds, default_status=dg.DefaultSensorStatus.RUNNING)
    def inbox_sensor(context: dg.SensorEvaluationContext, memc: MemcResource):
        """Starts an ingest run when the inbox holds files that have stopped growing."""
        files = pending_inbox_files(memc.home)
        if not files:
            return dg.SkipReason("inbox is empty")
        inbox = memc.home.inbox
        signature = "|".join(f"{p.relative_to(inbox).as_posix()}:{p.stat(follow_symlinks=False).st_mtime_ns}" for p in files)
        if signature == context.cursor:
            return dg.SkipReason("files already handed to a run")
        context.update_cursor(signature)
        return dg.RunRequest(run_key=signature, tags={"memc/inbox_files": str(len(files))})

    return inbox_sensor


inbox_sensor = make_inbox_sensor()


def make_ledger_head_sensor(interval_seconds: int = 30) -> dg.SensorDefinition:
    @dg.sensor(name="ledger_head_sensor", minimum_interval_seconds=interval_seconds, default_status=dg.DefaultSensorStatus.RUNNING)
    def ledger_head_sensor(context: dg.SensorEvaluationContext, memc: MemcResource):
        """Records an observation of the ledger whenever its head moved, whoever wrote it
        (`memc ingest`, the HTTP API, dreaming's write-back): the automation refreshes the
        views on it. A ledger day that has its first entries becomes a partition of the claims
        here. Costs one directory listing per tick, and a read of recorded_at when the head
        moved; launches no run."""
        ledger = memc.ledger()
        head = ledger.head()
        known = context.instance.get_dynamic_partitions(LEDGER_DAYS.name)
        if context.cursor == str(head):
            if head and not known:
                # A home whose daemon ran before the claims were partitioned by the days that
                # exist: its days are added once, with no observation (the head did not move).
                return dg.SensorResult(dynamic_partitions_requests=[LEDGER_DAYS.build_add_request(ledger_days(ledger))])
            return dg.SkipReason(f"ledger head unchanged at {head}")
        new_days = new_ledger_days(ledger_days(ledger), known)
        return dg.SensorResult(
            asset_events=[
                dg.AssetObservation(
                    asset_key=LEDGER, metadata={"head_seq": head}, tags={DATA_VERSION_TAG: str(head)}
                )
            ],
            dynamic_partitions_requests=[LEDGER_DAYS.build_add_request(new_days)] if new_days else None,
            cursor=str(head),
        )

    return ledger_head_sensor


# Runs longer than this (a full build of a large home takes minutes) no longer hold back the
# view_lag_sensor: a run left STARTED by a killed process would otherwise silence it for good.
BUSY_RUN_HORIZON = timedelta(hours=1)
BUSY = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


def make_view_lag_sensor(targets_minutes: Mapping[str, float], interval_seconds: int = 30) -> dg.SensorDefinition:
    @dg.sensor(name="view_lag_sensor", minimum_interval_seconds=interval_seconds, default_status=dg.DefaultSensorStatus.RUNNING)
    def view_lag_sensor(context: dg.SensorEvaluationContext, memc: MemcResource):
        """The event-driven views' freshness between builds: evaluates each view's watermark-lag
        check against the ledger head (passed while it holds the head, a warning while it lacks
        entries younger than its target, an error beyond it) and records the result whenever the
        view's watermark, the ledger head or the verdict changed; a view that holds the head stays
        fresh however long ago it was built. Reads four watermark files and the ledger's head
        per tick; launches no run. Waits while a run is queued or under way: Dagster orders a
        check's results by when they were planned, and a run plans its lag checks when it is
        created, so a verdict recorded before the run ended was taken as the check's latest and
        judged no materialization (seen under the daemon: state_watermark_lag without a result
        for the build that had just finished)."""
        since = datetime.now(timezone.utc) - BUSY_RUN_HORIZON  # a run left STARTED by a dead process must not stop it for good
        running = context.instance.get_runs(filters=dg.RunsFilter(statuses=BUSY, updated_after=since), limit=1)
        if running:
            return dg.SkipReason(f"run {running[0].run_id} is queued or under way: its own checks judge the views it builds")
        seen = json.loads(context.cursor) if context.cursor else {}
        now: dict[str, list] = {}
        events = []
        for view, asset in LAG_ASSETS.items():
            lag = view_lag(memc.home, view)
            passed, severity, metadata = lag_evaluation(lag, targets_minutes[view])
            now[view] = [metadata["state"], lag.watermark, lag.head]
            if seen.get(view) != now[view]:
                events.append(dg.AssetCheckEvaluation(asset_key=asset, check_name=lag_check_name(view), passed=passed,
                                                      severity=severity, metadata=metadata))  # fmt: skip
        if not events:
            return dg.SkipReason("no view's lag changed")
        return dg.SensorResult(asset_events=events, cursor=json.dumps(now))

    return view_lag_sensor

"""The ledger as Dagster's source asset: observed, never materialized by Dagster."""

import warnings

import dagster as dg

from assets.columns import column_metadata, field_comments
from catalog.keys import EVIDENCE_GROUP, LEDGER
from catalog.resources import MemcResource
from ledger import Ledger
from ledger import schema as ledger_schema

# Where Dagster reads an observation's data version (dagster._core.definitions.data_version).
DATA_VERSION_TAG = "dagster/data_version"

DESCRIPTION = """The append-only evidence ledger: every message, document, event, correction, erasure and
derived claim memc has recorded, verbatim, with source, valid and transaction time, confidence and
visibility. Grain: one row per entry, seq gap-free.

The only thing memc cannot rebuild; every other asset is compiled from it. Written by `memc
ingest`, the inbox sensor, the HTTP API, the MCP server and dreaming; Dagster observes it (never
materializes it), and its data version is the head seq (the watermark every view is built against)."""


# observable_source_asset is beta in Dagster 1.13, and chosen knowingly (the ledger is observed,
# never materialized by Dagster): its notice is for us, not for every command that loads the
# definitions (it was the first stderr line of every `memc build`).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.BetaWarning)

    # observable_source_asset does not take the function's docstring as the description (it
    # stayed None in the catalog), so it is passed explicitly; the column table is the Arrow
    # schema every ledger file is written with, and its comments.
    @dg.observable_source_asset(
        key=LEDGER,
        group_name=EVIDENCE_GROUP,
        kinds={"parquet"},
        description=DESCRIPTION,
        metadata=column_metadata(ledger_schema.LEDGER_SCHEMA, field_comments(ledger_schema)),
    )
    def ledger(memc: MemcResource) -> dg.ObserveResult:
        return observation(memc.ledger())


def observation(ledger: Ledger) -> dg.ObserveResult:
    """What an observation of the ledger records: the head seq as its data version (the
    watermark every view is built against), and its size."""
    stats = ledger.stats()
    return dg.ObserveResult(
        data_version=dg.DataVersion(str(stats["head_seq"])),
        metadata={
            "head_seq": stats["head_seq"],
            "dagster/row_count": stats["entries"],
            "files": stats["files"],
            "bytes": stats["bytes"],
            "path": dg.MetadataValue.path(stats["root"]),
        },
    )


def observation_event(ledger: Ledger) -> dg.AssetObservation:
    """The same observation as an event, for an op or the instance to record."""
    seen = observation(ledger)
    return dg.AssetObservation(asset_key=LEDGER, metadata=seen.metadata, tags={DATA_VERSION_TAG: seen.data_version.value})


def report_observation(instance: dg.DagsterInstance, ledger: Ledger) -> None:
    """Record the ledger's observation in the instance's event log without a run, as the ledger
    head sensor does: `memc build`, `backfill` and `dream` observe the ledger before their runs.
    Dagster reads a source asset's data version from its latest observation, run or no run
    (``fetch_observations``), for staleness, the automation and the input versions each
    materialization records. A run of the ``observe_ledger`` job (kept, for the UI) before each
    build's run cost its own start and events; the ledger's checks it ran now run in the build's
    run (``orchestration.runner._observed_run``)."""
    instance.report_runless_asset_event(observation_event(ledger))


ASSETS = [ledger]

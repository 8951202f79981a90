"""The ledger as Dagster's source asset: observed, never materialized by Dagster."""

import warnings

import dagster as dg

from catalog.keys import EVIDENCE_GROUP, LEDGER
from catalog.resources import MemcResource


# observable_source_asset is beta in Dagster 1.13, and chosen knowingly (the ledger is observed,
# never materialized by Dagster): its notice is for us, not for every command that loads the
# definitions (it was the first stderr line of every `memc build`).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", dg.BetaWarning)

    @dg.observable_source_asset(key=LEDGER, group_name=EVIDENCE_GROUP, kinds={"parquet"})
    def ledger(memc: MemcResource) -> dg.ObserveResult:
        """The append-only evidence ledger: every message, document, event, correction, erasure and
        derived claim memc has recorded, verbatim, with source, valid and transaction time,
        confidence and visibility. Grain: one row per entry, seq gap-free.

        The only thing memc cannot rebuild; every other asset is compiled from it. Written by
        `memc ingest`, the inbox sensor and dreaming; its data version is the head seq (the
        watermark every view is built against)."""
        stats = memc.ledger().stats()
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


ASSETS = [ledger]

"""The memory units view: one speaker's turns on one topic across sessions, grouped from the
evidence index's vectors (views/units.py); the context compiler expands a hit into its unit
(query/units.py). Unpartitioned: a unit spans sessions and days, so it is regrouped whole, in
well under a second per thousand turns."""

import dagster as dg

import views.units
from assets.columns import column_metadata, field_comments
from catalog.keys import EVIDENCE_INDEX, MEMORY_UNITS, RETRIEVAL_GROUP
from catalog.resources import MemcResource
from memc.watermark import write_watermark
from views.build import vector_store
from views.units import UNITS_VERSION, build_units


@dg.asset(
    key=MEMORY_UNITS,
    deps=[EVIDENCE_INDEX],
    group_name=RETRIEVAL_GROUP,
    kinds={"parquet"},
    code_version=UNITS_VERSION,
    metadata=column_metadata(views.units.UNITS_SCHEMA, field_comments(views.units)),
)
def memory_units(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
    """Consolidated memory units: one speaker's conversation turns about one topic across
    sessions (average-linkage clustering of the turns' vectors within each speaker of each
    scope; kept when they span two sessions or more). Grain: one row per unit: its member entry
    ids in time order (pointers, never text), sessions spanned, first and last turn's time. The
    context compiler expands a top hit into the other turns of its unit, fetched from the
    evidence index under the asker's visibility, so one item carries evidence scattered across
    sessions. Rebuilt whole after each evidence index build."""

    home = memc.home
    stats = build_units(home, vector_store(home))
    watermark = (vector_store(home).read_watermark() or {}).get("watermark", 0)
    write_watermark(home.units, "memory_units", watermark, rows=stats["units"])
    memc.publish("units")
    context.log.info(f"memory units: {stats}")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": stats["units"],
            "turns": stats["turns"],
            "largest_unit": stats["largest"],
            "ledger_watermark": watermark,
            "path": dg.MetadataValue.path(stats["path"]),
        }
    )


ASSETS = [memory_units]

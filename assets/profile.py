"""Profile-guided views (PGO): the query log, the profile compiled from it, and the entity dossiers
promoted from the profile ahead of time (plain functions in views/profile.py and views/dossiers.py).

The query log is written by every compile, outside any Dagster run, so it is declared as an
external asset: it shows in the lineage (query_log -> query_profile -> entity_dossiers) but
Dagster neither materializes nor observes it. The profile is compiled daily (its automation
condition, orchestration/automation.py) and with the other views after each extraction pass;
the dossiers follow the profile and every state build, since they are only used while they
hold the state build the marts hold.
"""

import dagster as dg
import pyarrow.parquet as pq

import views.profile
from assets.columns import COLUMN_SCHEMA, column_metadata, field_comments, table_schema
from catalog.keys import (
    CONFLICTS,
    ENTITIES,
    ENTITY_DOSSIERS,
    ENTITY_GRAPH,
    GRAPH_POOL,
    PROFILE_GROUP,
    QUERY_LOG,
    QUERY_PROFILE,
    STATE_CURRENT,
)
from catalog.resources import MemcResource
from views.dossiers import DOSSIER_FILE, DOSSIER_VERSION, compile_dossiers
from views.profile import PROFILE_VERSION, compile_profile

query_log = dg.AssetSpec(
    QUERY_LOG,
    group_name=PROFILE_GROUP,
    kinds={"json"},
    description=(
        "Every compile of a context, one JSON line each in <home>/querylog/YYYY-MM-DD.jsonl: asker, scope, question, "
        "plan (routes, where state was read from), the subjects of the state facts returned, tokens, latency, "
        "watermarks; never the returned content. Written by the context compiler outside Dagster (an external "
        "asset: not materialized here). An erasure rewrites it like any file that may quote erased text."
    ),
)


@dg.asset(
    key=QUERY_PROFILE,
    deps=[QUERY_LOG, ENTITIES],
    group_name=PROFILE_GROUP,
    kinds={"parquet"},
    code_version=PROFILE_VERSION,
    metadata=column_metadata(views.profile.PROFILE_SCHEMA, field_comments(views.profile)),
)
def query_profile(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
    """What is asked about. Grain: one row per entity per scope asked about by at least one
    compile in the last 30 days, ranked: how many compiles asked about it (`asked`: the question
    names it, by its name or an alias in the entities mart, or a state fact about it was
    returned), how many of those returned a fact about it (`answered`), how many distinct askers
    (a count, never names), its share of all compiles, first and last asked. Holds no question
    text. The dossiers promote its head ahead of time.

    Beside it, evidence usage (`evidence_usage.parquet`): one row per ledger entry a context
    showed in the window, how often and when last (entry ids only), from which the compiler's
    decay setting counts an entry's age (QueryConfig.decay_weight)."""

    stats = compile_profile(memc.home)
    memc.publish("profile")
    context.log.info(f"query profile: {stats['entities']} entities from {stats['compiles']} compiles")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": stats["entities"],
            "compiles": stats["compiles"],
            "entries_shown": stats["entries_shown"],
            "compiles_served_by_dossiers": stats["from_dossier"],
            "window_days": stats["window_days"],
            "log_files": stats["log_files"],
            "log_bytes": stats["log_bytes"],
            "most_asked": dg.MetadataValue.md("\n".join(f"- {t}" for t in stats["top"]) or "none"),
            "path": dg.MetadataValue.path(stats["path"]),
        }
    )


@dg.asset(
    key=ENTITY_DOSSIERS,
    deps=[QUERY_PROFILE, STATE_CURRENT, CONFLICTS, ENTITY_GRAPH],
    group_name=PROFILE_GROUP,
    kinds={"parquet"},
    code_version=DOSSIER_VERSION,
    pool=GRAPH_POOL,  # it opens the Kùzu graph for the neighbours: not beside its writer
)
def entity_dossiers(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
    """Dossiers for the entities asked about most (the profile's top 20 asked about at least
    twice), compiled ahead of time. Grain: one row per hot entity: every state_current row about
    it (visibility and closed_for included: the compiler filters them per asker), its conflicts
    rows, and its 1-hop neighbours in the entity graph with the edge evidence; beside them the
    index of every subject name in state_current. The context compiler reads a dossier instead
    of scanning state_current when every subject a question names has one and the dossiers hold
    the state build the marts hold (watermark, build time, files): the same rows, the same answer."""

    stats = compile_dossiers(memc.home)
    memc.publish("profile")
    # The dossiers' fact and conflict columns carry the state marts' columns, so their column
    # table is read from the file just written (a footer read, well under 10 ms).
    written = pq.read_schema(memc.home.dossiers / DOSSIER_FILE)
    context.log.info(f"entity dossiers: {stats['dossiers']} ({stats['facts']} facts) at ledger watermark {stats['ledger_watermark']}")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": stats["dossiers"],
            COLUMN_SCHEMA: table_schema(written.remove_metadata()),
            "facts": stats["facts"],
            "conflicts": stats["conflicts"],
            "subject_names": stats["subject_names"],
            "entities": dg.MetadataValue.md("\n".join(f"- {e}" for e in stats["entities"]) or "none"),
            "neighbours": stats["graph"],
            "ledger_watermark": stats["ledger_watermark"],
            "path": dg.MetadataValue.path(stats["path"]),
        }
    )


SOURCES = [query_log]
ASSETS = [query_profile, entity_dossiers]

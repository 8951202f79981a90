"""The entity graph (Kùzu) and dreaming: PageRank and communities written back to the ledger with lineage."""

import dagster as dg

from catalog.keys import CENTRALITY, ENTITIES, ENTITY_GRAPH, GRAPH_GROUP, GRAPH_POOL, INTERACTIONS
from catalog.resources import MemcResource
from memc.watermark import read_watermark, write_watermark
from views.build import build_graph, dream_home
from views.dreaming import PRODUCER, PRODUCER_VERSION

GRAPH_BUILDER_VERSION = "entity-graph-2"

# The graph marts under dbt_project/models/marts/graph/ (dbt asset keys are the model names).
GRAPH_MARTS = [dg.AssetKey(n) for n in ("graph_entries", "graph_sessions", "graph_mentions", "graph_relations")]


@dg.asset(
    key=ENTITY_GRAPH,
    deps=[ENTITIES, INTERACTIONS, *GRAPH_MARTS],
    group_name=GRAPH_GROUP,
    kinds={"kuzu"},
    code_version=GRAPH_BUILDER_VERSION,
    pool=GRAPH_POOL,
)
def entity_graph(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
    """Who and what memc knows, as a graph bulk-loaded from the dbt marts into a fresh Kùzu
    database that is swapped in whole. Nodes: Entity (one per entity per scope), Session (one per
    conversation per scope), Entry (one per ledger entry but erasures; ids and times, no text).
    Edges: INTERACTS (who answered whom, weight, first/last time; stored in both directions),
    RELATES (a current claim whose object is an entity, with its valid time and visibility),
    MENTIONS (entry -> entity it mentions), IN_SESSION (entry -> session)."""

    home = memc.home
    stats = build_graph(home)
    state = read_watermark(home.warehouse) or {"watermark": 0}
    write_watermark(home.graph, "entity_graph", state["watermark"], **stats)
    memc.publish("graph")
    context.log.info(f"entity graph: {stats}")
    return dg.MaterializeResult(
        metadata={
            "nodes": stats["nodes"],
            "edges": stats["edges"],
            **{f"rows/{t}": n for t, n in stats["tables"].items()},
            "graph_version": stats["graph_version"],
            "path": dg.MetadataValue.path(stats["path"]),
            "ledger_watermark": state["watermark"],
        }
    )


@dg.asset(key=CENTRALITY, deps=[ENTITY_GRAPH], group_name=GRAPH_GROUP, kinds={"kuzu"}, code_version=f"{PRODUCER}-{PRODUCER_VERSION}", pool=GRAPH_POOL)
def centrality(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
    """Dreaming: PageRank and Louvain communities over each scope's interaction graph (Kùzu's algo
    extension), written back to the ledger as derived claims ("claim: X centrality = 0.0873;
    graph: interactions ...; ledger watermark: ...; producer: dreaming 1.2", and "claim: X
    community = Y's circle (n members)") whose derived_from names the interaction evidence and
    whose visibility is no broader than every input's. Grain: one derived entry per entity per
    algorithm per change of what it says: a value the ledger already holds for the entity (the
    same rank, the same community, seen by the same principals) is not restated when a new graph
    version computes it again, and re-running on the same inputs appends nothing (the watermark is
    the inputs' highest seq, not the ledger head). Runs nightly by its automation condition on the
    dreaming cron (memc.toml dreaming_cron, 03:00 UTC by default; the daemon of `memc up`
    evaluates it): once per tick, when the entity graph exists and nothing upstream is running;
    its freshness policy expects it within `dreaming` minutes of the tick (60 by default). And on
    demand: `memc dream`, or materialize this asset. The schedule nightly_dreaming is stopped on
    purpose (it would recompile everything upstream first)."""

    ledger = memc.ledger()
    entries, info = dream_home(memc.home)
    result = ledger.append(entries)
    by_kind: dict[str, int] = {}
    for e in entries:
        by_kind[e.attributes["predicate"]] = by_kind.get(e.attributes["predicate"], 0) + 1
    context.log.info(
        f"dreaming: {result.appended} derived claims appended, {result.duplicates} already present, {info['unchanged']} held unchanged"
    )
    return dg.MaterializeResult(
        metadata={
            "derived_claims": len(entries),
            "centrality_claims": by_kind.get("centrality", 0),
            "community_claims": by_kind.get("community", 0),
            "appended": result.appended,
            "already_present": result.duplicates,
            "unchanged": info["unchanged"],
            "scopes": info["scopes"],
            "ledger_head": result.head,
        }
    )


ASSETS = [entity_graph, centrality]

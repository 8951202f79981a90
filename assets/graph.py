"""The entity graph (Kùzu) and dreaming: PageRank written back to the ledger with lineage."""

import dagster as dg
import pyarrow.parquet as pq

from memc.watermark import read_watermark, write_watermark
from orchestration.keys import CENTRALITY, ENTITIES, ENTITY_GRAPH, GRAPH_GROUP, INTERACTIONS
from orchestration.resources import MemcResource
from views.dreaming import PRODUCER, PRODUCER_VERSION, centrality_entries

GRAPH_BUILDER_VERSION = "entity-graph-1"


@dg.asset(key=ENTITY_GRAPH, deps=[ENTITIES, INTERACTIONS], group_name=GRAPH_GROUP, kinds={"kuzu"}, code_version=GRAPH_BUILDER_VERSION)
def entity_graph(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
    """Entities (per scope) and who-talked-with-whom edges, bulk-loaded from the dbt marts into a
    fresh Kùzu database that is swapped in whole. Grain: one node per entity, one INTERACTS edge
    per direction per pair of speakers with its weight, first and last time, and evidence entry
    ids (stored both ways: interactions are symmetric)."""
    from views.graph import KuzuGraphStore, both_directions

    home = memc.home
    entities = pq.read_table(home.marts / "entities.parquet")
    interactions = pq.read_table(home.marts / "interactions.parquet")
    store = KuzuGraphStore(str(home.graph / "kuzu"))
    try:
        stats = store.rebuild(entities, both_directions(interactions))
    finally:
        store.close()
    state = read_watermark(home.warehouse) or {"watermark": 0}
    write_watermark(home.graph, "entity_graph", state["watermark"], **stats)
    return dg.MaterializeResult(metadata={**stats, "ledger_watermark": state["watermark"]})


@dg.asset(key=CENTRALITY, deps=[ENTITY_GRAPH], group_name=GRAPH_GROUP, kinds={"kuzu"}, code_version=f"{PRODUCER}-{PRODUCER_VERSION}")
def centrality(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
    """Dreaming: PageRank over each scope's interaction graph (Kùzu's algo extension), written
    back to the ledger as derived claims ("claim: X centrality = 0.0873; graph: ...; ledger
    watermark: ...; producer: dreaming 1.0") whose derived_from names the interaction evidence
    and whose visibility is no broader than every input's. Grain: one derived entry per entity
    per graph version; re-running on the same inputs appends nothing."""
    from views.graph import KuzuGraphStore

    home = memc.home
    ledger = memc.ledger()
    entities = pq.read_table(home.marts / "entities.parquet")
    interactions = pq.read_table(home.marts / "interactions.parquet")
    store = KuzuGraphStore(str(home.graph / "kuzu"))
    try:
        scopes = sorted(set(interactions.column("scope").to_pylist()))
        ranks = {scope: store.pagerank(scope) for scope in scopes}
    finally:
        store.close()
    evidence = {e for ev in interactions.column("evidence").to_pylist() for e in ev}
    seq_of = {
        r["entry_id"]: r["seq"]
        for r in ledger.read(["entry_id", "seq"]).to_pylist()
        if r["entry_id"] in evidence
    }
    entries = centrality_entries(interactions, entities, ranks, seq_of)
    result = ledger.append(entries)
    context.log.info(f"dreaming: {result.appended} derived claims appended, {result.duplicates} already present")
    return dg.MaterializeResult(
        metadata={
            "derived_claims": len(entries),
            "appended": result.appended,
            "already_present": result.duplicates,
            "scopes": len(scopes),
            "ledger_head": result.head,
        }
    )

ASSETS = [entity_graph, centrality]

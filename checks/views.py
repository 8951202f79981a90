"""Checks on the retrieval and graph views and on dreaming's write-back (the audits in views/audit.py)."""

import dagster as dg
import pyarrow.compute as pc

from catalog.keys import CENTRALITY, ENTITY_GRAPH, EVIDENCE_INDEX, MEMORY_UNITS
from catalog.resources import MemcResource
from checks import audit_result
from memc.atomic import read_parquet
from views import embedder
from views.audit import derived_claims_sound as audit_derived
from views.audit import evidence_rows_match, graph_counts_match, graph_traces_to_ledger, vectors_sound
from views.build import expected_rows, graph_store, read_graph_marts, vector_store
from views.dreaming import PRODUCER
from views.units import KINDS as UNIT_KINDS
from views.units import UNITS_FILE, units_sound


@dg.asset_check(
    asset=EVIDENCE_INDEX,
    blocking=True,
    description="The index holds exactly the rows its sources render to at its watermark: every retrievable ledger entry's chunks and every claim's sentence, no more, no fewer.",
)
def evidence_index_matches_sources(memc: MemcResource) -> dg.AssetCheckResult:
    home = memc.home
    store = vector_store(home)
    watermark = (store.read_watermark() or {}).get("watermark", 0)
    audit = evidence_rows_match(store.ids(), expected_rows(home, watermark))
    audit.metadata["ledger_watermark"] = watermark
    return audit_result(audit)


@dg.asset_check(
    asset=EVIDENCE_INDEX,
    blocking=True,
    description="No null, wrong-dimension, non-finite or non-unit vectors; the table's embedding model is the code's; the full-text index covers every row.",
)
def evidence_vectors_sound(memc: MemcResource) -> dg.AssetCheckResult:
    health = vector_store(memc.home).health()
    # Read at call time: the version the code expects now (an upgrade changes it; the backfill test patches it).
    return audit_result(vectors_sound(health, model_version=embedder.EMBEDDING_MODEL_VERSION, dim=embedder.EMBEDDING_DIM))


@dg.asset_check(
    asset=ENTITY_GRAPH,
    blocking=True,
    description="Every node and edge table of the graph has as many rows as the mart it was loaded from (interactions twice: both directions).",
)
def entity_graph_matches_marts(memc: MemcResource) -> dg.AssetCheckResult:
    home = memc.home
    store = graph_store(home)
    try:
        counts = store.counts()
    finally:
        store.close()
    return audit_result(graph_counts_match(counts, read_graph_marts(home)))


@dg.asset_check(
    asset=ENTITY_GRAPH,
    blocking=True,
    description="Every graph node (entity, session, entry) traces to at least one ledger entry, and every entry it names is in the ledger.",
)
def entity_graph_traces_to_ledger(memc: MemcResource) -> dg.AssetCheckResult:
    home = memc.home
    store = graph_store(home)
    try:
        evidence = store.node_evidence()
    finally:
        store.close()
    ids = set(memc.ledger().read(["entry_id"]).column("entry_id").to_pylist())
    return audit_result(graph_traces_to_ledger(evidence, ids))


@dg.asset_check(
    asset=CENTRALITY,
    blocking=True,
    description="Every derived claim from dreaming names an existing graph node and a watermark equal to its inputs' highest seq and not above the ledger head.",
)
def derived_claims_sound(memc: MemcResource) -> dg.AssetCheckResult:
    home = memc.home
    ledger = memc.ledger()
    table = ledger.read(["seq", "entry_id", "kind", "producer", "attributes", "derived_from", "watermark"])
    seq_of = dict(zip(table.column("entry_id").to_pylist(), table.column("seq").to_pylist()))
    # dreaming's entries picked in Arrow: dicts of every entry were ~0.15 s at 100k entries
    ours = pc.and_(pc.equal(table.column("kind"), "derived_claim"), pc.equal(table.column("producer"), PRODUCER))
    derived = table.filter(pc.fill_null(ours, False)).to_pylist()
    nodes: set[str] = set()
    if derived:  # the graph's nodes are read only when there is a claim to check against them
        store = graph_store(home)
        try:
            nodes = set(store.node_evidence().get("Entity", {}))
        finally:
            store.close()
    return audit_result(audit_derived(derived, nodes, seq_of, ledger.head()))


@dg.asset_check(
    asset=MEMORY_UNITS,
    blocking=True,
    description="Every unit's turns exist in the evidence index and span two sessions or more; no turn is in two units; each unit id is the hash of its scope, speaker and members.",
)
def memory_units_sound(memc: MemcResource) -> dg.AssetCheckResult:
    home = memc.home
    indexed = set(vector_store(home).kind_rows(UNIT_KINDS, columns=["entry_id"]).column("entry_id").to_pylist())
    return audit_result(units_sound(read_parquet(home.units / UNITS_FILE), indexed))


CHECKS = [
    memory_units_sound,
    evidence_index_matches_sources,
    evidence_vectors_sound,
    entity_graph_matches_marts,
    entity_graph_traces_to_ledger,
    derived_claims_sound,
]

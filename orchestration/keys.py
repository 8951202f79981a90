"""Every asset key, declared once. The ledger's key equals its dbt source's ``meta.dagster.asset_key``
and the dbt marts keep their model names, so lineage needs no hand-written deps."""

import dagster as dg

LEDGER = dg.AssetKey("ledger")
CLAIMS = dg.AssetKey("claims")
EVIDENCE_INDEX = dg.AssetKey("evidence_index")
ENTITY_GRAPH = dg.AssetKey("entity_graph")
CENTRALITY = dg.AssetKey("centrality")

# dbt models (keys come from the manifest; named here for Python assets downstream of them)
STATE_CURRENT = dg.AssetKey("state_current")
ENTITIES = dg.AssetKey("entities")
INTERACTIONS = dg.AssetKey("interactions")

# groups shown in the UI's asset graph, in data-flow order
EVIDENCE_GROUP = "evidence"
CLAIMS_GROUP = "claims"
STATE_GROUP = "state"
RETRIEVAL_GROUP = "retrieval"
GRAPH_GROUP = "graph"

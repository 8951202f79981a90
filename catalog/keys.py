"""Every asset key, declared once. The ledger's key equals its dbt source's ``meta.dagster.asset_key``
and the dbt marts keep their model names, so lineage needs no hand-written deps."""

import dagster as dg

LEDGER = dg.AssetKey("ledger")
CLAIMS = dg.AssetKey("claims")
ENTITY_ALIASES = dg.AssetKey("entity_aliases")
EVIDENCE_INDEX = dg.AssetKey("evidence_index")
MEMORY_UNITS = dg.AssetKey("memory_units")
ENTITY_GRAPH = dg.AssetKey("entity_graph")
CENTRALITY = dg.AssetKey("centrality")
SKILLS = dg.AssetKey("skills")  # procedural memory, mined from the ledger's trajectories

# dbt models (keys come from the manifest; named here for Python assets downstream of them)
STATE_CURRENT = dg.AssetKey("state_current")
ENTITIES = dg.AssetKey("entities")
INTERACTIONS = dg.AssetKey("interactions")
CONFLICTS = dg.AssetKey("conflicts")

# Profile-guided views: the query log (written by every compile, outside Dagster), the profile
# compiled from it, and the dossiers promoted from the profile.
QUERY_LOG = dg.AssetKey("query_log")
QUERY_PROFILE = dg.AssetKey("query_profile")
ENTITY_DOSSIERS = dg.AssetKey("entity_dossiers")

# groups shown in the UI's asset graph, in data-flow order
EVIDENCE_GROUP = "evidence"
CLAIMS_GROUP = "claims"
STATE_GROUP = "state"
RETRIEVAL_GROUP = "retrieval"
GRAPH_GROUP = "graph"
PROFILE_GROUP = "profile"
SKILLS_GROUP = "skills"

# Concurrency pools (instance-wide, one step at a time each: orchestration/execution.py writes
# their limit into dagster.yaml). DuckDB's warehouse file has one writer, dbt; Kùzu allows one
# read-write process and no reader beside it, so its writers and its reader share one pool.
WAREHOUSE_POOL = "duckdb_warehouse"
GRAPH_POOL = "kuzu_graph"

"""The composition root: assemble assets, checks, resources, sensors and schedules. No logic."""

import dagster as dg

from assets.claims import claims
from assets.graph import centrality, entity_graph
from assets.ledger import ledger
from assets.retrieval import evidence_index
from assets.state import dbt_resource, state_models
from checks.claims import claims_provenance
from checks.ledger import ledger_integrity
from orchestration.resources import EmbedderResource, MemcResource
from orchestration.schedules import nightly_dreaming
from orchestration.keys import LEDGER
from orchestration.sensors import ingest_inbox, inbox_sensor

# Records the ledger's head as the source asset's data version (what `memc build` runs first).
observe_ledger = dg.define_asset_job("observe_ledger", selection=dg.AssetSelection.assets(LEDGER))


def build_definitions(home_dir: str | None = None) -> dg.Definitions:
    return dg.Definitions(
        assets=[ledger, claims, state_models(), evidence_index, entity_graph, centrality],
        asset_checks=[ledger_integrity, claims_provenance],
        jobs=[ingest_inbox, observe_ledger],
        sensors=[inbox_sensor],
        schedules=[nightly_dreaming],
        resources={"memc": MemcResource(home_dir=home_dir), "embedder": EmbedderResource(), "dbt": dbt_resource()},
        # In-process: each step of the multiprocess executor re-imports the code location (5-13 s
        # a step on 2 cores; FINDINGS.md).
        executor=dg.in_process_executor,
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions()

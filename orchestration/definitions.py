"""The composition root: assemble assets, checks, resources, sensors and schedules. No logic.

Each asset or check module exports its definitions as ``ASSETS`` or ``CHECKS``; the dbt models
come from a cached factory, because loading the manifest costs about 3 s.
"""

import dagster as dg

import assets.claims
import assets.graph
import assets.ledger
import assets.retrieval
import checks.claims
import checks.ledger
import checks.views
from assets.state import dbt_resource, state_models
from orchestration.keys import LEDGER
from orchestration.resources import EmbedderResource, MemcResource
from orchestration.schedules import nightly_dreaming
from orchestration.sensors import inbox_sensor, ingest_inbox

# Records the ledger's head as the source asset's data version (what `memc build` runs first).
observe_ledger = dg.define_asset_job("observe_ledger", selection=dg.AssetSelection.assets(LEDGER))


def build_definitions(home_dir: str | None = None) -> dg.Definitions:
    return dg.Definitions(
        assets=[
            *assets.ledger.ASSETS,
            *assets.claims.ASSETS,
            state_models(),
            *assets.retrieval.ASSETS,
            *assets.graph.ASSETS,
        ],
        asset_checks=[*checks.ledger.CHECKS, *checks.claims.CHECKS, *checks.views.CHECKS],
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

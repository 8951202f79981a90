"""The composition root: assemble assets, checks, resources, sensors and schedules, and apply
the platform's policies (automation conditions, freshness) once. No logic.

Each asset or check module exports its definitions as ``ASSETS`` or ``CHECKS``; the dbt models
come from a cached factory, because loading the manifest costs about 3 s. Settings (freshness
targets, crons, sensor intervals, the executor) come from the memory home's memc.toml and the
environment, read here, when the code location loads (orchestration/settings.py).
"""

import dagster as dg

import orchestration.notices  # noqa: F401  first: the modules below emit Dagster's beta notices as they load
import assets.claims
import assets.graph
import assets.ledger
import assets.profile
import assets.retrieval
import assets.skills
import assets.units
import checks.claims
import checks.ledger
import checks.profile
import checks.quality
import checks.skills
import checks.views
from assets.state import dbt_resource, state_models
from memc.home import MemcHome
from orchestration.automation import apply_policies, automation_sensor, lag_targets
from orchestration.execution import executor, with_backfill_policy
from catalog.keys import LEDGER
from catalog.resources import EmbedderResource, MemcResource
from orchestration.schedules import (
    compact_ledger,
    compact_views,
    compaction_schedule,
    ledger_compaction_schedule,
    nightly_dreaming,
)
from orchestration.sensors import ingest_inbox, make_inbox_sensor, make_ledger_head_sensor, make_view_lag_sensor
from orchestration.settings import load_settings

# Records the ledger's head as the source asset's data version (what `memc build` runs first).
observe_ledger = dg.define_asset_job("observe_ledger", selection=dg.AssetSelection.assets(LEDGER))


def build_definitions(home_dir: str | None = None) -> dg.Definitions:
    settings = load_settings(MemcHome.resolve(home_dir).root)
    views = [*with_backfill_policy(assets.claims.ASSETS, settings.execution), state_models(), *assets.retrieval.ASSETS, *assets.units.ASSETS, *assets.graph.ASSETS, *assets.profile.ASSETS, *assets.skills.ASSETS]
    return dg.Definitions(
        assets=[*assets.ledger.ASSETS, *assets.profile.SOURCES, *apply_policies(views, settings)],
        asset_checks=[*checks.ledger.CHECKS, *checks.claims.CHECKS, *checks.views.CHECKS, *checks.quality.CHECKS, *checks.quality.lag_checks(lag_targets(settings)), *checks.profile.CHECKS, *checks.skills.CHECKS],
        jobs=[ingest_inbox, observe_ledger, compact_views, compact_ledger],
        sensors=[
            make_inbox_sensor(min(15, settings.sensor_interval_seconds)),
            make_ledger_head_sensor(settings.sensor_interval_seconds),
            make_view_lag_sensor(lag_targets(settings), settings.sensor_interval_seconds),
            automation_sensor(settings),
        ],
        schedules=[nightly_dreaming, compaction_schedule(settings), ledger_compaction_schedule(settings)],
        resources={"memc": MemcResource(home_dir=home_dir), "embedder": EmbedderResource(), "dbt": dbt_resource()},
        # For the runs the daemon and the UI launch (in-process by default; memc.toml
        # [execution]). `memc build` runs in-process whatever this is (orchestration/runner.py).
        executor=executor(settings.execution),
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions()

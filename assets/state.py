"""The dbt state models (staging over the ledger's and claims' Parquet, the marts)."""

import functools
import json
import os
import sys
from pathlib import Path

import dagster as dg

from claims.extract import RULES
from memc.watermark import write_watermark
from orchestration.dbt_project import dbt_project
from orchestration.keys import STATE_GROUP
from orchestration.resources import MemcResource


@functools.cache
def state_models():
    """Built on first use: importing dagster_dbt and loading the manifest costs about 3 s."""
    from dagster_dbt import DagsterDbtTranslator, DagsterDbtTranslatorSettings, DbtCliResource, dbt_assets

    class MemcTranslator(DagsterDbtTranslator):
        def get_asset_spec(self, manifest, unique_id, project):
            spec = super().get_asset_spec(manifest, unique_id, project)
            if self.get_resource_props(manifest, unique_id)["resource_type"] == "model":
                spec = spec.replace_attributes(group_name=STATE_GROUP)
            return spec

    project = dbt_project()

    @dbt_assets(
        manifest=project.manifest_path,
        project=project,
        dagster_dbt_translator=MemcTranslator(settings=DagsterDbtTranslatorSettings(enable_asset_checks=True)),
    )
    def state_dbt_models(context: dg.AssetExecutionContext, dbt: DbtCliResource, memc: MemcResource):
        home = memc.home
        home.marts.mkdir(parents=True, exist_ok=True)
        # The dbt profile and sources read MEMC_HOME; dbt runs as a child process of this one.
        os.environ["MEMC_HOME"] = str(home.root)
        watermark = memc.ledger().head()
        dbt_vars = {"watermark": watermark, "extractor_key": RULES.key}
        invocation = dbt.cli(["build", "--vars", json.dumps(dbt_vars)], context=context)
        for event in invocation.stream():
            if isinstance(event, dg.Output | dg.MaterializeResult):
                event = event.with_metadata({**(event.metadata or {}), "ledger_watermark": watermark})
            yield event
        write_watermark(home.warehouse, "state", watermark, extractor=RULES.key)

    return state_dbt_models


def dbt_resource():
    from dagster_dbt import DbtCliResource

    # The dbt beside this interpreter: `memc` is often run without activating its virtualenv.
    dbt = Path(sys.executable).with_name("dbt")
    return DbtCliResource(project_dir=dbt_project(), dbt_executable=str(dbt) if dbt.exists() else "dbt")

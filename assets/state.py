"""The dbt state models: staging over the ledger's and claims' Parquet, the bi-temporal fold
(intermediate, incremental where the ledger only grows) and the marts analysts query."""

import functools

import dagster as dg
import duckdb

from catalog.dbt_build import (
    dbt_build_args,
    dbt_target,
    dbt_test_description,
    extractor_key,
    fold_version,
    full_refresh_reason,
    seed_partial_parse,
    warehouse_columns,
)
from catalog.dbt_child import start_zygote
from catalog.dbt_project import dbt_executable, dbt_home_environ, dbt_project, project_fingerprint
from catalog.keys import STATE_GROUP, WAREHOUSE_POOL
from catalog.resources import MemcResource
from memc.watermark import write_watermark


def _event_node(manifest: dict, metadata: dict) -> dict | None:
    uid = metadata.get("unique_id")
    uid = getattr(uid, "value", uid)
    return manifest["nodes"].get(uid) if isinstance(uid, str) else None


def _typed_schema(columns: list[tuple[str, str]], node: dict) -> dg.TableSchema:
    """The built relation's columns with their warehouse types, and the yml's descriptions."""
    text = {name.lower(): c.get("description") or None for name, c in (node.get("columns") or {}).items()}
    return dg.TableSchema(columns=[dg.TableColumn(name=n, type=t, description=text.get(n.lower())) for n, t in columns])


@functools.cache
def state_models():
    """Built on first use: importing dagster_dbt and loading the manifest costs about 3 s."""
    from dagster_dbt import DagsterDbtTranslator, DagsterDbtTranslatorSettings, DbtCliResource, dbt_assets  # lazy: 2.5 s, paid only when definitions are built

    class MemcTranslator(DagsterDbtTranslator):
        def get_asset_spec(self, manifest, unique_id, project):
            spec = super().get_asset_spec(manifest, unique_id, project)
            if self.get_resource_props(manifest, unique_id)["resource_type"] == "model":
                spec = spec.replace_attributes(group_name=STATE_GROUP)
            return spec

        def get_asset_check_spec(self, asset_spec, manifest, unique_id, project):
            spec = super().get_asset_check_spec(asset_spec, manifest, unique_id, project)
            if spec is None or spec.description:
                return spec
            return dg.AssetCheckSpec(  # a record without replace_attributes in Dagster 1.13
                name=spec.name,
                asset=spec.asset_key,
                description=dbt_test_description(manifest, manifest["nodes"][unique_id]),
                additional_deps=spec.additional_deps,
                metadata=spec.metadata,
                blocking=spec.blocking,
                automation_condition=spec.automation_condition,
            )

    project = dbt_project()

    @dbt_assets(
        manifest=project.manifest_path,
        project=project,
        dagster_dbt_translator=MemcTranslator(settings=DagsterDbtTranslatorSettings(enable_asset_checks=True)),
        pool=WAREHOUSE_POOL,  # the warehouse's one writer, across runs (catalog/keys.py)
    )
    def state_dbt_models(context: dg.AssetExecutionContext, dbt: DbtCliResource, memc: MemcResource):
        home = memc.home
        home.marts.mkdir(parents=True, exist_ok=True)
        watermark = memc.ledger().head()
        key = extractor_key()
        project = project_fingerprint()  # of the files this build runs (`memc build` compares it)
        reason = full_refresh_reason(home, watermark, key)
        if reason:
            context.log.info(f"full refresh of the incremental state models: {reason}")
        target = dbt_target(home, context.run_id)
        seed_partial_parse(target, project)
        # dbt runs as a child process of this one, forked warm from this process's zygote
        with dbt_home_environ(home.root, watermark, zygote=start_zygote()):
            invocation = dbt.cli(dbt_build_args(watermark, key, reason is not None), context=context, target_path=target)
        # The column tables get their types from the warehouse once dbt has finished: the dbt
        # child holds DuckDB's write lock for the whole build, so dagster-dbt's
        # fetch_column_metadata (one adapter query per model while dbt runs) would fail on the
        # lock for every model. Hence the events are held until dbt exits (the step reports them
        # together, as late as the last model) and one read-only query of information_schema
        # types every model: ~0.1 s on the demo home (26 relations, 2 busy cores).
        events, failure = [], None
        try:
            for event in invocation.stream():
                events.append(event)
        except Exception as e:  # dbt failed: report what it did build, then fail the step
            failure = e
        try:
            types = warehouse_columns(home.warehouse_db)
        except duckdb.Error as e:  # e.g. a process holding the write lock: no types this time
            context.log.warning(f"column types not read from the warehouse: {e}")
            types = {}
        for event in events:
            if isinstance(event, dg.Output | dg.MaterializeResult):
                extra = {"ledger_watermark": watermark, "full_refresh": reason or "no"}
                node = _event_node(invocation.manifest, event.metadata or {})
                if node and (columns := types.get((node["schema"], node.get("alias") or node["name"]))):
                    extra["dagster/column_schema"] = _typed_schema(columns, node)
                event = event.with_metadata({**(event.metadata or {}), **extra})
            yield event
        if failure is not None:
            raise failure
        write_watermark(home.warehouse, "state", watermark, extractor=key, fold=fold_version(), project=project)
        memc.publish("warehouse")

    return state_dbt_models


@functools.cache
def _memc_dbt_cli():
    import importlib.metadata

    from dagster_dbt import DbtCliResource  # lazy: as above
    from packaging import version

    class MemcDbtCli(DbtCliResource):
        """dagster-dbt's resource without two things it does before each dbt command that the
        state asset has no use for, about 4 s of CPU per dbt step on two cores (py-spy of a
        build of the sample corpus, whose builds of new entries run two dbt steps):

        - ``dbt --version`` in a child process (2.8 s, dbt's imports), to tell dbt Core from the
          Fusion engine: memc runs dbt-core, pinned, whose version its package metadata has;
        - a dbt adapter opened in this process (1.2 s: profile, project and every macro parsed),
          which dagster-dbt uses only to fetch row counts and column metadata while dbt runs;
          the state asset types the columns itself from the warehouse once dbt has exited."""

        @functools.cached_property
        def _cli_version(self) -> version.Version:
            return version.parse(importlib.metadata.version("dbt-core"))

        def _initialize_dbt_core_adapter(self, args):
            return None

    return MemcDbtCli


def dbt_resource():
    return _memc_dbt_cli()(project_dir=dbt_project(), dbt_executable=dbt_executable())

"""How launched runs execute: the executor, the claims' backfill policy and the instance's
concurrency block, from the ``[execution]`` settings (orchestration/settings.py). The composition
root applies the first two; the runner writes the third into the generated dagster.yaml.

``memc build`` and the other in-process entry points never use the executor here
(``execute_in_process`` always runs in the calling process); it is what the daemon's and the UI's
runs use under ``memc up``, a Celery worker pool, or Kubernetes (docs/scale.md).

The pools hold whichever executor runs the steps (in-process, multiprocess and Celery runs all
claim a pool slot per step before running it, through the instance): ``catalog.keys.WAREHOUSE_POOL``
(dbt, DuckDB's single writer) and ``catalog.keys.GRAPH_POOL`` (Kùzu: one read-write process, and
no reader beside it) each admit one step at a time across every run of the instance.
"""

from __future__ import annotations

import dagster as dg

from catalog.partitions import SINGLE_RUN
from orchestration.settings import Execution

# The extra that holds the distributed executors (pyproject.toml [project.optional-dependencies]).
EXTRA = "distributed"

# A finished run's pool slots are freed by the daemon's run monitoring this long after its end
# (a run killed with its process, or failed mid-step, would otherwise hold its slot for good).
FREE_SLOTS_AFTER_RUN_END_SECONDS = 30

# What the multiprocess executor's forkserver imports once, so that each step process forks with
# it loaded: the code location's modules, and dagster-dbt (2.7 s), which building the definitions
# imports in every step (assets/state.py imports it lazily, for the CLI's sake).
FORKSERVER_PRELOAD = ["orchestration.definitions", "dagster_dbt"]


def executor(execution: Execution) -> dg.ExecutorDefinition:
    """Dagster's executor for the setting, configured."""
    kind = execution.chosen_executor()
    if kind == "in_process":
        return dg.in_process_executor
    if kind == "multiprocess":
        # forkserver: each step process forks from a server that imported the code location once,
        # instead of a fresh interpreter importing it again per step (docs/scale.md, measured).
        return dg.multiprocess_executor.configured(
            {"max_concurrent": execution.max_concurrent, "start_method": {"forkserver": {"preload_modules": FORKSERVER_PRELOAD}}},
            name="multiprocess",
        )
    if kind == "celery":
        celery_executor = _optional("dagster_celery", "celery").celery_executor
        return celery_executor.configured({"broker": execution.broker, "backend": execution.backend}, name="celery")
    if kind == "k8s":
        k8s_job_executor = _optional("dagster_k8s", "k8s").k8s_job_executor
        return k8s_job_executor.configured(
            {"job_namespace": execution.namespace, "max_concurrent": execution.max_concurrent}, name="k8s"
        )
    raise ValueError(f"unknown executor {kind!r}")  # Execution refuses it first


def _optional(module: str, kind: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise RuntimeError(
            f"[execution] executor = {kind!r} needs {module.replace('_', '-')}: pip install 'memc[{EXTRA}]' ({exc})"
        ) from exc


def claims_backfill_policy(execution: Execution) -> dg.BackfillPolicy:
    """One run for a range of ledger days (what the in-process runner needs), or runs of
    ``days_per_run`` days each, which the run queue starts side by side."""
    if execution.days_per_run == 0:
        return SINGLE_RUN
    return dg.BackfillPolicy.multi_run(max_partitions_per_run=execution.days_per_run)


def with_backfill_policy(assets: list, execution: Execution) -> list:
    """The partitioned assets with the setting's backfill policy (the claims, by ledger day)."""
    policy = claims_backfill_policy(execution)
    return [
        a.with_attributes(backfill_policy=policy)
        if isinstance(a, dg.AssetsDefinition) and a.partitions_def is not None and a.backfill_policy != policy
        else a
        for a in assets
    ]


def instance_concurrency_yaml(execution: Execution) -> str:
    """The dagster.yaml block for the run queue and the pools."""
    return f"""\
# The run queue: {execution.max_concurrent_runs} run(s) at a time ([execution] max_concurrent_runs in memc.toml). A run
# peaks near 1 GB on a 2-core box. The pools below keep DuckDB's and Kùzu's single writers one step
# at a time across runs, whatever the executor: the dbt state models (pool duckdb_warehouse) and the
# graph's writer and readers (pool kuzu_graph) each hold a slot while their step runs.
concurrency:
  runs:
    max_concurrent_runs: {execution.max_concurrent_runs}
  pools:
    default_limit: 1
    granularity: op
# Frees the pool slots of a run that ended without releasing them (killed mid-step).
run_monitoring:
  enabled: true
  free_slots_after_run_end_seconds: {FREE_SLOTS_AFTER_RUN_END_SECONDS}
"""

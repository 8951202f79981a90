"""How launched runs execute: memc.toml's [execution] (and its environment variables) choose the
executor, the run queue, the pools' instance config and the claims' backfill policy; the composition
root applies them (orchestration/execution.py)."""

from __future__ import annotations

import os

import dagster as dg
import pytest

from catalog import keys
from orchestration.definitions import build_definitions
from orchestration.runner import dagster_yaml
from orchestration import settings
from orchestration.settings import Execution, load_settings


@pytest.fixture
def clean_env(monkeypatch):
    for name in list(os.environ):
        if name in ("MEMC_EXECUTOR", "MEMC_MAX_CONCURRENT", "MEMC_MAX_CONCURRENT_RUNS", "MEMC_DAYS_PER_RUN",
                    "MEMC_CELERY_BROKER", "MEMC_CELERY_BACKEND", "MEMC_K8S_NAMESPACE"):  # fmt: skip
            monkeypatch.delenv(name)
    return monkeypatch


def _home(tmp_path, toml: str = ""):
    home = tmp_path / "home"
    home.mkdir()
    if toml:
        (home / "memc.toml").write_text(toml)
    return home


def _executor(defs: dg.Definitions) -> dg.ExecutorDefinition:
    return defs.resolve_implicit_global_asset_job_def().executor_def


def _config(ex: dg.ExecutorDefinition) -> dict:
    """What ``configured`` fixed for the executor."""
    return ex.config_schema.resolve_config({}).value["config"]


def test_launched_runs_default_to_multiprocess_where_there_are_cores_and_one_run_at_a_time(tmp_path, clean_env):
    home = _home(tmp_path)
    assert load_settings(home).execution == Execution() and Execution().executor == "auto"
    assert 1 <= settings.usable_cores() <= (os.cpu_count() or 1)
    clean_env.setattr(settings, "usable_cores", lambda: 8)
    ex = _executor(build_definitions(str(home)))
    assert ex.name == "multiprocess" and _config(ex)["max_concurrent"] == 2
    # On a node of two (or three) cores, where a multiprocess run was measured 2.2x slower: in-process.
    clean_env.setattr(settings, "usable_cores", lambda: settings.MULTIPROCESS_MIN_CORES - 1)
    defs = build_definitions(str(home))
    assert _executor(defs).name == "in_process"
    assert Execution().max_concurrent_runs == 1
    claims = defs.resolve_asset_graph().get(keys.CLAIMS)
    assert claims.backfill_policy == dg.BackfillPolicy.single_run(), "a range of ledger days stays one run by default"


@pytest.mark.parametrize("kind", ["in_process", "multiprocess", "celery", "k8s"])
def test_each_executor_is_chosen_by_memc_toml(tmp_path, clean_env, kind):
    home = _home(tmp_path, f'[execution]\nexecutor = "{kind}"\nbroker = "redis://127.0.0.1:1/0"\nbackend = "redis://127.0.0.1:1/1"\n')
    ex = _executor(build_definitions(str(home)))
    assert ex.name == kind
    if kind == "multiprocess":
        config = _config(ex)
        assert config["max_concurrent"] == 2
        assert config["start_method"] == {"forkserver": {"preload_modules": ["orchestration.definitions", "dagster_dbt"]}}
    if kind == "celery":
        assert _config(ex)["broker"] == "redis://127.0.0.1:1/0"
    if kind == "k8s":
        from dagster_k8s import k8s_job_executor

        assert ex.executor_creation_fn is k8s_job_executor.executor_creation_fn
        assert _config(ex)["job_namespace"] == "memc"


def test_the_environment_wins_over_memc_toml_and_bad_values_are_refused(tmp_path, clean_env):
    home = _home(tmp_path, '[execution]\nexecutor = "celery"\nmax_concurrent = 3\ndays_per_run = 2\n')
    clean_env.setenv("MEMC_EXECUTOR", "in-process")
    clean_env.setenv("MEMC_MAX_CONCURRENT_RUNS", "4")
    got = load_settings(home).execution
    assert (got.executor, got.max_concurrent, got.max_concurrent_runs, got.days_per_run) == ("in_process", 3, 4, 2)
    clean_env.setenv("MEMC_EXECUTOR", "dask")
    with pytest.raises(ValueError, match="executor must be one of auto, in_process, multiprocess, celery, k8s, not 'dask'"):
        load_settings(home)
    clean_env.delenv("MEMC_EXECUTOR")
    clean_env.delenv("MEMC_MAX_CONCURRENT_RUNS")
    (home / "memc.toml").write_text("[execution]\nmax_concurent = 3\n")
    with pytest.raises(ValueError, match="no setting max_concurent"):
        load_settings(home)
    (home / "memc.toml").write_text("[execution]\nmax_concurrent_runs = 0\n")
    with pytest.raises(ValueError, match=r"memc\.toml: \[execution\] max_concurrent_runs must be at least 1, not 0"):
        load_settings(home)
    # Where a bad value came from is named, and the key, whatever is wrong with it.
    (home / "memc.toml").write_text("[automation]\ndreaming = 1\n")
    with pytest.raises(ValueError, match=r"memc\.toml: \[automation\] has no setting dreaming \(known: dreaming_cron,"):
        load_settings(home)
    (home / "memc.toml").write_text("")
    clean_env.setenv("MEMC_MAX_CONCURRENT", "two")
    with pytest.raises(ValueError, match=r"\$MEMC_MAX_CONCURRENT: \[execution\] max_concurrent: .*valid integer.*, not 'two'"):
        load_settings(home)


def test_days_per_run_fans_the_claims_out_into_runs_of_that_many_days(tmp_path, clean_env):
    home = _home(tmp_path, "[execution]\ndays_per_run = 3\n")
    graph = build_definitions(str(home)).resolve_asset_graph()
    assert graph.get(keys.CLAIMS).backfill_policy == dg.BackfillPolicy.multi_run(max_partitions_per_run=3)
    assert graph.get(keys.ENTITY_ALIASES).backfill_policy is None  # unpartitioned assets are left as they are


def test_duckdb_and_kuzu_users_are_in_their_pools(tmp_path, clean_env):
    """dbt is the warehouse's one writer; the graph's writer, dreaming (read-write for PageRank)
    and the dossiers (which open the graph) never run beside each other."""
    job = build_definitions(str(_home(tmp_path))).resolve_implicit_global_asset_job_def()
    pools = {}
    for node in job.graph.node_defs:
        pools.setdefault(node.pool, set()).add(node.name)
    dbt = [n for n in job.graph.node_defs if n.name == "state_dbt_models"]
    assert dbt and dbt[0].pool == keys.WAREHOUSE_POOL
    assert pools[keys.WAREHOUSE_POOL] == {"state_dbt_models"}
    assert pools[keys.GRAPH_POOL] == {"entity_graph", "centrality", "entity_dossiers"}


def test_the_generated_dagster_yaml_sets_the_run_queue_and_the_pools(tmp_path, monkeypatch):
    """The instance memc writes for a home loads, with the limits the settings name."""
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # where its event log lives (orchestration/eventlog.py)
    (tmp_path / "dagster.yaml").write_text(dagster_yaml(Execution(max_concurrent_runs=3)))
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        concurrency = instance.get_concurrency_config()
        assert concurrency.run_queue_config.max_concurrent_runs == 3
        assert concurrency.pool_config.default_pool_limit == 1
        assert concurrency.pool_config.pool_granularity.value == "op"
        assert instance.event_log_storage.supports_global_concurrency_limits
        assert instance.run_monitoring_settings["free_slots_after_run_end_seconds"] == 30
        assert instance.telemetry_enabled is False


@pytest.mark.parametrize("days_per_run, runs", [(0, [("2024-06-01", "2024-06-03")]), (1, [("2024-06-01",), ("2024-06-02",), ("2024-06-03",)]), (2, [("2024-06-01", "2024-06-02"), ("2024-06-03",)])])
def test_dagsters_planner_fans_missing_days_out_by_days_per_run(tmp_path, clean_env, days_per_run, runs):
    """What the automation sensor and a UI backfill launch for three missing ledger days: one run
    over the range by default, or runs of ``days_per_run`` days (Dagster's own planner)."""
    from dagster._core.definitions.automation_tick_evaluation_context import build_run_requests_with_backfill_policies
    from dagster._core.definitions.events import AssetKeyPartitionKey
    from dagster._core.definitions.partitions.context import partition_loading_context

    from catalog.partitions import LEDGER_DAYS, RANGE_END_TAG, RANGE_START_TAG

    home = _home(tmp_path, f"[execution]\ndays_per_run = {days_per_run}\n")
    graph = build_definitions(str(home)).resolve_asset_graph()
    days = ["2024-06-01", "2024-06-02", "2024-06-03"]
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions(LEDGER_DAYS.name, days)
        with partition_loading_context(dynamic_partitions_store=instance):
            requests = build_run_requests_with_backfill_policies([AssetKeyPartitionKey(keys.CLAIMS, d) for d in days], graph, instance)

    def span(r: dg.RunRequest) -> tuple[str, ...]:
        if r.partition_key:
            return (r.partition_key,)
        first, last = r.tags[RANGE_START_TAG], r.tags[RANGE_END_TAG]
        return (first,) if first == last else (first, last)

    assert sorted(span(r) for r in requests) == runs
    assert all(list(r.asset_selection) == [keys.CLAIMS] for r in requests)


def test_a_killed_builds_pool_slot_is_freed_when_its_run_is_marked_failed(tmp_path, monkeypatch):
    """An in-process build killed mid-dbt holds the warehouse slot: every later run's dbt step
    would wait for it ("Step blocked by limit for pool duckdb_warehouse"). fail_dead_runs, which
    every build runs first, marks the run failed and gives the slot back."""
    import subprocess

    from orchestration.runner import PID_TAG, fail_dead_runs

    gone = subprocess.Popen(["true"])
    gone.wait()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / "dagster.yaml").write_text(dagster_yaml(Execution()))
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        run = instance.create_run_for_job(dg.GraphDefinition("g").to_job(), tags={PID_TAG: str(gone.pid)})
        # STARTED, as a build's run is while it runs:
        instance.run_storage.handle_run_event(run.run_id, dg.DagsterEvent(dg.DagsterEventType.RUN_START.value, run.job_name))
        storage = instance.event_log_storage
        storage.initialize_concurrency_limit_to_default(keys.WAREHOUSE_POOL)
        assert storage.claim_concurrency_slot(keys.WAREHOUSE_POOL, run.run_id, "state_dbt_models").is_claimed
        assert storage.get_concurrency_info(keys.WAREHOUSE_POOL).active_slot_count == 1
        assert fail_dead_runs(instance) == [run.run_id]
        assert storage.get_concurrency_info(keys.WAREHOUSE_POOL).active_slot_count == 0
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE

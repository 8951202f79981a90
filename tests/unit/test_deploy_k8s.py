"""Kubernetes as documented configuration (deploy/k8s/, docs/scale.md): with the settings the pods
get, the definitions resolve with Dagster's Kubernetes step executor; the instance configuration
(Postgres storage, K8sRunLauncher, the pools) passes Dagster's own schemas and the launcher's and
the storage's config types; the Helm values say the same as the instance file. No cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from orchestration.definitions import build_definitions

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
POD_ENV = {"DAGSTER_PG_HOST": "postgres", "DAGSTER_PG_USERNAME": "dagster", "DAGSTER_PG_PASSWORD": "x", "DAGSTER_PG_DB": "dagster"}


def _instance_file() -> dict:
    return yaml.safe_load((DEPLOY / "dagster.yaml").read_text())


def _launcher_env() -> dict[str, str]:
    return dict(v.split("=", 1) for v in _instance_file()["run_launcher"]["config"]["env_vars"])


def _valid(config_type, value) -> dict:
    from dagster._config import process_config

    result = process_config(config_type, value)
    assert result.success, [e.message for e in result.errors]
    return result.value


def test_the_definitions_a_run_pod_loads_use_the_kubernetes_step_executor(tmp_path, monkeypatch):
    from dagster_k8s import k8s_job_executor

    env = _launcher_env()
    for name in ("MEMC_EXECUTOR", "MEMC_K8S_NAMESPACE"):
        monkeypatch.setenv(name, env[name])
    defs = build_definitions(str(tmp_path / "home"))
    job = defs.resolve_implicit_global_asset_job_def()
    ex = job.executor_def
    assert ex.name == "k8s" and ex.executor_creation_fn is k8s_job_executor.executor_creation_fn
    assert ex.config_schema.resolve_config({}).value["config"]["job_namespace"] == "memc"
    assert len(defs.resolve_asset_graph().materializable_asset_keys) > 20  # every view, as locally


def test_the_instance_file_passes_dagsters_schemas_and_the_launchers_config_type(monkeypatch):
    from dagster._core.instance.config import dagster_instance_config
    from dagster_k8s import K8sRunLauncher
    from dagster_postgres import DagsterPostgresStorage

    for k, v in POD_ENV.items():
        monkeypatch.setenv(k, v)
    config, custom_class = dagster_instance_config(str(DEPLOY))  # raises DagsterInvalidConfigError on a bad file
    assert custom_class is None
    launcher = config["run_launcher"]
    assert (launcher["module"], launcher["class"]) == ("dagster_k8s", "K8sRunLauncher")
    launcher_config = _valid(K8sRunLauncher.config_type(), launcher["config"])
    assert launcher_config["volume_mounts"][0]["mountPath"] == _launcher_env()["MEMC_HOME"]
    storage = _valid(DagsterPostgresStorage.config_type(), config["storage"]["postgres"])
    assert storage["postgres_db"]["password"] == "x"  # read from the pod's environment
    assert config["concurrency"]["pools"] == {"default_limit": 1, "granularity": "op"}
    assert config["run_monitoring"]["free_slots_after_run_end_seconds"] > 0


def test_a_broken_launcher_config_is_caught_by_the_same_check():
    """The check above can fail: a misspelt key of the launcher is refused by its config type."""
    from dagster_k8s import K8sRunLauncher

    bad = dict(_instance_file()["run_launcher"]["config"], job_namspace="memc")
    with pytest.raises(AssertionError, match="job_namspace"):
        _valid(K8sRunLauncher.config_type(), bad)


def test_the_helm_values_match_the_instance_file():
    values = yaml.safe_load((DEPLOY / "values.yaml").read_text())
    instance = _instance_file()
    [deployment] = values["dagster-user-deployments"]["deployments"]
    assert deployment["dagsterApiGrpcArgs"] == ["-m", "orchestration.definitions"]
    code_env = {e["name"]: e["value"] for e in deployment["env"]}
    launcher = values["runLauncher"]
    assert launcher["type"] == "K8sRunLauncher"
    run_env = dict(v.split("=", 1) for v in launcher["config"]["k8sRunLauncher"]["envVars"])
    assert code_env == run_env == _launcher_env()
    assert launcher["config"]["k8sRunLauncher"]["jobNamespace"] == instance["run_launcher"]["config"]["job_namespace"]
    assert launcher["config"]["k8sRunLauncher"]["volumeMounts"] == instance["run_launcher"]["config"]["volume_mounts"]
    pools, runs = values["concurrency"]["pools"], values["concurrency"]["runs"]
    assert {"default_limit": pools["defaultLimit"], "granularity": pools["granularity"]} == instance["concurrency"]["pools"]
    assert runs["maxConcurrentRuns"] == instance["concurrency"]["runs"]["max_concurrent_runs"]
    assert values["dagsterDaemon"]["runMonitoring"]["freeSlotsAfterRunEndSeconds"] == instance["run_monitoring"]["free_slots_after_run_end_seconds"]
    assert values["postgresql"]["enabled"] is False and values["postgresql"]["postgresqlHost"]

"""The fold's dbt unit tests on a distributed engine: the same models and the same tests on
dbt-spark (a local Spark session) as on dbt-duckdb, with adapter.dispatch where the dialects
differ (dbt_project/macros/dialect.sql). tests/dbt_spark.py says how the lane works.

Cost: a Spark session to create the relations (~12 s) and one for dbt (~35 s).
"""

from __future__ import annotations

import json

import pytest

import dbt_spark

pytestmark = pytest.mark.spark


def test_the_fold_unit_tests_pass_on_dbt_spark_as_on_dbt_duckdb(built_home, tmp_path):
    home, _ = built_home
    manifest = json.loads((dbt_spark.DBT_PROJECT / "target" / "manifest.json").read_text())
    expected = sorted(ut["name"] for ut in manifest["unit_tests"].values())
    assert len(expected) >= 12, expected

    spark_dir = tmp_path / "spark"
    dbt_spark.seed(spark_dir, dbt_spark.spark_ddl(home.warehouse_db, dbt_spark.unit_test_relations(manifest)))
    target = tmp_path / "target"
    r = dbt_spark.run_unit_tests(home.root, spark_dir, target)
    results = json.loads((target / "run_results.json").read_text())["results"]
    status = {x["unique_id"].split(".")[-1]: x["status"] for x in results}
    assert sorted(status) == expected, r.stdout[-3000:]
    failed = {k: v for k, v in status.items() if v != "pass"}
    assert not failed and r.returncode == 0, (failed, r.stdout[-4000:])
    assert "Registered adapter: spark=" in r.stdout  # run by dbt-spark, not the profile's default
    for scenario in ("move", "correction", "conflict", "retraction", "own_word", "entities"):
        assert any(name.startswith(scenario) for name in status), scenario

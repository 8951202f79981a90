"""The state models on a distributed engine: the same models and the same tests on dbt-spark
(a local Spark session) as on dbt-duckdb, with adapter.dispatch where the dialects differ
(dbt_project/macros/dialect.sql): one whole `dbt build --target spark` over a copy of a home's
Parquet runs the fold's dbt unit tests, every model and every data test, and its tables hold the
rows dbt-duckdb's marts hold; then one new message and an incremental build on each engine, and
again the same rows. tests/dbt_spark.py says how the lane works.

Cost: two whole builds on Spark (~60 s each on an idle two-core machine, the JVM's start
included) and one incremental `memc build`. The unit tests run inside the first build: dbt
builds a model's parents before its unit tests, whose fixtures are typed from those relations,
so no Spark session of their own is needed to create them first.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

import dbt_spark
from catalog.dbt_project import ensure_manifest
from claims.extractors.registry import active_extractor_key
from conftest import relocate_warehouse
from ledger import Ledger
from ledger.schema import NewEntry
from memc.home import MemcHome
from orchestration.runner import build

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def first_spark_build(built_home, tmp_path_factory):
    """A copy of the built sample home and the first whole `dbt build --target spark` of it, the
    unit tests included: (home, Spark's folder, dbt's result, its run results by node id)."""
    src, _ = built_home
    root = tmp_path_factory.mktemp("spark-build")
    shutil.copytree(src.root, root / "home", symlinks=True)
    relocate_warehouse(root / "home", src.root)
    home = MemcHome.resolve(root / "home")
    spark_dir = root / "spark"
    r = dbt_spark.build(home.root, spark_dir, root / "target", active_extractor_key())
    results = {x["unique_id"]: x for x in json.loads((root / "target" / "run_results.json").read_text())["results"]}
    return home, spark_dir, r, results


def test_the_fold_unit_tests_pass_on_dbt_spark_as_on_dbt_duckdb(first_spark_build):
    _, _, r, results = first_spark_build
    manifest = json.loads((dbt_spark.DBT_PROJECT / "target" / "manifest.json").read_text())
    expected = sorted(ut["name"] for ut in manifest["unit_tests"].values())
    assert len(expected) >= 12, expected
    status = {uid.split(".")[-1]: x["status"] for uid, x in results.items() if uid.startswith("unit_test.")}
    assert sorted(status) == expected, r.stdout[-3000:]
    failed = {k: v for k, v in status.items() if v != "pass"}
    assert not failed, (failed, r.stdout[-4000:])
    assert "Registered adapter: spark=" in r.stdout  # run by dbt-spark, not the profile's default
    for scenario in ("move", "correction", "conflict", "retraction", "own_word", "entities"):
        assert any(name.startswith(scenario) for name in status), scenario


def _models_built_as_tables(manifest: dict) -> list[str]:
    """Every model a build leaves as rows: the marts (their Parquet exports, mart_export.sql) and the
    intermediate tables; not the staging views or state_as_of (a view over the marts)."""
    return sorted(n["name"] for n in manifest["nodes"].values()
                  if n["resource_type"] == "model" and n["config"]["materialized"] in ("mart_export", "table", "incremental"))


def _duckdb_rows(home: MemcHome, name: str, tmp_path: Path) -> Path:
    """A model's rows as dbt-duckdb built them: the mart's export, or the warehouse table's."""
    mart = home.root / "warehouse" / "marts" / f"{name}.parquet"
    if mart.exists():
        return mart
    import duckdb

    out = tmp_path / f"duck-{name}.parquet"
    with duckdb.connect(str(home.warehouse_db), read_only=True) as con:
        con.execute(f"copy (select * from {name}) to '{out}' (format parquet)")
    return out


def _same_rows_on_both(home: MemcHome, spark_dir, tmp_path) -> dict[str, int]:
    manifest = json.loads((dbt_spark.DBT_PROJECT / "target" / "manifest.json").read_text())
    compared, wrong = {}, {}
    for name in _models_built_as_tables(manifest):
        only_duck, only_spark, n = dbt_spark.differences(_duckdb_rows(home, name, tmp_path), dbt_spark.spark_table_files(spark_dir, name))
        compared[name] = n
        if only_duck or only_spark:
            wrong[name] = (only_duck[:2], only_spark[:2])
    assert not wrong, wrong
    return compared


def test_a_whole_build_on_spark_holds_the_rows_dbt_duckdb_builds_first_and_incrementally(first_spark_build, tmp_path):
    home, spark_dir, r, results = first_spark_build
    assert r.returncode == 0, r.stdout[-4000:]
    assert "Registered adapter: spark=" in r.stdout
    assert {x["status"] for x in results.values()} <= {"success", "pass"}, [(k, x["status"]) for k, x in results.items() if x["status"] not in ("success", "pass")]
    declared = json.loads(ensure_manifest().read_text())["nodes"]
    # every data test ran on Spark too
    assert {k for k in results if k.startswith("test.")} == {k for k, n in declared.items() if n["resource_type"] == "test"}
    first = _same_rows_on_both(home, spark_dir, tmp_path)
    assert first["state_current"] > 0 and first["memory_actions"] > 0 and first["timeline"] > 0, first

    # One new message, then each engine's incremental build: the incremental models append on
    # Spark as on DuckDB, and every table still holds the same rows.
    Ledger(home.ledger).append([NewEntry(kind="message", scope="team", actor="Elena", session_id="elena-tomasz:S9",
                                         content="I moved to Potsdam last week and I love it.",
                                         valid_at=datetime(2026, 5, 2, 9, 0, tzinfo=timezone.utc))])
    assert build(home).success
    r = dbt_spark.build(home.root, spark_dir, tmp_path / "target", active_extractor_key(), unit_tests=False)
    assert r.returncode == 0, r.stdout[-4000:]
    second = _same_rows_on_both(home, spark_dir, tmp_path)
    assert second["int_claims_joined_to_entries"] > first["int_claims_joined_to_entries"]

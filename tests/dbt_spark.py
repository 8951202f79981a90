"""The dbt-spark lane: one whole `dbt build --target spark` over a home's Parquet (dbt-spark's
session method, a local Spark in the dbt process's JVM) that runs the fold's dbt unit tests,
every model and every data test; its tables compared row for row with the marts dbt-duckdb
built (``build`` and ``differences`` below).

dbt types a unit test's fixtures from the relations of the model's inputs, so those must exist
in Spark's catalog when the unit test runs: inside a build they do, since dbt builds a model's
parents before its unit tests (on an empty catalog `dbt test --select test_type:unit` alone
fails for want of them). Spark's warehouse and embedded Derby metastore live under ``spark_dir``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb

DBT_PROJECT = Path(__file__).resolve().parents[1] / "dbt_project"


def build(home_root: Path, spark_dir: Path, target_path: Path, extractor_key: str, unit_tests: bool = True) -> subprocess.CompletedProcess:
    """``dbt build --target spark`` of every model and data test, and of the unit tests unless
    ``unit_tests`` is false, reading the home's Parquet through the tables its on-run-start hook
    registers (macros/sources_on_spark.sql)."""
    spark_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MEMC_HOME": str(home_root), "MEMC_SPARK_DIR": str(spark_dir)}
    env.pop("MEMC_WATERMARK", None)  # the whole ledger, as the home's own build read it
    dbt = Path(sys.executable).parent / "dbt"
    return subprocess.run(
        [str(dbt), "build", "--target", "spark", *([] if unit_tests else ["--exclude-resource-type", "unit_test"]),
         "--vars", json.dumps({"extractor_key": extractor_key}),
         "--profiles-dir", str(DBT_PROJECT), "--target-path", str(target_path), "--log-path", str(spark_dir / "logs"),
         "--project-dir", str(DBT_PROJECT), "--no-partial-parse"],
        cwd=spark_dir, env=env, capture_output=True, text=True, timeout=1800,
    )


def spark_table_files(spark_dir: Path, name: str, schema: str = "memc") -> str:
    """The Parquet files of a table dbt-spark built (its managed tables live under the warehouse dir)."""
    return str(spark_dir / "warehouse" / f"{schema}.db" / name / "*.parquet")


def differences(duck_parquet: Path, spark_files: str) -> tuple[list[tuple], list[tuple], int]:
    """(rows only dbt-duckdb's file holds, rows only Spark's hold, rows compared), as multisets.
    An export written by dbt-duckdb's `external` held one all-NULL row for an empty model
    (views/marts.py): it is no row. Spark's timestamps (no time zone, the session's UTC) compare
    with DuckDB's timestamptz in UTC; lists compare element by element."""
    with duckdb.connect() as con:
        con.execute("set TimeZone = 'UTC'")
        con.execute(f"create view d as select * from read_parquet('{duck_parquet}')")
        con.execute(f"create view s as select * from read_parquet('{spark_files}')")
        cols = [r[0] for r in con.execute("describe d").fetchall()]
        spark_cols = [r[0] for r in con.execute("describe s").fetchall()]
        if sorted(cols) != sorted(spark_cols):
            raise AssertionError(f"{duck_parquet.name}: columns differ: duckdb {cols}, spark {spark_cols}")
        sel = ", ".join(f'"{c}"' for c in cols)
        not_placeholder = " or ".join(f'"{c}" is not null' for c in cols)
        con.execute(f"create view dd as select {sel} from d where {not_placeholder}")
        only_duck = con.execute(f"select {sel} from dd except all select {sel} from s").fetchall()
        only_spark = con.execute(f"select {sel} from s except all select {sel} from dd").fetchall()
        n = con.execute("select count(*) from dd").fetchone()[0]
    return only_duck, only_spark, n

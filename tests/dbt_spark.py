"""The dbt-spark lane: the fold's dbt unit tests on Apache Spark (dbt-spark's session method, a
local Spark in the dbt process's JVM), beside the same tests on dbt-duckdb; and the whole
`dbt build --target spark` over a home's Parquet, its tables compared row for row with the
marts dbt-duckdb built (``build`` and ``differences`` below).

dbt runs a unit test against the relations of the model and of its inputs (it reads their
columns to type the fixtures), so those must exist in Spark's catalog first. They are created
empty here with the columns and types dbt-duckdb built for them in a memory home's warehouse
(DuckDB types mapped to Spark's), in Spark's embedded metastore under ``spark_dir``; then
``dbt test --select test_type:unit --target spark`` runs the models' SQL on Spark, through the
adapter.dispatch macros of dbt_project/macros/dialect.sql where the dialects differ.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import jinja2
import yaml

DBT_PROJECT = Path(__file__).resolve().parents[1] / "dbt_project"

# DuckDB's type names (information_schema) as Spark SQL types.
_SPARK_TYPES = {
    "VARCHAR": "string", "BIGINT": "bigint", "INTEGER": "int", "DOUBLE": "double", "BOOLEAN": "boolean",
    "TIMESTAMP WITH TIME ZONE": "timestamp", "TIMESTAMP": "timestamp", "DATE": "date",
}  # fmt: skip


def spark_type(duck: str) -> str:
    if duck.endswith("[]"):
        return f"array<{spark_type(duck[:-2])}>"
    try:
        return _SPARK_TYPES[duck]
    except KeyError:
        raise ValueError(f"no Spark type for DuckDB's {duck!r}: add it to tests/dbt_spark.py") from None


def unit_test_relations(manifest: dict) -> list[str]:
    """The models the unit tests run and every model they take as input."""
    names = set()
    for ut in manifest["unit_tests"].values():
        names.add(ut["model"])
        names.update(m.group(1) for g in ut["given"] if (m := re.fullmatch(r"ref\('([^']+)'\)", g["input"])))
    return sorted(names)


def spark_ddl(warehouse_db: Path, relations: list[str], schema: str = "memc") -> list[str]:
    """CREATE TABLE statements for ``relations`` with the columns DuckDB has for them."""
    out = [f"create database if not exists {schema}"]
    with duckdb.connect(str(warehouse_db), read_only=True) as con:
        for name in relations:
            cols = con.execute(
                "select column_name, data_type from information_schema.columns where table_name = ? order by ordinal_position", [name]
            ).fetchall()
            if not cols:
                raise ValueError(f"{warehouse_db}: no relation {name!r} (build the home with dbt-duckdb first)")
            body = ", ".join(f"`{c}` {spark_type(t)}" for c, t in cols)
            out += [f"drop table if exists {schema}.{name}", f"create table {schema}.{name} ({body}) using parquet"]
    return out


_SEED = """
import json, sys
from pyspark.sql import SparkSession
conf, statements = json.loads(sys.stdin.read())
b = SparkSession.builder.master("local[1]").appName("memc-dbt-spark-seed").enableHiveSupport()
for k, v in conf.items():
    b = b.config(k, v)
spark = b.getOrCreate()
for s in statements:
    spark.sql(s)
spark.stop()
"""


def spark_conf(spark_dir: Path) -> dict[str, str]:
    """The session's settings: those dbt_project/profiles.yml's spark target gives dbt (its
    server_side_parameters, rendered as dbt renders them with MEMC_SPARK_DIR = ``spark_dir``),
    so the seeding session and dbt's share one catalog."""
    params = yaml.safe_load((DBT_PROJECT / "profiles.yml").read_text())["memc"]["outputs"]["spark"]["server_side_parameters"]
    env = {"MEMC_SPARK_DIR": str(spark_dir)}
    return {k: jinja2.Template(v).render(env_var=lambda name, default=None: env.get(name, default)) for k, v in params.items()}


def seed(spark_dir: Path, statements: list[str]) -> None:
    spark_dir.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([sys.executable, "-c", _SEED], input=json.dumps([spark_conf(spark_dir), statements]),
                       capture_output=True, text=True, timeout=600, cwd=spark_dir)
    if r.returncode != 0:
        raise RuntimeError(f"seeding Spark's catalog failed: {r.stderr[-3000:]}")


def run_unit_tests(home_root: Path, spark_dir: Path, target_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMC_HOME": str(home_root), "MEMC_SPARK_DIR": str(spark_dir)}
    dbt = Path(sys.executable).parent / "dbt"
    return subprocess.run(
        [str(dbt), "test", "--select", "test_type:unit", "--target", "spark", "--profiles-dir", str(DBT_PROJECT),
         "--target-path", str(target_path), "--log-path", str(spark_dir / "logs"), "--project-dir", str(DBT_PROJECT),
         "--no-partial-parse"],
        cwd=spark_dir, env=env, capture_output=True, text=True, timeout=1200,
    )


def build(home_root: Path, spark_dir: Path, target_path: Path, extractor_key: str) -> subprocess.CompletedProcess:
    """``dbt build --target spark`` of every model and data test (not the unit tests), reading the
    home's Parquet through the tables its on-run-start hook registers (macros/sources_on_spark.sql)."""
    spark_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MEMC_HOME": str(home_root), "MEMC_SPARK_DIR": str(spark_dir)}
    env.pop("MEMC_WATERMARK", None)  # the whole ledger, as the home's own build read it
    dbt = Path(sys.executable).parent / "dbt"
    return subprocess.run(
        [str(dbt), "build", "--target", "spark", "--exclude-resource-type", "unit_test", "--vars", json.dumps({"extractor_key": extractor_key}),
         "--profiles-dir", str(DBT_PROJECT), "--target-path", str(target_path), "--log-path", str(spark_dir / "logs"),
         "--project-dir", str(DBT_PROJECT), "--no-partial-parse"],
        cwd=spark_dir, env=env, capture_output=True, text=True, timeout=1800,
    )


def spark_table_files(spark_dir: Path, name: str, schema: str = "memc") -> str:
    """The Parquet files of a table dbt-spark built (its managed tables live under the warehouse dir)."""
    return str(spark_dir / "warehouse" / f"{schema}.db" / name / "*.parquet")


def differences(duck_parquet: Path, spark_files: str) -> tuple[list[tuple], list[tuple], int]:
    """(rows only dbt-duckdb's file holds, rows only Spark's hold, rows compared), as multisets.
    dbt-duckdb writes one all-NULL row into the file of an empty model (views/marts.py): it is
    no row. Spark's timestamps (no time zone, the session's UTC) compare with DuckDB's
    timestamptz in UTC; lists compare element by element."""
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

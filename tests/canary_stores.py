"""Every store of a memory home searched for marker strings (the canary tests of forgetting):
the bytes of every file, the ledger's entries, every Parquet file decoded (whatever its
compression), every DuckDB column, every retained LanceDB version, every Kùzu node and edge,
Dagster's SQLite (every cell, JSON and compressed blobs decoded) and compute logs, dbt's
artifacts and debug log, and compiles for every principal. Each check decodes what its engine
wrote, so it holds on the default zstd profile, where a byte search sees nothing. Used by
tests/platform/test_canaries.py and tests/platform/test_security.py.

``log_through_dagster`` puts text into Dagster's event log and compute logs through a real
Dagster run on the home's instance, as a view that logs sample rows would."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import pyarrow.parquet as pq
from forget_homes import PRINCIPALS, files_containing

from ledger import Ledger
from query import compile_context


def _parquet_hits(root, canaries) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in root.rglob("*.parquet"):
        if any(part.endswith(".lance") for part in p.parts):
            continue
        t = pq.read_table(p)
        text = json.dumps(t.to_pylist(), default=str)
        for c in canaries:
            if c in text:
                out.setdefault(c, []).append(str(p.relative_to(root)))
    return out


def _duckdb_hits(home, canaries) -> dict[str, list[str]]:
    import duckdb

    out: dict[str, list[str]] = {}
    if not home.warehouse_db.exists():
        return out
    con = duckdb.connect(str(home.warehouse_db), read_only=True)
    try:
        cols = con.execute(
            "select table_schema, table_name, column_name from information_schema.columns"
        ).fetchall()
        for schema, table, col in cols:
            for c in canaries:
                n = con.execute(
                    f'select count(*) from "{schema}"."{table}" where strpos(cast("{col}" as varchar), ?) > 0', [c]
                ).fetchone()[0]
                if n:
                    out.setdefault(c, []).append(f"{schema}.{table}.{col}")
    finally:
        con.close()
    return out


def _lance_hits(home, canaries) -> dict[str, list[str]]:
    """Every version LanceDB retains of every table, checked out one by one."""
    import lancedb

    out: dict[str, list[str]] = {}
    if not home.vectors.exists():
        return out
    db = lancedb.connect(str(home.vectors))
    for name in db.list_tables().tables:
        tbl = db.open_table(name)
        for v in tbl.list_versions():
            version = v["version"] if isinstance(v, dict) else v.version
            tbl.checkout(version)
            text = json.dumps(tbl.to_arrow().drop_columns(["vector"]).to_pylist(), default=str)
            for c in canaries:
                if c in text:
                    out.setdefault(c, []).append(f"{name}@v{version}")
        tbl.checkout_latest()
    return out


def _kuzu_hits(home, canaries) -> dict[str, list[str]]:
    import kuzu

    out: dict[str, list[str]] = {}
    path = home.graph / "kuzu" / "graph.kuzu"
    if not path.exists():
        return out
    db = kuzu.Database(str(path), read_only=True)
    conn = kuzu.Connection(db)
    try:
        texts = []
        for q in ("MATCH (n) RETURN n", "MATCH ()-[r]->() RETURN r"):
            res = conn.execute(q)
            while res.has_next():
                texts.append(json.dumps(res.get_next(), default=str))
        blob = "\n".join(texts)
        for c in canaries:
            if c in blob:
                out.setdefault(c, []).append("kuzu")
    finally:
        conn.close()
        db.close()
    return out


def _decoded(cell) -> str:
    """A SQLite cell as text a marker can be found in: JSON unescaped (Dagster's events escape
    non-ASCII and quotes), blobs inflated when they are zlib (Dagster's run snapshots)."""
    if isinstance(cell, bytes):
        try:
            cell = zlib.decompress(cell).decode("utf-8", "replace")
        except zlib.error:
            cell = cell.decode("utf-8", "replace")
    text = str(cell)
    try:
        return text + "\n" + json.dumps(json.loads(text), ensure_ascii=False)
    except (TypeError, ValueError):
        return text


def _dagster_db_hits(home, canaries) -> dict[str, list[str]]:
    """Every cell of every table of every SQLite file under ``<home>/dagster`` (runs, per-run
    event logs, the index, schedules), decoded."""
    out: dict[str, list[str]] = {}
    for p in sorted(Path(home.dagster).rglob("*")):
        if not p.is_file() or p.read_bytes()[:16] != b"SQLite format 3\x00":
            continue
        con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        try:
            for (t,) in con.execute("select name from sqlite_master where type = 'table'"):
                for row in con.execute(f'select * from "{t}"'):
                    text = "\n".join(_decoded(c) for c in row if c is not None)
                    for c in canaries:
                        if c in text:
                            out.setdefault(c, []).append(f"{p.relative_to(home.root)}:{t}")
        finally:
            con.close()
    return {c: sorted(set(v)) for c, v in out.items()}


def _text_file_hits(root: Path, files, canaries) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in files:
        text = p.read_bytes().decode("utf-8", "replace")
        if p.suffix == ".json":
            text = _decoded(text)
        for c in canaries:
            if c in text:
                out.setdefault(c, []).append(str(p.relative_to(root)))
    return out


def compute_log_files(home) -> list[Path]:
    """Dagster's compute logs (stdout and stderr of every step) and memc's build logs."""
    d = Path(home.dagster)
    return sorted(p for p in [*d.glob("storage/*/compute_logs/*"), *d.glob("logs/*")] if p.is_file())


def dbt_artifact_files(home) -> list[Path]:
    """What dbt wrote for this home's builds: run_results.json, manifests, compiled and run SQL
    and dbt.log, in ``<home>/warehouse/dbt/<run id>/`` (catalog/dbt_build.dbt_target)."""
    return sorted(p for p in (Path(home.warehouse) / "dbt").rglob("*") if p.is_file() and p.suffix != ".msgpack" and p.name != "graph.gpickle")


def _compile_hits(home, canaries, questions) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for asker in PRINCIPALS:
        for q in questions:
            # the header echoes the question (which names a canary): only what was compiled counts
            text = compile_context(q, asker, home=home).render().replace(q, "")
            for c in canaries:
                if c in text:
                    out.setdefault(c, []).append(f"{asker}: {q}")
    return out


def all_hits(home, canaries, questions) -> dict[str, dict[str, list[str]]]:
    """store -> marker -> where it was found."""
    ledger_text = json.dumps(list(Ledger(home.ledger).iter_entries()), default=str)
    return {
        "files": files_containing(home.root, canaries),
        "ledger": {c: ["ledger"] for c in canaries if c in ledger_text},
        "parquet": _parquet_hits(home.root, canaries),
        "duckdb": _duckdb_hits(home, canaries),
        "lancedb": _lance_hits(home, canaries),
        "kuzu": _kuzu_hits(home, canaries),
        "dagster_db": _dagster_db_hits(home, canaries),
        "compute_logs": _text_file_hits(home.root, compute_log_files(home), canaries),
        "dbt": _text_file_hits(home.root, dbt_artifact_files(home), canaries),
        "compiles": _compile_hits(home, canaries, questions),
    }


def log_through_dagster(home, entry_ids) -> str:
    """A real Dagster run on the home's own instance whose one asset reads the given entries
    from the ledger and logs them as a view logging sample rows would: in the event log (a log
    message and materialization metadata, JSON-escaped by Dagster) and on stdout (the compute
    log). Returns the run id."""
    import dagster as dg

    from orchestration.runner import prepare_environment

    wanted = set(entry_ids)

    @dg.asset(name="canary_sample_rows")
    def sample_rows(context):  # no annotations: this module's are strings (__future__)
        rows = [{k: r[k] for k in ("entry_id", "content", "source_ref")} for r in Ledger(home.ledger).iter_entries() if r["entry_id"] in wanted]
        context.log.info(f"sample rows: {rows}")
        print("sample rows:", json.dumps(rows, ensure_ascii=False), flush=True)
        return dg.MaterializeResult(metadata={"sample": dg.MetadataValue.json(rows), "first": rows[0]["content"]})

    prepare_environment(home)
    result = dg.materialize([sample_rows], instance=dg.DagsterInstance.get())
    assert result.success
    return result.run_id

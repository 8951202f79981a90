"""Every store of a memory home searched for marker strings (the canary tests of forgetting):
the bytes of every file, the ledger's entries, every Parquet file, every DuckDB column, every
retained LanceDB version, every Kùzu node and edge, and compiles for every principal. Used by
tests/platform/test_canaries.py and tests/platform/test_security.py."""

from __future__ import annotations

import json

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
        "compiles": _compile_hits(home, canaries, questions),
    }

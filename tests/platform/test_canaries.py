"""Canaries: three random high-entropy strings planted in three different entries (a public
conversation turn that also yields a claim, an alice-only document delivered through the inbox,
a bob/carol event) flow into every store; one full cascade (`forget` with its rebuild through
Dagster) must leave no trace of them anywhere:

* zero occurrences in the bytes of every file under the memory home (forensic profile: memc's
  Parquet uncompressed; Dagster's SQLite and logs are plain);
* zero rows in every retained version of every store, checked by each engine itself (files an
  engine compresses could hide a byte pattern): every ledger entry, every Parquet file under the
  home, every table and column of the DuckDB warehouse, every version of every LanceDB table,
  every node and edge property of the Kùzu graph;
* zero compile results mentioning them, for every principal.

Before the erasure the same checks must find them, or the test would prove nothing.
"""

from __future__ import annotations

import json
import time

import pyarrow.parquet as pq

from forgetting import forget, journals
from orchestration.runner import rebuild_views
from ledger import Ledger
from query import compile_context
from forget_homes import PRINCIPALS, copy_home, files_containing, forensic_home


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


def _all_hits(home, canaries, questions) -> dict[str, dict[str, list[str]]]:
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


def test_canaries_3_leave_no_trace_after_forget(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MEMC_PARQUET_COMPRESSION", "none")
    fh = copy_home(forensic_home(tmp_path_factory), tmp_path_factory.mktemp("canaries") / "home")
    home = fh.home
    canaries = list(fh.canaries)
    questions = ["Where did Mallory move?", "What is the recovery key in the runbook?", "Which badge was issued to Dana?", *canaries]

    before = _all_hits(home, canaries, questions)  # also puts the canaries into the query log
    for store in ("files", "ledger", "parquet", "duckdb", "lancedb", "compiles"):
        assert set(before[store]) == set(canaries), f"before the erasure {store} should hold every canary: {before[store]}"
    assert before["lancedb"], before

    t0 = time.perf_counter()
    rep = forget(home, entry_ids=sorted(fh.canaries.values()), reason="canary test", by="alice", rebuild=rebuild_views)
    seconds = time.perf_counter() - t0
    assert rep.status == "done" and rep.rebuilt, rep.to_dict()
    assert [j["step"] for j in journals(home)] == ["done"]
    assert Ledger(home.ledger).verify().ok

    after = _all_hits(home, canaries, questions)
    assert after == {k: {} for k in after}, after
    # the rebuilt views are whole: what was not erased still answers
    ctx = compile_context("Where does Elena live now?", "tomasz", home=home, scope="team")
    assert [f.object for f in ctx.state if f.subject == "Elena" and f.predicate == "lives_in"] == ["Berlin"]
    print(
        f"canaries: 3 planted, found before in {sum(len(v) for v in before['files'].values())} files; after the cascade "
        f"0 in files, ledger, parquet, duckdb, lancedb versions, kuzu and {len(PRINCIPALS) * len(questions)} compiles; "
        f"forget with rebuild {seconds:.1f} s (steps {rep.seconds}); scrubbed {rep.files_rewritten + rep.sqlite_scrubbed}, removed {rep.files_removed}"
    )

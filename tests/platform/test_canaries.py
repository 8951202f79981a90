"""Canaries: three random high-entropy strings planted in three different entries (a public
conversation turn that also yields a claim, an alice-only document delivered through the inbox,
a bob/carol event whose source ref holds it too) flow into every store; a real Dagster run logs
them as a view logging sample rows would (event log, materialization metadata, compute logs),
and dbt's debug log of the last build quotes one as a DuckDB conversion error would. One full
cascade (`forget` with its rebuild through Dagster) must then leave no trace of them anywhere:

* zero rows in every store, checked by decoding what each engine wrote (on the default zstd
  profile, where the purge and the rebuild write compressed files a byte search cannot see
  into): every ledger entry, every Parquet file, every table and column of the DuckDB
  warehouse, every retained version of every LanceDB table, every node and edge property of
  the Kùzu graph, every cell of Dagster's SQLite (JSON unescaped), its compute logs, dbt's
  artifacts and debug log;
* zero occurrences in the bytes of every file under the memory home;
* zero compile results mentioning them, for every principal.

Before the erasure the same checks must find them (each store the canaries it should hold), or
the test would prove nothing; after it, the same decoded checks must still find the text the
erasure did not name (the SECRET markers) in the rebuilt, zstd-compressed views.
"""

from __future__ import annotations

import time

import pyarrow.parquet as pq
from canary_stores import _lance_hits, _parquet_hits, all_hits, dbt_artifact_files, log_through_dagster
from forget_homes import PRINCIPALS, copy_home, forensic_home

from forgetting import forget, journals
from ledger import Ledger
from orchestration.runner import rebuild_views
from query import compile_context


def test_canaries_3_leave_no_trace_after_forget(tmp_path_factory, monkeypatch):
    """~2-3 min on 2 busy cores: the copy, a 5 s Dagster run, the checks twice, one rebuild."""
    monkeypatch.delenv("MEMC_PARQUET_COMPRESSION", raising=False)  # the default zstd profile from here on
    fh = copy_home(forensic_home(tmp_path_factory), tmp_path_factory.mktemp("canaries") / "home")
    home = fh.home
    canaries = list(fh.canaries)
    public, runbook, badge = canaries  # the public turn, alice's inbox document, bob/carol's event
    questions = ["Where did Mallory move?", "What is the recovery key in the runbook?", "Which badge was issued to Dana?", *canaries]

    plant_run = log_through_dagster(home, sorted(fh.canaries.values()))
    (dbt_log,) = [p for p in dbt_artifact_files(home) if p.name == "dbt.log"][-1:]
    with open(dbt_log, "a") as f:
        f.write(f"Runtime Error in model timeline: Conversion Error: Could not convert string '{badge}' to INT64\n")

    before = all_hits(home, canaries, questions)  # also puts the canaries into the query log
    should_hold = {
        "files": canaries, "ledger": canaries, "parquet": canaries, "lancedb": canaries, "compiles": canaries,
        "duckdb": [public, badge], "kuzu": [badge],  # the graph holds source refs, never content
        "dagster_db": canaries, "compute_logs": canaries, "dbt": [badge],
    }  # fmt: skip
    assert set(should_hold) == set(before)
    for store, expected in should_hold.items():
        assert set(before[store]) >= set(expected), f"before the erasure the {store} check must find {expected}: {before[store]}"

    t0 = time.perf_counter()
    rep = forget(home, entry_ids=sorted(fh.canaries.values()), reason="canary test", by="alice", rebuild=rebuild_views)
    seconds = time.perf_counter() - t0
    assert rep.status == "done" and rep.rebuilt and not rep.build_failed_steps, rep.to_dict()
    assert [j["step"] for j in journals(home)] == ["done"]
    assert Ledger(home.ledger).verify().ok
    # what the erasure reports: every stub, every scrubbed copy, nothing left unsearched
    assert rep.ledger_rows_stubbed == len(rep.erased) and rep.ledger_files_rewritten >= 3, rep.to_dict()
    assert set(rep.views_dropped) >= {"claims", "warehouse", "vectors", "graph"}, rep.views_dropped
    assert rep.files_removed == ["inbox/processed/runbook.md"], rep.files_removed
    assert f"dagster/history/runs/{plant_run}.db" in rep.sqlite_scrubbed and "dagster/history/runs/index.db" in rep.sqlite_scrubbed, rep.sqlite_scrubbed
    logs = [p for p in rep.files_rewritten if p.startswith(f"dagster/storage/{plant_run}/compute_logs/")]
    assert {p.rsplit(".", 1)[1] for p in logs} == {"out", "err"}, rep.files_rewritten
    assert rep.files_skipped == []

    after = all_hits(home, canaries, questions)
    assert after == {k: {} for k in after}, after

    # The same decoded checks still find what was not erased, in files the rebuild wrote zstd.
    zstd = {
        str(p.relative_to(home.root)) for p in home.root.rglob("*.parquet")
        if ".lance" not in str(p) and pq.ParquetFile(p).metadata.num_row_groups
        and pq.ParquetFile(p).metadata.row_group(0).column(0).compression == "ZSTD"
    }  # fmt: skip
    kept = _parquet_hits(home.root, ["Porto"])  # alice: "I live in Porto now"
    assert any(f in zstd for fs in kept.values() for f in fs), (kept, sorted(zstd))
    assert _lance_hits(home, list(fh.secrets)), "the rebuilt index holds the entries the erasure did not name"
    # the rebuilt views are whole: what was not erased still answers
    ctx = compile_context("Where does Elena live now?", "tomasz", home=home, scope="team")
    assert [f.object for f in ctx.state if f.subject == "Elena" and f.predicate == "lives_in"] == ["Berlin"]
    print(
        f"canaries: 3 planted, found before in {sum(len(v) for v in before['files'].values())} files; after the cascade "
        f"0 in files, ledger, parquet, duckdb, lancedb versions, kuzu, Dagster's SQLite and compute logs, dbt's artifacts "
        f"and {len(PRINCIPALS) * len(questions)} compiles; forget with rebuild {seconds:.1f} s (steps {rep.seconds}); "
        f"SQLite scrubbed {len(rep.sqlite_scrubbed)}, files rewritten {len(rep.files_rewritten)}, removed {rep.files_removed}"
    )

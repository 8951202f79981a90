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

import time

from canary_stores import all_hits
from forgetting import forget, journals
from orchestration.runner import rebuild_views
from ledger import Ledger
from query import compile_context
from forget_homes import PRINCIPALS, copy_home, forensic_home


def test_canaries_3_leave_no_trace_after_forget(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("MEMC_PARQUET_COMPRESSION", "none")
    fh = copy_home(forensic_home(tmp_path_factory), tmp_path_factory.mktemp("canaries") / "home")
    home = fh.home
    canaries = list(fh.canaries)
    questions = ["Where did Mallory move?", "What is the recovery key in the runbook?", "Which badge was issued to Dana?", *canaries]

    before = all_hits(home, canaries, questions)  # also puts the canaries into the query log
    for store in ("files", "ledger", "parquet", "duckdb", "lancedb", "compiles"):
        assert set(before[store]) == set(canaries), f"before the erasure {store} should hold every canary: {before[store]}"
    assert before["lancedb"], before

    t0 = time.perf_counter()
    rep = forget(home, entry_ids=sorted(fh.canaries.values()), reason="canary test", by="alice", rebuild=rebuild_views)
    seconds = time.perf_counter() - t0
    assert rep.status == "done" and rep.rebuilt, rep.to_dict()
    assert [j["step"] for j in journals(home)] == ["done"]
    assert Ledger(home.ledger).verify().ok

    after = all_hits(home, canaries, questions)
    assert after == {k: {} for k in after}, after
    # the rebuilt views are whole: what was not erased still answers
    ctx = compile_context("Where does Elena live now?", "tomasz", home=home, scope="team")
    assert [f.object for f in ctx.state if f.subject == "Elena" and f.predicate == "lives_in"] == ["Berlin"]
    print(
        f"canaries: 3 planted, found before in {sum(len(v) for v in before['files'].values())} files; after the cascade "
        f"0 in files, ledger, parquet, duckdb, lancedb versions, kuzu and {len(PRINCIPALS) * len(questions)} compiles; "
        f"forget with rebuild {seconds:.1f} s (steps {rep.seconds}); scrubbed {rep.files_rewritten + rep.sqlite_scrubbed}, removed {rep.files_removed}"
    )

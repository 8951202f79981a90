"""The bi-temporal state fold in dbt: unit tests through a real `dbt build`, incremental = full
refresh, as-of and known-at answers, visibility, and the `memc state` / `memc sql` commands.

Claims are written straight into the claims layout (claims/extractor=<key>/day=<d>/claims.parquet,
and the older flat claims.parquet), with the columns the claims engineer is adding (polarity,
time_phrase, object_id), so the dbt models are tested against them whatever the extractor does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from catalog.dbt_project import dbt_home_env
from claims.model import REJECTION_SCHEMA
from claims.store import CLAIMS_FILE, REJECTIONS_FILE, day_dir, extractor_dir
from ledger import Ledger
from ledger.schema import NewEntry
from memc.ids import content_id, entity_id
from procfs import open_files  # tests/ is on sys.path
from views.marts import CONFLICTS, ENTITY_ANALYTICS, MEMORY_ACTIONS, STATE_CURRENT, STATE_HISTORY, mart_path

REPO = Path(__file__).resolve().parents[2]
DBT_DIR = REPO / "dbt_project"
EXTRACTOR_KEY = "test-1"
FUNCTIONAL = {"lives_in", "works_at", "centrality"}
TS = pa.timestamp("us", tz="UTC")

CLAIMS_SCHEMA = pa.schema(
    [
        ("claim_id", pa.string()), ("extractor", pa.string()), ("extractor_version", pa.string()),
        ("scope", pa.string()), ("subject", pa.string()), ("subject_id", pa.string()),
        ("predicate", pa.string()), ("object", pa.string()), ("cardinality", pa.string()),
        ("valid_at", TS), ("recorded_at", TS), ("source_entry_id", pa.string()), ("source_seq", pa.int64()),
        ("source_ref", pa.string()), ("quote", pa.string()), ("visibility", pa.list_(pa.string())),
        ("confidence", pa.float64()), ("polarity", pa.string()), ("time_phrase", pa.string()), ("object_id", pa.string()),
    ]
)


def t(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=timezone.utc)


def append_with_claims(
    home,
    recorded_at: datetime,
    items: list[dict[str, Any]],
    *,
    flat: bool = False,
    scope: str = "s",
) -> int:
    """Append one ledger batch (one entry per item) and write its claims; returns the head.

    An item: actor, text, valid (datetime), kind (default message), visibility (default public),
    and claims: [(predicate, object, polarity)] with the actor as subject; rejected: [(validator,
    reason, proposal)], what the validators refused of it (written to the day's rejections)."""
    ledger = Ledger(home.ledger)
    entries = [
        NewEntry(
            kind=it.get("kind", "message"),
            scope=scope,
            content=it["text"],
            valid_at=it["valid"],
            actor=it["actor"],
            session_id=it.get("session"),
            source_ref=it.get("ref"),
            visibility=tuple(it.get("visibility", ("public",))),
        )
        for it in items
    ]
    res = ledger.append(entries, recorded_at=recorded_at)
    rows = []
    for i, (entry, it) in enumerate(zip(entries, items)):
        for predicate, obj, polarity in it.get("claims", []):
            rows.append(
                {
                    "claim_id": content_id("c", EXTRACTOR_KEY, entry.entry_id, predicate, obj, polarity),
                    "extractor": "test", "extractor_version": "1", "scope": scope,
                    "subject": it["actor"], "subject_id": entity_id(scope, it["actor"]),
                    "predicate": predicate, "object": obj,
                    "cardinality": "functional" if predicate in FUNCTIONAL else "multi",
                    "valid_at": it["valid"], "recorded_at": recorded_at,
                    "source_entry_id": entry.entry_id, "source_seq": res.first_seq + i,
                    "source_ref": it.get("ref"), "quote": it["text"],
                    "visibility": sorted(it.get("visibility", ("public",))), "confidence": 0.9,
                    "polarity": polarity, "time_phrase": None, "object_id": None,
                }
            )
    rejected = [
        {
            "proposal_id": content_id("p", EXTRACTOR_KEY, entry.entry_id, json.dumps(proposal, sort_keys=True)),
            "extractor": "test", "extractor_version": "1", "source_entry_id": entry.entry_id,
            "source_seq": res.first_seq + i, "validator": validator, "reason": reason,
            "proposal": json.dumps(proposal), "scope": scope, "source_ref": it.get("ref"),
        }
        for i, (entry, it) in enumerate(zip(entries, items))
        for validator, reason, proposal in it.get("rejected", [])
    ]
    if rejected:
        day = day_dir(home.claims, EXTRACTOR_KEY, recorded_at.date())
        day.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rejected, schema=REJECTION_SCHEMA), day / REJECTIONS_FILE)
    folder = extractor_dir(home.claims, EXTRACTOR_KEY)
    path = folder / CLAIMS_FILE if flat else day_dir(home.claims, EXTRACTOR_KEY, recorded_at.date()) / CLAIMS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():  # same day again: the day's file holds every claim of that day
        rows = pq.read_table(path).to_pylist() + rows
    pq.write_table(pa.Table.from_pylist(rows, schema=CLAIMS_SCHEMA), path)
    return res.head


def dbt(home, *args: str, vars: dict[str, Any] | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run the dbt CLI on this home, with its own target and log folders (the repo's manifest is
    left alone)."""
    home.marts.mkdir(parents=True, exist_ok=True)
    exe = Path(sys.executable).with_name("dbt")
    env = {**os.environ, "DO_NOT_TRACK": "1", **dbt_home_env(home.root)}
    v = {"extractor_key": EXTRACTOR_KEY, **(vars or {})}
    cmd = [
        str(exe if exe.exists() else "dbt"), *args, "--vars", json.dumps(v),
        "--profiles-dir", str(DBT_DIR), "--project-dir", str(DBT_DIR),
        "--target-path", str(home.root / "dbt_target"), "--log-path", str(home.root / "dbt_logs"),
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=DBT_DIR)
    if check and proc.returncode != 0:
        raise AssertionError(f"dbt {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
    return proc


def run_results(home) -> list[dict[str, Any]]:
    return json.loads((home.root / "dbt_target" / "run_results.json").read_text())["results"]


# ---------------------------------------------------------------------------------------------
# The scenario, in five ledger batches (transaction times T1 < ... < T5):
#   move       Elena lives_in Paris (valid Jan, T1), Berlin (valid Jun, T3);
#   correction a user's correction at T5: Elena lived in Madrid from March;
#   conflict   Tomasz works_at Acme (public) and Globex (only tomasz), same valid and
#              transaction time;
#   duplicate  Omar likes chess (T1), and says it again (T2); a validator refuses one proposal (T2);
#   restatement Omar lives_in Oslo (valid Jan, T1), moves to Bergen (valid Feb, T2) and says
#              Bergen again (valid Jun, T3): Bergen holds since February, with both sources;
#   analytics  dreaming's derived centrality of Omar (T3): in entity_analytics, not a fact;
#   retraction Priya likes tea (Jan) and coffee (Feb), no longer tea (May, T3); Priya lives_in
#              Rome (elena and priya may see it), retracted in an entry only priya may see (T4).
T1, T2, T3, T4, T5 = t("2024-01-02"), t("2024-02-02"), t("2024-06-02"), t("2024-06-03"), t("2024-09-01")

STEPS = [
    [
        (T1, [
            {"actor": "Elena", "text": "I live in Paris", "valid": t("2024-01-01"), "ref": "m1", "claims": [("lives_in", "Paris", "assert")]},
            {"actor": "Tomasz", "text": "I work at Acme", "valid": t("2024-02-01"), "ref": "m2", "session": "x", "claims": [("works_at", "Acme", "assert")]},
            {"actor": "Tomasz", "text": "I work at Globex", "valid": t("2024-02-01"), "ref": "m3", "visibility": ("tomasz",), "claims": [("works_at", "Globex", "assert")]},
            {"actor": "Priya", "text": "I like tea", "valid": t("2024-01-01"), "ref": "m4", "session": "x", "claims": [("likes", "tea", "assert")]},
            {"actor": "Priya", "text": "I live in Rome", "valid": t("2024-01-01"), "ref": "m5", "visibility": ("elena", "priya"), "claims": [("lives_in", "Rome", "assert")]},
            {"actor": "Omar", "text": "I like chess", "valid": t("2024-01-01"), "ref": "m5b", "claims": [("likes", "chess", "assert")]},
            {"actor": "Omar", "text": "I live in Oslo", "valid": t("2024-01-01"), "ref": "m5c", "claims": [("lives_in", "Oslo", "assert")]},
        ], True),  # the first batch's claims in the flat layout the claims store used to write
        (T2, [
            {"actor": "Priya", "text": "I like coffee", "valid": t("2024-02-01"), "ref": "m6", "claims": [("likes", "coffee", "assert")],
             "rejected": [("ontology", "unknown predicate 'adores'", {"subject": "Priya", "predicate": "adores", "object": "coffee", "valid_at": "2024-02-01T00:00:00+00:00"})]},
            {"actor": "Omar", "text": "I still like chess", "valid": t("2024-02-01"), "ref": "m6b", "claims": [("likes", "chess", "assert")]},
            {"actor": "Omar", "text": "I moved to Bergen", "valid": t("2024-02-01"), "ref": "m6c", "claims": [("lives_in", "Bergen", "assert")]},
        ], False),
    ],
    [
        (T3, [
            {"actor": "Elena", "text": "I moved to Berlin", "valid": t("2024-06-01"), "ref": "m7", "claims": [("lives_in", "Berlin", "assert")]},
            {"actor": "Priya", "text": "I no longer like tea", "valid": t("2024-05-01"), "ref": "m8", "claims": [("likes", "tea", "retract")]},
            {"actor": "Omar", "text": "I still live in Bergen", "valid": t("2024-06-01"), "ref": "m7b", "claims": [("lives_in", "Bergen", "assert")]},
            {"actor": "Omar", "kind": "derived_claim", "text": "claim: Omar centrality = 0.4200", "valid": t("2024-06-01"), "ref": "centrality:omar", "claims": [("centrality", "0.4200", "assert")]},
        ], False),
        (T4, [{"actor": "Priya", "text": "I no longer live in Rome", "valid": t("2024-04-01"), "ref": "m9", "visibility": ("priya",), "claims": [("lives_in", "Rome", "retract")]}], False),
    ],
    [
        (T5, [{"actor": "Elena", "kind": "correction", "text": "Correction: I lived in Madrid from March", "valid": t("2024-03-01"), "ref": "c1", "claims": [("lives_in", "Madrid", "assert")]}], False),
    ],
]

TABLES = (
    "int_claims_joined_to_entries", "int_claim_closings_paired", "int_claim_versions_folded",
    "int_entity_events_collected", "state_current", "state_history", "state_closings",
    "conflicts", "entities", "interactions", "timeline", "memory_actions", "entity_analytics",
)
NOW = t("2030-01-01")


def snapshot(home) -> dict[str, list]:
    import duckdb

    with duckdb.connect(str(home.warehouse_db), read_only=True) as con:
        return {name: con.execute(f"select * from {name} order by all").fetchall() for name in TABLES}


@pytest.fixture(scope="module")
def fold_home(tmp_path_factory):
    """The scenario built incrementally in three dbt invocations (the last a whole `dbt build`), then a
    snapshot of the fold's tables, then a full refresh of the models."""
    from memc.home import MemcHome

    home = MemcHome.resolve(tmp_path_factory.mktemp("fold") / "home").ensure()
    compiled = home.root / "dbt_target" / "compiled" / "memc" / "models" / "intermediate"
    incremental_sql = []
    for i, step in enumerate(STEPS):
        for recorded_at, items, flat in step:
            head = append_with_claims(home, recorded_at, items, flat=flat)
        # The models alone until the last step, whose build runs every unit and data test on
        # the grown state; the full refresh is compared model by model. Each `dbt build` of
        # the project is ~115 nodes, its `dbt run` ~30: this fixture was 4 builds, 227 s in CI.
        last = i == len(STEPS) - 1
        dbt(home, "build" if last else "run", vars={"watermark": head})
        incremental_sql.append((compiled / "int_claim_closings_paired.sql").read_text())
    results = run_results(home)
    grown = snapshot(home)
    dbt(home, "run", "--full-refresh", vars={"watermark": head})
    return home, grown, incremental_sql, results


def test_dbt_build_runs_the_fold_unit_tests_and_every_data_test(fold_home):
    home, _, _, results = fold_home
    units = {r["unique_id"].split(".")[-1]: r["status"] for r in results if r["unique_id"].startswith("unit_test.")}
    assert len(units) >= 12, units
    assert all(s == "pass" for s in units.values()), units
    for scenario in ("move", "correction", "conflict", "retraction", "own_word"):
        assert any(name.startswith(scenario) for name in units), scenario
    tests = [r for r in results if r["unique_id"].startswith("test.")]
    assert tests and all(r["status"] == "pass" for r in tests), [r["unique_id"] for r in tests if r["status"] != "pass"]


def test_a_models_column_rules_are_one_check_that_names_each_broken_rule(fold_home):
    """The project's column rules are one dbt test per model (macros/tests.sql `columns_hold`: one
    node and one scan instead of one per column and rule). The SQL dbt compiled for two of them,
    run against tables that break every kind of rule, returns one row per broken rule."""
    import duckdb

    home, _, _, _ = fold_home
    compiled = home.root / "dbt_target" / "compiled" / "memc" / "models"
    claims_sql = (compiled / "staging" / "_staging.yml" / "columns_hold_stg_memc__claims.sql").read_text()
    history_sql = (compiled / "marts" / "_marts.yml" / "columns_hold_state_history.sql").read_text()
    con = duckdb.connect()
    con.execute("attach ':memory:' as memc")
    con.execute("create table memc.main.stg_memc__claims as select * from (values"
                " ('c1', 's1', 'lives_in', 'assert', 'e1', 'functional'),"
                " ('c1', 's1', 'lives_in', 'assert', 'e1', 'functional'),"  # claim_id twice
                " ('c2', null, 'likes', 'retract', 'e2', 'multi'),"  # no subject
                " ('c3', 's3', 'likes', 'asserted', 'e3', null),"  # a polarity not accepted; a NULL cardinality passes
                " ('c4', 's4', 'likes', 'assert', 'e4', 'several'))"  # a cardinality not accepted
                " as t(claim_id, subject_id, predicate, polarity, source_entry_id, cardinality)")
    assert sorted(con.execute(claims_sql).fetchall()) == [
        ("accepted_values", "cardinality", 1), ("accepted_values", "polarity", 1),
        ("not_null", "subject_id", 1), ("unique", "claim_id", 1),
    ]
    con.execute("create table memc.main.state_history as select * from (values"
                " ('s1', 'c1', 1), ('s1', 'c1', 1), ('s1', 'c1', 1), ('s1', 'c1', 2), (null, 'c2', 1))"
                " as t(subject_id, claim_id, version)")
    assert sorted(con.execute(history_sql).fetchall()) == [("not_null", "subject_id", 1), ("unique", "claim_id, version", 2)]
    con.execute("delete from memc.main.state_history where version = 1 and subject_id is not null")
    con.execute("update memc.main.state_history set subject_id = 's2' where subject_id is null")
    assert con.execute(history_sql).fetchall() == []


def test_incremental_builds_equal_a_full_refresh(fold_home):
    home, grown, incremental_sql, _ = fold_home
    # The later builds really appended (the compiled model took its incremental branch).
    assert "max(pair_seq)" not in incremental_sql[0]
    assert all("max(pair_seq)" in sql for sql in incremental_sql[1:])
    rebuilt = snapshot(home)
    for name in TABLES:
        assert rebuilt[name] == grown[name], name
    assert len(grown["int_claims_joined_to_entries"]) == 16
    assert grown["state_history"] and grown["conflicts"]


def test_an_incremental_build_decides_again_only_the_groups_that_received_a_claim(tmp_path):
    """The write-policy model keeps the rows of every (scope, subject, predicate) group no new
    claim reached, and decides every row of the groups one reached again. Shown by marking each
    row after the first build ('sentinel' in a column the fold fills): after a new message about
    Elena's home, only her lives_in rows lost the mark, and the new rejection was appended."""
    import duckdb

    from memc.home import MemcHome

    home = MemcHome.resolve(tmp_path / "home").ensure()
    head = append_with_claims(home, T1, [
        {"actor": "Elena", "text": "I live in Paris", "valid": t("2024-01-01"), "ref": "m1", "claims": [("lives_in", "Paris", "assert")]},
        {"actor": "Elena", "text": "I like tea", "valid": t("2024-01-01"), "ref": "m2", "claims": [("likes", "tea", "assert")]},
        {"actor": "Tomasz", "text": "I work at Acme", "valid": t("2024-01-01"), "ref": "m3", "claims": [("works_at", "Acme", "assert")]},
    ])
    dbt(home, "run", vars={"watermark": head})
    with duckdb.connect(str(home.warehouse_db)) as con:
        con.execute("update int_claim_actions_decided set detail = 'sentinel'")
    head = append_with_claims(home, T2, [
        {"actor": "Elena", "text": "I moved to Berlin", "valid": t("2024-02-01"), "ref": "m4", "claims": [("lives_in", "Berlin", "assert")],
         "rejected": [("ontology", "unknown predicate 'adores'", {"predicate": "adores", "object": "Berlin"})]},
    ])
    dbt(home, "run", vars={"watermark": head})

    def rows() -> dict[str, tuple]:
        actions = pq.read_table(mart_path(home, MEMORY_ACTIONS)).to_pylist()
        return {r["source_ref"] + ":" + r["considered_kind"]: (r["action"], r["rule"], r["detail"]) for r in actions if r["action_id"]}

    incremental = rows()
    assert incremental == {
        "m1:claim": ("ADD", "first_value", None),  # Paris: its group got Berlin, so decided again
        "m4:claim": ("UPDATE", "newer_value", None),
        "m4:rejection": ("NONE", "rejected", "ontology: unknown predicate 'adores'"),
        "m2:claim": ("ADD", "first_value", "sentinel"),  # Elena's likes: untouched
        "m3:claim": ("ADD", "first_value", "sentinel"),  # Tomasz: untouched
    }
    dbt(home, "run", "--full-refresh", vars={"watermark": head})
    unmarked = {k: (a, r, None if d == "sentinel" else d) for k, (a, r, d) in incremental.items()}
    assert rows() == unmarked


def _as_of(home, entity, principal, as_of, known_at=NOW):
    from query.state import state_for_entity

    return state_for_entity(home.marts, entity, principal=principal, as_of=as_of, known_at=known_at)


def _objects(result, predicate):
    return sorted(f["object"] for f in result["facts"] if f["predicate"] == predicate)


def test_move_berlin_now_paris_before(fold_home):
    home = fold_home[0]
    assert _objects(_as_of(home, "Elena", "tomasz", NOW), "lives_in") == ["Berlin"]
    assert _objects(_as_of(home, "Elena", "tomasz", t("2024-02-15")), "lives_in") == ["Paris"]
    current = pq.read_table(mart_path(home, STATE_CURRENT)).to_pylist()
    assert [r["object"] for r in current if r["subject"] == "Elena" and r["predicate"] == "lives_in"] == ["Berlin"]


def test_correction_changes_the_past_only_once_recorded(fold_home):
    home = fold_home[0]
    april = t("2024-04-15")
    assert _objects(_as_of(home, "Elena", "tomasz", april, known_at=t("2024-07-01")), "lives_in") == ["Paris"]
    assert _objects(_as_of(home, "Elena", "tomasz", april, known_at=t("2024-09-02")), "lives_in") == ["Madrid"]
    # before March nothing changed, and after June Berlin still holds
    assert _objects(_as_of(home, "Elena", "tomasz", t("2024-02-15"), known_at=t("2024-09-02")), "lives_in") == ["Paris"]
    assert _objects(_as_of(home, "Elena", "tomasz", t("2024-07-01"), known_at=t("2024-09-02")), "lives_in") == ["Berlin"]
    history = [r for r in pq.read_table(mart_path(home, STATE_HISTORY)).to_pylist() if r["object"] == "Paris"]
    assert [(r["version"], r["close_reason"]) for r in sorted(history, key=lambda r: r["version"])] == [
        (1, None), (2, "superseded"), (3, "corrected")
    ]


def test_conflict_keeps_both_sides_for_those_who_may_see_both(fold_home):
    home = fold_home[0]
    rows = [r for r in pq.read_table(mart_path(home, CONFLICTS)).to_pylist() if r["claim_id_a"]]
    assert len(rows) == 1
    c = rows[0]
    assert c["resolution"] == "unresolved" and {c["object_a"], c["object_b"]} == {"Acme", "Globex"}
    assert {c["source_ref_a"], c["source_ref_b"]} == {"m2", "m3"} and c["visibility"] == ["tomasz"]
    mine = _as_of(home, "Tomasz", "tomasz", NOW)
    assert _objects(mine, "works_at") == ["Acme", "Globex"] and len(mine["conflicts"]) == 1
    theirs = _as_of(home, "Tomasz", "elena", NOW)
    assert _objects(theirs, "works_at") == ["Acme"] and theirs["conflicts"] == []


def test_retraction_closes_for_those_who_may_see_it(fold_home):
    home = fold_home[0]
    assert _objects(_as_of(home, "Priya", "elena", NOW), "likes") == ["coffee"]
    assert _objects(_as_of(home, "Priya", "elena", t("2024-03-01")), "likes") == ["coffee", "tea"]
    # Rome's retraction is private to priya: for elena Rome still holds, for priya it does not.
    assert _objects(_as_of(home, "Priya", "elena", NOW), "lives_in") == ["Rome"]
    assert _objects(_as_of(home, "Priya", "priya", NOW), "lives_in") == []
    assert _objects(_as_of(home, "Priya", "tomasz", NOW), "lives_in") == []  # never saw Rome
    current = {r["object"]: r for r in pq.read_table(mart_path(home, STATE_CURRENT)).to_pylist() if r["subject"] == "Priya"}
    assert set(current) == {"coffee", "Rome"} and current["Rome"]["closed_for"] == ["priya"]


def test_restatement_keeps_the_moves_date(fold_home):
    """Bergen said again in June closes nothing: the claim of the move keeps one open version
    from February, both claims stay current, and every reader shows one Bergen since February
    with both sources, the newest first (before fold-2 the restatement closed the move's claim,
    and "since" read June)."""
    home = fold_home[0]
    history = [r for r in pq.read_table(mart_path(home, STATE_HISTORY)).to_pylist() if r["source_ref"] == "m6c"]
    assert [(r["version"], r["valid_to"], r["close_reason"]) for r in history] == [(1, None, None)]
    current = pq.read_table(mart_path(home, STATE_CURRENT)).to_pylist()
    assert sorted((r["object"], r["source_ref"]) for r in current if r["subject"] == "Omar" and r["predicate"] == "lives_in") == [
        ("Bergen", "m6c"), ("Bergen", "m7b")
    ]
    for when in (NOW, t("2024-07-01")):
        facts = [f for f in _as_of(home, "Omar", "tomasz", when)["facts"] if f["predicate"] == "lives_in"]
        assert [(f["object"], f["valid_from"], f["source_ref"]) for f in facts] == [("Bergen", t("2024-02-01"), "m7b")]
        assert [s["source_ref"] for s in facts[0]["sources"]] == ["m7b", "m6c"]
    out = memc(home, "state", "Omar", "--as", "tomasz")
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln.strip().startswith("lives_in")]
    assert lines == ["  lives_in             Bergen  (since 2024-02-01)"], out.stdout
    assert "also   m6c" in out.stdout  # the move's source, after the restatement's


def test_what_holds_now_shows_one_line_per_fact(fold_home):
    """The compiled context's "What holds now": Bergen since the move, chess once (said in two
    entries), each with its sources merged, the newest first, in the text and the JSON."""
    from query.config import QueryConfig
    from query.context import Context
    from query.facts import state_facts

    home = fold_home[0]
    facts, _ = state_facts(home, "Where does Omar live, and what does Omar like?", "tomasz", None, QueryConfig())
    shown = [(f.predicate, f.object, f.valid_from[:10], [s["source_ref"] for s in f.sources]) for f in facts]
    assert sorted(shown) == [("likes", "chess", "2024-01-01", ["m6b", "m5b"]), ("lives_in", "Bergen", "2024-02-01", ["m7b", "m6c"])]
    ctx = Context(question="q", asker="tomasz", scope=None, ledger_head=0, watermarks={}, state=facts)
    text = ctx.render()
    assert text.count("Omar likes chess") == 1 and text.count("Omar lives_in Bergen") == 1
    assert "Omar lives_in Bergen  (since 2024-02-01;" in text and "also m6c" in text
    assert [s["source_ref"] for s in ctx.to_dict()["state"][0]["sources"]] == [s["source_ref"] for s in facts[0].sources]


def test_a_marts_file_holds_exactly_its_models_rows(fold_home):
    """A mart is its Parquet export and a warehouse view over it (dbt_project/macros/mart_export.sql):
    the file holds the model's rows and nothing else, and an empty model's file its columns and
    no row (dbt-duckdb's `external` wrote one all-NULL row there, which every reader had to drop)."""
    home = fold_home[0]
    files = sorted(home.marts.glob("*.parquet"))
    assert len(files) >= 10, files
    empty = []
    with duckdb.connect(str(home.warehouse_db), read_only=True) as con:
        for path in files:
            rows = con.execute(f"select count(*) from {path.stem}").fetchone()[0]
            kind = con.execute("select table_type from information_schema.tables where table_name = ?", [path.stem]).fetchone()
            table = pq.read_table(path)
            assert (table.num_rows, kind) == (rows, ("VIEW",)), path.stem
            assert table.column_names == [c[0] for c in con.execute(f"describe {path.stem}").fetchall()], path.stem
            if not rows:
                empty.append(path.stem)
    assert empty, "the scenario leaves a mart empty (one extractor version: no changes between two)"


def test_derived_analytics_have_their_own_mart(fold_home):
    """Dreaming's centrality is in entity_analytics, not among the facts (state_current,
    state_history); the compiler shows it only when the question asks about importance."""
    from query.config import QueryConfig
    from query.facts import state_facts

    home = fold_home[0]
    facts_marts = [pq.read_table(mart_path(home, m)).to_pylist() for m in (STATE_CURRENT, STATE_HISTORY)]
    assert not [r for rows in facts_marts for r in rows if r["predicate"] == "centrality"]
    analytics = [r for r in pq.read_table(mart_path(home, ENTITY_ANALYTICS)).to_pylist() if r["claim_id"]]
    assert [(r["subject"], r["predicate"], r["object"], r["closed_for"]) for r in analytics] == [("Omar", "centrality", "0.4200", [])]
    plain, _ = state_facts(home, "Where does Omar live?", "tomasz", None, QueryConfig())
    assert plain and "centrality" not in {f.predicate for f in plain}
    asked, _ = state_facts(home, "How central is Omar?", "tomasz", None, QueryConfig())
    assert ("centrality", "0.4200") in {(f.predicate, f.object) for f in asked}


def _actions(home, entity=None, principal=None, **times):
    from query.actions import actions_for_entity

    return actions_for_entity(
        home.marts, entity, principal=principal, as_of=times.get("as_of", NOW), known_at=times.get("known_at", NOW)
    )


def test_memory_actions_record_what_the_fold_did(fold_home):
    """Every claim of the scenario as the write policy's action, with its rule and target."""
    home = fold_home[0]
    every = [r for r in pq.read_table(mart_path(home, MEMORY_ACTIONS)).to_pylist() if r["action_id"]]
    rows = {r["source_ref"]: r for r in every if r["considered_kind"] == "claim"}
    by_id = {r["action_id"]: r for r in every}
    decided = {ref: (r["action"], r["rule"]) for ref, r in rows.items()}
    assert decided == {
        "m1": ("ADD", "first_value"),  # Paris
        "m2": ("ADD", "first_value"),  # Acme
        "m3": ("ADD", "conflict"),  # Globex: same valid and transaction time as Acme, kept beside it
        "m4": ("ADD", "first_value"),  # tea
        "m5": ("ADD", "first_value"),  # Rome
        "m5b": ("ADD", "first_value"),  # chess
        "m6": ("ADD", "accumulate"),  # coffee beside tea
        "m6b": ("NONE", "duplicate"),  # chess again
        "m5c": ("ADD", "first_value"),  # Oslo
        "m6c": ("UPDATE", "newer_value"),  # Bergen ends Oslo
        "m7b": ("NONE", "duplicate"),  # Bergen said again: corroborates, changes nothing
        "centrality:omar": ("ADD", "first_value"),  # an analytic: folded, shown apart
        "m7": ("UPDATE", "newer_value"),  # Berlin ends Paris
        "m8": ("DELETE", "retraction"),  # no longer tea
        "m9": ("DELETE", "retraction"),  # no longer Rome (seen by priya only)
        "c1": ("UPDATE", "correction"),  # Madrid from March ends Paris in March instead of June
    }
    objects = lambda ids: sorted(by_id[i]["object"] for i in ids)  # noqa: E731
    assert objects(rows["m7"]["closes"]) == ["Paris"] and objects(rows["m7"]["considered"]) == ["Paris"]
    assert objects(rows["c1"]["closes"]) == ["Paris"] and objects(rows["c1"]["closed_by"]) == ["Berlin"]
    assert objects(rows["c1"]["considered"]) == ["Berlin"]  # the open value when the correction came
    assert objects(rows["m8"]["closes"]) == ["tea"] and objects(rows["m9"]["closes"]) == ["Rome"]
    assert objects(rows["m6b"]["duplicate_of"]) == ["chess"] and rows["m6b"]["closes"] == []
    assert objects(rows["m3"]["considered"]) == ["Acme"]
    rejected = [r for r in every if r["considered_kind"] == "rejection"]
    assert [(r["action"], r["rule"], r["predicate"], r["detail"]) for r in rejected] == [
        ("NONE", "rejected", "adores", "ontology: unknown predicate 'adores'")
    ]
    assert {r["fold_version"] for r in every} == {"fold-2"}
    assert {(r["extractor"], r["extractor_version"]) for r in every} == {("test", "1")}


def test_memc_actions_per_asker_and_bitemporal(fold_home):
    home = fold_home[0]
    listed = lambda result: [(a["source_ref"], a["action"]) for a in result["actions"]]  # noqa: E731
    # Rome's retraction is priya's alone: elena sees Rome added and never retracted.
    assert sorted(listed(_actions(home, "Priya", "elena"))) == [("m4", "ADD"), ("m5", "ADD"), ("m6", "ADD"), ("m6", "NONE"), ("m8", "DELETE")]
    assert ("m9", "DELETE") in listed(_actions(home, "Priya", "priya"))
    assert ("m5", "ADD") not in listed(_actions(home, "Priya", "tomasz"))
    # Known at July: the correction of September had not been decided; as of April: Berlin (June) is not yet.
    assert [r for r, _ in listed(_actions(home, "Elena", "tomasz", known_at=t("2024-07-01")))] == ["m1", "m7"]
    assert [r for r, _ in listed(_actions(home, "Elena", "tomasz", as_of=t("2024-04-01")))] == ["m1", "c1"]
    # A closing names the closed value only to an asker who may see it.
    from query.actions import render_actions

    text = render_actions(_actions(home, "Elena", "tomasz"))
    assert "UPDATE  correction" in text and "closes Paris (m1)" in text and "already closed by Berlin (m7)" in text
    assert "Globex" not in render_actions(_actions(home, "Tomasz", "elena"))


def test_admin_as_of_equals_the_state_history_interval_pattern(fold_home):
    """Two readings of the bi-temporal fold agree on a grid of (valid time, transaction time):
    the state_history interval pattern, and the as-of query memc state runs (administrator)."""
    from query.state import AS_OF_SQL, _marts_connection

    home = fold_home[0]
    con = _marts_connection(home.marts, ("state_history", "state_closings"))
    con.execute("create view history as select * from state_history")
    con.execute("create view closings as select * from state_closings")
    days = [t(d) for d in ("2024-01-01", "2024-02-15", "2024-04-15", "2024-05-15", "2024-06-02", "2024-07-01", "2024-09-01", "2025-01-01")]
    seen = set()
    for valid in days:
        for known in days:
            p = {"v": valid, "t": known}
            pattern = con.execute(
                "select claim_id from state_history where valid_from <= $v and (valid_to is null or $v < valid_to) "
                "and recorded_from <= $t and (recorded_to is null or $t < recorded_to) order by claim_id", p
            ).fetchall()
            as_of = con.execute(
                f"select claim_id from ({AS_OF_SQL}) order by claim_id", {"as_of": valid, "known_at": known, "principal": None}
            ).fetchall()
            assert as_of == pattern, (valid, known)
            seen.add(tuple(pattern))
    assert len(seen) > 5  # the grid crosses the moves, the correction and the retractions


def test_state_as_of_macro_matches_memc_state(fold_home):
    import duckdb

    home = fold_home[0]
    # One instant and asker where visibility, a later correction and a retraction all matter.
    for principal, as_of, known in (("elena", "2024-04-15", "2024-09-02"),):
        dbt(home, "run", "--select", "state_as_of", vars={"as_of": f"{as_of} 00:00:00+00", "known_at": f"{known} 00:00:00+00", "principal": principal})
        with duckdb.connect(str(home.warehouse_db), read_only=True) as con:
            by_macro = sorted(r[0] for r in con.execute("select claim_id from state_as_of").fetchall())
        by_cli = sorted(s["claim_id"] for e in ("Elena", "Tomasz", "Priya", "Omar") for f in _as_of(home, e, principal, t(as_of), t(known))["facts"] for s in f["sources"])
        assert by_macro == by_cli and by_macro, (principal, as_of)


# ---------------------------------------------------------------------------------- commands


def memc(home, *args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("memc")
    return subprocess.run([str(exe), "--home", str(home.root), *args], capture_output=True, text=True, timeout=120)


def test_memc_state_command(fold_home):
    home = fold_home[0]
    out = memc(home, "state", "Elena", "--as", "tomasz", "--as-of", "2024-04-15", "--known-at", "2024-09-02", "--json")
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout)["facts"]
    assert [(f["predicate"], f["object"], f["source_ref"]) for f in facts] == [("lives_in", "Madrid", "c1")]
    text = memc(home, "state", "tomasz", "--as", "tomasz")
    assert text.returncode == 0 and "Conflicts" in text.stdout and "Globex" in text.stdout and "m3" in text.stdout
    # No implied administrator view.
    refused = memc(home, "state", "Elena")
    assert refused.returncode != 0 and "--as PRINCIPAL" in refused.stderr


def test_memc_sql_is_read_only_and_names_a_held_lock(fold_home):
    import duckdb

    home = fold_home[0]
    ok = memc(home, "sql", "--admin", "select object from state_current where predicate = 'likes' and subject = 'Priya'", "--json")
    assert ok.returncode == 0, ok.stderr
    assert [r["object"] for r in json.loads(ok.stdout)] == ["coffee"]
    for write in ("delete from int_claims_joined_to_entries", "copy (select 1) to 'x.csv'", "attach 'x.db'", "select 1; drop table int_claim_versions_folded"):
        refused = memc(home, "sql", "--admin", write)
        assert refused.returncode != 0 and "read-only" in refused.stderr, write
    with duckdb.connect(str(home.warehouse_db)):  # what a running dbt build does
        locked = memc(home, "sql", "--admin", "select 1")
        assert locked.returncode != 0 and "locked" in locked.stderr and "--marts" in locked.stderr
        marts = memc(home, "sql", "--admin", "--marts", "select count(*) as n from conflicts", "--json")
        assert marts.returncode == 0 and json.loads(marts.stdout) == [{"n": 1}]
    refused = memc(home, "sql", "select 1")
    assert refused.returncode != 0 and "--as PRINCIPAL" in refused.stderr


# ---------------------------------------------------------------------------------- platform


def test_full_refresh_reasons(tmp_path):
    from catalog.dbt_build import dbt_build_args, fold_version, full_refresh_reason
    from memc.home import MemcHome
    from memc.watermark import write_watermark

    home = MemcHome.resolve(tmp_path / "h").ensure()
    assert full_refresh_reason(home, 5, "k") is None  # first build: full anyway
    home.warehouse.mkdir()
    home.warehouse_db.touch()
    assert "no watermark" in full_refresh_reason(home, 5, "k")
    head = append_with_claims(home, T1, [{"actor": "A", "text": "hello", "valid": T1}])
    # A home folded by fold-1 (its watermark names no fold) holds pairs fold-2 does not make.
    write_watermark(home.warehouse, "state", head, extractor="k")
    assert fold_version() == "fold-2" and "fold rules changed (fold-1 -> fold-2)" in full_refresh_reason(home, head, "k")
    write_watermark(home.warehouse, "state", head, extractor="k", fold=fold_version())
    assert full_refresh_reason(home, head, "k") is None
    assert "extractor changed" in full_refresh_reason(home, head, "k2")
    assert "below" in full_refresh_reason(home, head - 1, "k")
    head2 = append_with_claims(home, T2, [{"actor": "A", "text": "more", "valid": T2}])
    assert full_refresh_reason(home, head2, "k") is None
    head3 = append_with_claims(home, T3, [{"actor": "A", "kind": "erasure", "text": "erased ids e_x", "valid": T3}])
    assert "erasure" in full_refresh_reason(home, head3, "k")
    assert dbt_build_args(7, "k", True)[-1] == "--full-refresh" and "--full-refresh" not in dbt_build_args(7, "k", False)
    # The fold's unit tests run in development and CI (above), not in every production build.
    assert "unit_test" in dbt_build_args(7, "k", False)[dbt_build_args(7, "k", False).index("--exclude-resource-type") + 1]


def test_an_in_process_build_leaves_no_ledger_glob_in_the_environment(built_home):
    """The state asset sets the ledger glob dbt reads (MEMC_LEDGER_PARQUET) only while it starts
    dbt: left in ``os.environ``, it made the next dbt started from the same process (another
    test's home, on the same xdist worker) read this home's ledger. (MEMC_HOME stays: the
    runner points the whole process at the home it builds, prepare_environment.)"""
    home, _ = built_home
    assert os.environ.get("MEMC_LEDGER_PARQUET") != dbt_home_env(home.root)["MEMC_LEDGER_PARQUET"]


def test_a_new_watermark_makes_dbt_parse_nothing_again(built_home, tmp_path):
    """Every build has a new watermark (MEMC_WATERMARK). The macro that reads it does so only
    when a model runs, so no parse records it: read while parsing, it made dbt parse the three
    staging models that filter by it again on every build."""
    from catalog.dbt_project import dbt_command

    home, _ = built_home
    for watermark in (7, 8):
        cmd, env = dbt_command(home.root, ["parse"], tmp_path)
        subprocess.run(cmd, env={**env, "MEMC_WATERMARK": str(watermark)}, check=True, capture_output=True)
    log = (tmp_path / "logs" / "dbt.log").read_text(errors="replace").splitlines()
    parses = [line for line in log if "artial pars" in line]  # "Partial parsing ..." and "Unable to do partial parsing"
    assert parses and ("no changes found" in parses[-1] or parses[-1].endswith(" 0 files changed.")), parses


def test_a_second_build_of_a_home_parses_only_what_changed(built_home, monkeypatch):
    """dbt parses the whole project again when its CLI vars or the profile differ from the
    parse it is given: each build's target folder gets the home's last parse
    (seed_partial_parse), and the watermark, which changes with every build, is an environment
    variable (MEMC_WATERMARK), not a var. So a build after the first parses nothing again."""
    import dagster as dg

    from orchestration.runner import build

    home, _ = built_home
    monkeypatch.setenv("DBT_LOG_LEVEL_FILE", "debug")  # a build's dbt.log holds warnings and errors only by default
    # One staging model is enough: dbt parses the whole project before it selects anything.
    # Twice: this worker's home is a copy of the session's built home (conftest.built_once), so
    # its warehouse path, which is in the profile, differs from the one its parse was made for.
    for _ in range(2):
        report = build(home, selection=[dg.AssetKey("stg_memc__ledger_entries")])
        assert report.success and report.materialized, report
    logs = sorted((home.warehouse / "dbt").glob("*/dbt.log"), key=lambda p: p.stat().st_mtime)
    assert len(logs) >= 2, logs
    assert "Unable to do partial parsing" not in logs[-1].read_text(errors="replace"), logs[-1]
    # The builds disposed of the Dagster instance they opened: its event log keeps database
    # files open while it lives (orchestration/eventlog.py), none after.
    assert open_files(os.getpid(), home.dagster.resolve()) == []

"""Claims partitioned by ledger day: a full build over several days in one run, then a version
bump and backfills that re-extract exactly the out-of-date days, beside the old version's files."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

import claims.extract
import claims.extractors.registry
from claims.extractors import clauses
from claims.extract import CURRENT_RULES, Extractor
from catalog.partitions import LEDGER_DAYS
from claims.store import day_dir, days, read_claims
from ledger import Ledger
from ledger.schema import NewEntry
from memc.home import MemcHome

# Three ledger days with entries and a gap (06-03) between them.
LEDGER = {
    "2024-06-01": [("Oda", "I moved to Bergen last week!"), ("Per", "Hey Od, congrats! I work at Fjordline.")],
    "2024-06-02": [("Oda", "My booking reference is BK-55120, I am planning a hike to Trolltunga next May.")],
    "2024-06-04": [("Per", "Actually, I don't work at Fjordline anymore."), ("Oda", "Oh no, Per! I love long walks though.")],
}
# The default extractor is the newest rules version; a newer one, for the version bump below.
V1 = CURRENT_RULES
V2 = Extractor(clauses.NAME, "0.4.0-test", clauses.propose, uses_resolver=True)


def _fill(home: MemcHome) -> None:
    ledger = Ledger(home.ledger)
    for day, turns in LEDGER.items():
        at = datetime.fromisoformat(f"{day}T12:00:00+00:00")
        entries = [
            NewEntry(kind="message", scope="crew", actor=who, content=text, valid_at=at, session_id="crew:S1",
                     source_ref=f"{day}:{i}", attributes={"conversation_id": "crew"})
            for i, (who, text) in enumerate(turns)
        ]  # fmt: skip
        ledger.append(entries, recorded_at=at)


def _snapshot(home: MemcHome, key: str) -> dict[str, tuple[int, bytes]]:
    root = home.claims / f"extractor={key}"
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(root.rglob("*.parquet"))}


@pytest.fixture
def home(tmp_path, monkeypatch) -> MemcHome:
    # the runner points these at the home; monkeypatch restores them after the test
    for var in ("DAGSTER_HOME", "MEMC_HOME", "MEMC_EXTRACTOR"):
        monkeypatch.setenv(var, "")
    monkeypatch.delenv("MEMC_EXTRACTOR")
    h = MemcHome.resolve(tmp_path / "home").ensure()
    _fill(h)
    return h


def test_build_then_backfill_after_a_version_bump(home, monkeypatch):
    import dagster as dg

    from catalog.keys import ENTITY_ALIASES
    from catalog.keys import CLAIMS
    from orchestration.runner import backfill, build, partition_code_versions

    # 1. Every ledger day in one run over the range (06-03 has no entries: nothing written).
    report = build(home, selection=[ENTITY_ALIASES, CLAIMS])
    assert report.success, report.failed_steps
    assert len(report.runs) == 1 and {"claims", "entity_aliases"} == set(report.materialized)
    # aliases: explainable; claims: provenance, GX expectations, watermark lag (checks/quality.py);
    # the ledger's integrity and GX suite, in every run a build starts (orchestration/runner.py)
    assert all(report.checks.values()) and len(report.checks) == 6, report.checks
    assert {"ledger:ledger_integrity", "ledger:ledger_expectations"} <= report.checks.keys()
    assert days(home.claims, V1.key) == list(LEDGER)
    v1 = read_claims(home.claims, V1.key).to_pylist()
    facts = {(c["subject"], c["predicate"], c["polarity"], c["object"]) for c in v1}
    assert {("Oda", "lives_in", "assert", "Bergen"), ("Per", "works_at", "retract", "Fjordline"),
            ("Oda", "plans", "assert", "hike to Trolltunga"), ("Per", "mentions", "assert", "Od")} <= facts  # fmt: skip
    od = next(c for c in v1 if c["object"] == "Od")
    oda = next(c for c in v1 if c["subject"] == "Oda")
    assert od["object_id"] == oda["subject_id"], "'Od' resolves to Oda (prefix-in-conversation)"
    instance = dg.DagsterInstance.get()
    assert set(partition_code_versions(instance, CLAIMS, list(LEDGER)).values()) == {V1.key}
    # The partitions are the ledger days (no 06-03, no calendar from 2024-01-01), none Missing.
    assert instance.get_dynamic_partitions(LEDGER_DAYS.name) == list(LEDGER)
    assert instance.get_materialized_partitions(CLAIMS) == set(LEDGER)
    before_v1 = _snapshot(home, V1.key)

    # 2. A new extractor version: nothing of it on disk, every day out of date.
    monkeypatch.setattr(claims.extractors.registry, "CURRENT_RULES", V2)  # a new version of the rules extractor
    part = backfill(home, "2024-06-01", "2024-06-02", views=False)
    assert part.success and part.extractor == V2.key
    assert part.out_of_date == ["2024-06-01", "2024-06-02"] and part.ranges == [("2024-06-01", "2024-06-02")]
    assert days(home.claims, V2.key) == ["2024-06-01", "2024-06-02"]
    after_first = _snapshot(home, V2.key)

    # 3. The whole range: only the day not yet re-extracted runs; 06-03 has no entries.
    rest = backfill(home, "2024-06-01", "2024-06-04", views=False)
    assert rest.days_with_entries == list(LEDGER) and rest.out_of_date == ["2024-06-04"]
    assert days(home.claims, V2.key) == ["2024-06-01", "2024-06-02", "2024-06-04"]
    now = _snapshot(home, V2.key)
    assert {k: v for k, v in now.items() if k in after_first} == after_first, "re-extracted a day that was up to date"
    assert set(partition_code_versions(instance, CLAIMS, list(LEDGER)).values()) == {V2.key}

    # The old version's files are untouched; the new one says the same things under its own key.
    assert _snapshot(home, V1.key) == before_v1
    v2 = read_claims(home.claims, V2.key).to_pylist()
    assert {(c["subject"], c["predicate"], c["polarity"], c["object"]) for c in v2} == facts
    assert {c["extractor_version"] for c in v2} == {"0.4.0-test"}

    # 4. Up to date: nothing runs. A deleted day (a rebuilt view) is out of date again.
    assert backfill(home, "2024-06-01", "2024-06-04", views=False).out_of_date == []
    import shutil

    shutil.rmtree(day_dir(home.claims, V2.key, "2024-06-02"))
    again = backfill(home, "2024-06-01", "2024-06-04", views=False)
    assert again.out_of_date == ["2024-06-02"] and again.success
    # re-running a partition is idempotent: same claim ids
    assert read_claims(home.claims, V2.key, day="2024-06-02").column("claim_id").to_pylist() == [
        c["claim_id"] for c in v2 if c["source_ref"].startswith("2024-06-02")
    ]
    # the aliases asset was written and explains its merge
    from claims.store import read_aliases

    merge = [r for r in read_aliases(home.claims).to_pylist() if r["rule"] == "prefix-in-conversation"]
    assert [(r["alias"], r["canonical_name"]) for r in merge] == [("Od", "Oda")] and merge[0]["evidence"]
    assert ENTITY_ALIASES.to_user_string() == "entity_aliases"

    # 5. A new ledger day gets its partition with the next build (which extracts every day again).
    at = datetime.fromisoformat("2024-06-07T09:00:00+00:00")
    Ledger(home.ledger).append([NewEntry(kind="message", scope="crew", actor="Per", content="I moved to Oslo.", valid_at=at,
                                         session_id="crew:S1", source_ref="2024-06-07:0")], recorded_at=at)  # fmt: skip
    grown = build(home, selection=[ENTITY_ALIASES, CLAIMS])
    assert grown.success, grown.failed_steps
    assert instance.get_dynamic_partitions(LEDGER_DAYS.name) == [*LEDGER, "2024-06-07"]
    assert instance.get_materialized_partitions(CLAIMS) == {*LEDGER, "2024-06-07"}


def test_claims_command_lists_claims_and_rejections(home, tmp_path):
    from claims.extract import extract
    from claims.store import write_day
    from cli.main import cli

    entries = list(Ledger(home.ledger).iter_entries())
    bad = Extractor("test", "1", lambda e: [{"subject": e["actor"], "predicate": "is_secretly", "object": "a spy", "quote": e["content"][:5],
                                             "valid_at": e["valid_at"].isoformat(), "source_entry_id": e["entry_id"],
                                             "visibility": ["public"], "confidence": 0.5}])  # fmt: skip
    write_day(home.claims, V1, "2024-06-01", extract(entries, V1), 5)
    write_day(home.claims, bad, "2024-06-01", extract(entries, bad), 5)
    runner = CliRunner()

    out = runner.invoke(cli, ["claims", "--home", str(home.root), "--admin", "--entity", "Per", "--json"], obj={})
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert rows and {r["subject"] for r in rows} == {"Per"}
    assert {"quote", "source_entry_id", "source_ref", "extractor_version", "valid_at"} <= rows[0].keys()
    text = runner.invoke(cli, ["claims", "--home", str(home.root), "--admin"], obj={}).output
    assert "Per NOT works_at Fjordline" in text and "(last week)" in text

    rej = runner.invoke(cli, ["claims", "--home", str(home.root), "--admin", "--extractor", "test-1", "--rejected", "--json"], obj={})
    assert rej.exit_code == 0, rej.output
    reasons = json.loads(rej.output)
    assert reasons and all(r["validator"] == "ontology" and "unknown predicate" in r["reason"] for r in reasons)

    missing = runner.invoke(cli, ["claims", "--home", str(home.root), "--admin", "--extractor", "nope-9"], obj={})
    assert missing.exit_code != 0 and "no claims for extractor 'nope-9'" in missing.output
    bad_range = runner.invoke(cli, ["backfill", "--home", str(home.root), "--from", "2024-06-05", "--to", "2024-06-01"], obj={})
    assert bad_range.exit_code != 0 and "after" in bad_range.output
    assert not Path(home.claims / f"extractor={V1.key}" / "day=2024-06-05").exists()


def test_a_day_without_entries_does_not_split_a_backfill_run():
    """06-03 has no entries, so it is no partition: 06-02 and 06-04 are neighbours, one run."""
    from claims.ledger_days import contiguous

    assert contiguous(["2024-06-02", "2024-06-04"], among=list(LEDGER)) == [("2024-06-02", "2024-06-04")]
    assert contiguous(["2024-06-01", "2024-06-04"], among=list(LEDGER)) == [("2024-06-01", "2024-06-01"), ("2024-06-04", "2024-06-04")]
    assert contiguous(["2024-06-02", "2024-06-04"]) == [("2024-06-02", "2024-06-02"), ("2024-06-04", "2024-06-04")], "calendar"
    with pytest.raises(ValueError, match="not ledger days"):
        contiguous(["2024-06-03"], among=list(LEDGER))


@pytest.mark.slow
def test_full_build_over_several_days_then_backfill_with_views(home, monkeypatch):
    """The whole graph in one run over a range of ledger days, then a backfill that recompiles
    the views below the claims (about 2-3 minutes on 2 cores: dbt, embeddings, graph)."""
    from orchestration.runner import backfill, build

    report = build(home)
    assert report.success, report.failed_steps
    assert {"claims", "entity_aliases", "state_current", "evidence_index", "entity_graph"} <= set(report.materialized)
    assert all(report.checks.values()), {k: v for k, v in report.checks.items() if not v}
    monkeypatch.setattr(claims.extractors.registry, "CURRENT_RULES", V2)  # a new version of the rules extractor
    again = backfill(home, "2024-06-01", "2024-06-04")
    assert again.success, again.failed_steps
    assert again.out_of_date == list(LEDGER) and "state_current" in again.materialized and "centrality" not in again.materialized

"""Moving a home built by rules 0.2.0 to the clause extractor (rules 0.3.0 and on, the default since) is
its next build, or a partitioned backfill through Dagster: every ledger day is re-extracted into
the new version's folder, the old folder is left byte for byte, and the state is folded from the
new claims."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

import claims.extract
from claims.extract import extract
from claims.extractors.registry import CLAUSES, RULES
from claims.ledger_days import entries_by_day, ledger_days
from claims.store import days, read_claims, read_resolver
from ledger import Ledger
from memc.home import MemcHome
from memc.ids import normalize_name
from query.state import run_sql
from views.marts import EXTRACTOR_CHANGES, EXTRACTOR_CHANGES_BY_DAY, STATE_CURRENT, mart_path, read_mart


def _snapshot(home: MemcHome, key: str) -> dict[str, tuple[int, bytes]]:
    root = home.claims / f"extractor={key}"
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(root.rglob("*.parquet"))}


def _facts(claims) -> set[tuple]:
    return {(c["source_entry_id"], c["subject_id"], c["predicate"], normalize_name(c["object"]), c["polarity"]) for c in claims.to_pylist()}


def _env(mp: pytest.MonkeyPatch) -> None:
    for var in ("DAGSTER_HOME", "MEMC_HOME", "MEMC_EXTRACTOR"):
        mp.setenv(var, "")  # the runner sets them; the monkeypatch restores them afterwards
    mp.delenv("MEMC_EXTRACTOR")


@pytest.fixture(scope="module")
def home_on_020(built_home, tmp_path_factory) -> MemcHome:
    """The demo home as an older memc built it: rules 0.2.0's claims, and every view folded from
    them (a backfill of every day with rules 0.2.0, then the default's folder removed). Copy it."""
    from cli.main import cli

    src, _ = built_home
    home = MemcHome.resolve(tmp_path_factory.mktemp("on020") / "home")
    shutil.copytree(src.root, home.root)
    day_list = [str(d) for d in ledger_days(Ledger(home.ledger))]
    with pytest.MonkeyPatch.context() as mp:
        _env(mp)
        out = CliRunner().invoke(
            cli, ["backfill", "--from", day_list[0], "--to", day_list[-1], "--extractor", RULES.key, "--home", str(home.root)], obj={}
        )
    assert out.exit_code == 0, out.output
    shutil.rmtree(home.claims / f"extractor={CLAUSES.key}")
    state = read_mart(mart_path(home, STATE_CURRENT)).to_pylist()
    assert state and {r["claim_id"] for r in state} <= set(read_claims(home.claims, RULES.key).column("claim_id").to_pylist())
    return home


def _copy(home: MemcHome, to) -> MemcHome:
    shutil.copytree(home.root, to / "home")
    return MemcHome.resolve(to / "home")


def test_a_home_built_by_rules_020_moves_to_the_default_at_its_next_build(home_on_020, tmp_path, monkeypatch):
    from orchestration.runner import build

    _env(monkeypatch)
    home = _copy(home_on_020, tmp_path)
    old = _snapshot(home, RULES.key)
    report = build(home)
    assert report.success and not report.up_to_date, report.failed_steps
    assert days(home.claims, CLAUSES.key) == [str(d) for d in ledger_days(Ledger(home.ledger))]
    assert _snapshot(home, RULES.key) == old, "the old version's claims are untouched"
    new_ids = set(read_claims(home.claims, CLAUSES.key).column("claim_id").to_pylist())
    state = read_mart(mart_path(home, STATE_CURRENT)).to_pylist()
    assert state and all(r["claim_id"] in new_ids for r in state), "the state is folded from the new claims"
    assert any(r["predicate"] == "considers" for r in state), "a fact only the clause extractor reads"
    assert build(home).up_to_date


def test_the_demo_home_moves_to_the_clause_extractor_by_backfill(home_on_020, tmp_path, monkeypatch):
    from cli.main import cli

    _env(monkeypatch)
    # The demo home's days are small: lower the bar so that the claims asset, inside the Dagster
    # run, splits each day over two forked workers as a large home's backfill does.
    monkeypatch.setattr(claims.extract, "PARALLEL_MIN_ENTRIES", 2)
    monkeypatch.setenv("MEMC_EXTRACT_WORKERS", "2")
    home = _copy(home_on_020, tmp_path)
    ledger_day_list = [str(d) for d in ledger_days(Ledger(home.ledger))]
    old = _snapshot(home, RULES.key)
    assert old and days(home.claims, CLAUSES.key) == []

    out = CliRunner().invoke(
        cli,
        ["backfill", "--from", ledger_day_list[0], "--to", ledger_day_list[-1], "--extractor", CLAUSES.key, "--home", str(home.root), "--json"],
        obj={},
    )
    assert out.exit_code == 0, out.output
    report = json.loads(out.output[out.output.index("{") :])
    assert report["extractor"] == CLAUSES.key
    assert sorted(report["out_of_date"]) == ledger_day_list, "every day is new to the new version"

    assert _snapshot(home, RULES.key) == old, "the old version's claims are untouched"
    assert days(home.claims, CLAUSES.key) == ledger_day_list
    new_claims = read_claims(home.claims, CLAUSES.key)
    assert new_claims.num_rows > read_claims(home.claims, RULES.key).num_rows
    assert set(new_claims.column("extractor_version").to_pylist()) == {CLAUSES.version}
    # ... and the forked pass wrote what one process extracts from the same ledger days.
    by_day = entries_by_day(Ledger(home.ledger), ledger_day_list)
    serial = [extract(entries, CLAUSES, read_resolver(home.claims)) for entries in by_day.values() if entries]
    assert sorted(new_claims.column("claim_id").to_pylist()) == sorted(c for r in serial for c in r.claims.column("claim_id").to_pylist())
    # The views below the claims were compiled from the new version: the state folds its claims.
    state = read_mart(mart_path(home, STATE_CURRENT)).to_pylist()
    ids = set(new_claims.column("claim_id").to_pylist())
    assert state and all(r["claim_id"] in ids for r in state)

    # SQL over both versions: per ledger day, what the new version adds, drops and changes.
    old_facts, new_facts = _facts(read_claims(home.claims, RULES.key)), _facts(new_claims)
    by_day = [r for r in read_mart(mart_path(home, EXTRACTOR_CHANGES_BY_DAY)).to_pylist() if r["to_extractor"] == CLAUSES.key]
    assert {r["from_extractor"] for r in by_day} == {RULES.key}
    assert sorted(str(r["ledger_day"]) for r in by_day) == ledger_day_list
    assert sum(r["from_facts"] for r in by_day) == len(old_facts) and sum(r["to_facts"] for r in by_day) == len(new_facts)
    assert sum(r["kept"] for r in by_day) == len(old_facts & new_facts)
    assert sum(r["added"] for r in by_day) > 0
    changes = read_mart(mart_path(home, EXTRACTOR_CHANGES)).to_pylist()
    for r in changes:
        to = (r["source_entry_id"], r["subject_id"], r["predicate"], normalize_name(r["to_object"] or ""), r["to_polarity"])
        was = (r["source_entry_id"], r["subject_id"], r["predicate"], normalize_name(r["from_object"] or ""), r["from_polarity"])
        if r["change"] in ("added", "changed"):
            assert to in new_facts and to not in old_facts, r
        if r["change"] in ("dropped", "changed"):
            assert was in old_facts and was not in new_facts, r
    # An analyst asks in SQL; an asker sees only the changes drawn from evidence it may see.
    _, rows = run_sql(home, "select change, count(*) from extractor_changes group by change order by change", admin=True)
    assert dict(rows) == {k: sum(1 for r in changes if r["change"] == k) for k in {r["change"] for r in changes}}
    _, seen = run_sql(home, "select visibility from extractor_changes", principal="nobody-at-all")
    assert all("public" in v for (v,) in seen)

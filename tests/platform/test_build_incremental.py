"""`memc build` does only what is due: nothing at all when every view is current, and after one
new message, only that message's ledger day is extracted and only its subject is folded again.
The run's own events and the warehouse's rows say so, not timings (those are in `make bench`).

Cost: about 100 s alone on 2 cores (copies of the session's sample home: a build of the profile
alone after an ask, a build after one new entry, and one `dbt --version`).
"""

from __future__ import annotations

import shutil
from datetime import date, datetime, time, timedelta, timezone

import dagster as dg
import duckdb
import pytest
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest

from assets.state import state_models
from catalog.keys import CLAIMS, LEDGER
from claims.extract import CURRENT_RULES
from claims.run import days_to_extract
from claims.store import days as stored_days
from conftest import relocate_warehouse
from ledger import Ledger
from ledger.schema import NewEntry
from memc.home import MemcHome
from orchestration.runner import PROFILE_BEHIND, _definitions, build, pending, prepare_environment
from query.compile import compile_context


@pytest.fixture
def home(built_home, tmp_path) -> MemcHome:
    src, _ = built_home
    shutil.copytree(src.root, tmp_path / "home", symlinks=True)
    relocate_warehouse(tmp_path / "home", src.root)
    return MemcHome.resolve(tmp_path / "home")


def _runs(instance: dg.DagsterInstance) -> list[str]:
    return [r.run_id for r in instance.get_runs()]


def _claims_partitions(instance: dg.DagsterInstance, run_ids: list[str]) -> set[str]:
    recs = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=CLAIMS), limit=1000).records
    return {r.partition_key for r in recs if r.run_id in run_ids}


def test_a_build_does_nothing_when_nothing_is_due_and_only_what_is_due_after_an_ask(home):
    prepare_environment(home)
    defs, instance = _definitions(home, None)
    # Other tests of this worker may have asked on the session's home: its profile is then
    # behind the query log, and that is all that is due.
    if pending(home, defs, instance):
        assert pending(home, defs, instance) == [PROFILE_BEHIND]
        assert build(home, instance=instance).success
    assert pending(home, defs, instance) == []
    before = _runs(instance)
    report = build(home, instance=instance)
    assert report.up_to_date and report.success and report.runs == [] and report.materialized == []
    assert _runs(instance) == before  # not even the ledger's observation ran

    # An ask writes the query log: the profile is behind it, and only it and the dossiers built
    # from it are compiled again.
    compile_context("Where does Elena work?", "elena", home=home, scope="team")
    assert pending(home, defs, instance) == [PROFILE_BEHIND]
    report = build(home, instance=instance)
    assert report.success and not report.up_to_date
    assert set(report.materialized) == {"query_profile", "entity_dossiers"}, report.materialized
    assert pending(home, defs, instance) == []

    head = Ledger(home.ledger).head()
    Ledger(home.ledger).append([NewEntry(kind="message", scope="team", actor="Elena", session_id="elena-tomasz:S3",
                                         content="I moved my desk to the third floor.", valid_at=datetime.now(timezone.utc))])
    reasons = pending(home, defs, instance)
    for view in ("claims", "state", "evidence_index", "entity_graph", "memory_units", "skills", "entity_dossiers"):
        assert f"{view}: built at ledger seq {head}, the ledger is at {head + 1}" in reasons, reasons

    # A day's claims removed by hand, under a watermark that still says current.
    day = next((home.claims / f"extractor={CURRENT_RULES.key}").glob("day=*"))
    shutil.rmtree(day)
    assert f"claims: 1 ledger day(s) without claims, the first {day.name[4:]}" in pending(home, defs, instance)


def test_one_new_message_extracts_only_its_day_and_folds_only_its_subject(home):
    """The sample corpus was recorded on one day; the new message is recorded on the next, in a
    conversation that is running (its session and speakers known), as a chat app appends."""
    prepare_environment(home)
    defs, instance = _definitions(home, None)
    ledger = Ledger(home.ledger)
    head = ledger.head()
    built_day = max(stored_days(home.claims, CURRENT_RULES.key))
    next_day = date.fromisoformat(built_day) + timedelta(days=1)
    # A day after the build (the ledger takes a commit time from its caller, as an import does).
    recorded = datetime.combine(next_day, time(9), tzinfo=timezone.utc)
    ledger.append([NewEntry(kind="message", scope="team", actor="Tomasz", session_id="elena-tomasz:S3",
                            content="I joined Acme Robotics last week.", valid_at=recorded)], recorded_at=recorded)
    assert days_to_extract(home, ledger, CURRENT_RULES.key) == [next_day.isoformat()]

    history = "select * exclude (visibility) from state_history where subject_id <> ? order by all"
    tomasz = None
    with duckdb.connect(str(home.warehouse_db), read_only=True) as con:
        tomasz = con.execute("select any_value(subject_id) from state_history where subject = 'Tomasz'").fetchone()[0]
        others_before = con.execute(history, [tomasz]).fetchall()
    assert tomasz and others_before

    before = set(_runs(instance))
    report = build(home, instance=instance)
    assert report.success, report.failed_steps
    runs = [r for r in _runs(instance) if r not in before]
    assert set(report.runs) <= set(runs)
    # Only the new day's partition was materialized, in every run of the build (dreaming may
    # have appended and run the views once more, again over the newest day only).
    assert _claims_partitions(instance, runs) == {next_day.isoformat()}
    # Dreaming found no rank and no community changed, so it appended nothing, and the build was
    # one run, dbt's data tests (the state models' asset checks) in it.
    assert report.ledger_head == head + 1 and len(report.runs) == 1, (report.ledger_head, report.runs)
    # The ledger was observed without a run of its own (the build's runs are all the runs it
    # started; a run of the observe job before it had its own start and events), and Dagster reads
    # the ledger's data version from that observation: every view the build compiled is fresh.
    assert set(runs) == set(report.runs), (runs, report.runs)
    (seen,) = instance.fetch_observations(dg.AssetRecordsFilter(asset_key=LEDGER), limit=1).records
    assert seen.run_id == "" and seen.event_log_entry.tags["dagster/data_version"] == str(head + 1)
    graph = defs.resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    assert resolver.get_current_data_version(LEDGER) == dg.DataVersion(str(head + 1))
    unpartitioned = [k for k in graph.materializable_asset_keys if graph.get(k).partitions_def is None]
    assert {k.to_user_string(): resolver.get_status(k) for k in unpartitioned if resolver.get_status(k) != StaleStatus.FRESH} == {}
    dbt_checks = {f"{k.asset_key.to_user_string()}:{k.name}" for k in state_models().check_keys}
    assert dbt_checks <= report.checks.keys() and all(report.checks[k] for k in dbt_checks), report.checks
    assert stored_days(home.claims, CURRENT_RULES.key) == [built_day, next_day.isoformat()]
    # The fold's incremental models were appended to, not rebuilt (their events say so) ...
    for model in ("int_claims_joined_to_entries", "int_claim_closings_paired", "int_claim_actions_decided"):
        recs = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey(model)), limit=10).records
        new = [r.asset_materialization.metadata["full_refresh"].value for r in recs if r.run_id in runs]
        assert new and set(new) == {"no"}, (model, new)
    # ... and every other subject's history is as it was: only Tomasz's changed.
    with duckdb.connect(str(home.warehouse_db), read_only=True) as con:
        assert con.execute(history, [tomasz]).fetchall() == others_before
        assert con.execute("select count(*) from state_history where source_seq > ? and subject_id = ?", [head, tomasz]).fetchone()[0] >= 1

    # And then nothing is due.
    assert pending(home, defs, instance) == []
    assert build(home, instance=instance).up_to_date


def test_the_dbt_version_memc_reads_from_metadata_is_the_one_dbt_reports():
    """The state asset's dbt resource reads dbt-core's version from its package metadata instead
    of running `dbt --version` before every dbt step (assets/state.py): it must be what the dbt
    that runs the builds says it is."""
    import re
    import subprocess

    from assets.state import dbt_resource

    resource = dbt_resource()
    out = subprocess.run([resource.dbt_executable, "--version"], capture_output=True, text=True, check=True).stdout
    core = re.search(r"installed:\s*(\d+\.\d+\.\d+)", out) or re.search(r"(\d+\.\d+\.\d+)", out)
    assert str(resource._cli_version) == core.group(1), out

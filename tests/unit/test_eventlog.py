"""The event log memc's dagster.yaml names (orchestration/eventlog.py): Dagster's SQLite event log
with its engines kept open. Real Dagster runs on a real instance; the files it writes must read
the same through Dagster's own storage, and a forked process must not share the parent's
connections."""

from __future__ import annotations

import multiprocessing

import dagster as dg
import pytest
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

from orchestration.eventlog import MAX_OPEN_ENGINES, PooledSqliteEventLogStorage
from orchestration.runner import dagster_yaml
from orchestration.settings import Execution


@dg.asset
def fact() -> int:
    return 1


@pytest.fixture
def instance(tmp_path, monkeypatch):
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text(dagster_yaml(Execution()))
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as inst:
        yield inst


def _materializations(storage, run_id: str) -> int:
    return sum(1 for e in storage.get_logs_for_run(run_id) if e.dagster_event_type == dg.DagsterEventType.ASSET_MATERIALIZATION)


def test_runs_read_the_same_through_dagsters_own_storage(instance, tmp_path):
    storage = instance.event_log_storage
    assert isinstance(storage, PooledSqliteEventLogStorage)
    assert storage._base_dir == str(tmp_path / "dagster" / "history" / "runs")  # Dagster's default place
    runs = [dg.materialize([fact], instance=instance).run_id for _ in range(MAX_OPEN_ENGINES + 2)]
    assert len(storage._engines) <= MAX_OPEN_ENGINES  # one open file per recent run, not per run ever
    plain = SqliteEventLogStorage(storage._base_dir)
    assert [_materializations(plain, r) for r in runs] == [1] * len(runs)
    latest = plain.get_latest_materialization_events([dg.AssetKey("fact")])[dg.AssetKey("fact")]
    assert latest is not None and latest.run_id == runs[-1]  # the index shard was written too


def test_event_log_files_are_in_wal_mode_and_commit_without_an_fsync_each(instance):
    dg.materialize([fact], instance=instance)
    storage = instance.event_log_storage
    for shard, engine in storage._engines.items():
        with engine.connect() as conn:
            # journal WAL (Dagster's), synchronous 1 = NORMAL (ours): fsync at checkpoints
            assert conn.exec_driver_sql("pragma journal_mode").scalar() == "wal", shard
            assert conn.exec_driver_sql("pragma synchronous").scalar() == 1, shard


def _materialize_in_child(instance, out) -> None:
    storage = instance.event_log_storage
    inherited = len(storage._engines)
    result = dg.materialize([fact], instance=instance)
    out.put((inherited, storage._engines_pid == multiprocessing.current_process().pid, result.success))


def test_a_forked_process_opens_its_own_connections(instance):
    first = dg.materialize([fact], instance=instance)
    storage = instance.event_log_storage
    assert storage._engines  # the parent holds open engines when it forks
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_materialize_in_child, args=(instance, out))
    child.start()
    inherited, reset, ok = out.get(timeout=120)
    child.join(timeout=60)
    assert child.exitcode == 0 and inherited > 0 and reset and ok
    last = dg.materialize([fact], instance=instance)  # the parent's connections still work
    runs = [r.run_id for r in instance.get_runs()]
    assert len(runs) == 3 and first.run_id in runs and last.run_id in runs
    assert all(_materializations(storage, r) == 1 for r in runs)


def test_wipe_closes_the_engines_of_the_files_it_removes(instance):
    run = dg.materialize([fact], instance=instance).run_id
    storage = instance.event_log_storage
    storage.wipe()
    assert list(storage._engines) == ["index"]  # emptied, not unlinked: open again for that
    assert _materializations(storage, run) == 0
    assert _materializations(storage, dg.materialize([fact], instance=instance).run_id) == 1


def test_the_base_dir_defaults_to_dagster_home(monkeypatch, tmp_path):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    with pytest.raises(RuntimeError, match="needs DAGSTER_HOME"):
        PooledSqliteEventLogStorage.from_config_value(None, {})
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    storage = PooledSqliteEventLogStorage.from_config_value(None, {})
    assert storage._base_dir == str(tmp_path / "history" / "runs")
    storage.dispose()


@dg.asset_check(asset=fact)
def fact_is_one() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True)


def test_a_table_seen_to_exist_is_not_looked_up_again(instance, monkeypatch):
    """Dagster asks whether the asset check table exists before storing each check's result,
    with a schema query on an engine of its own each time; the storage asks once."""
    asked: list[str] = []
    looked_up = SqliteEventLogStorage.has_table
    monkeypatch.setattr(SqliteEventLogStorage, "has_table", lambda self, name: asked.append(name) or looked_up(self, name))
    for _ in range(3):
        result = dg.materialize([fact, fact_is_one], instance=instance)
        assert result.success and len(result.get_asset_check_evaluations()) == 1
    assert asked.count("asset_check_executions") == 1, asked
    storage = instance.event_log_storage
    assert not storage.has_table("no_such_table") and not storage.has_table("no_such_table")
    assert asked.count("no_such_table") == 2  # a table not there may be created: asked each time
    storage.wipe()
    assert storage.has_table("asset_check_executions") and asked.count("asset_check_executions") == 2

"""Dagster's SQLite event log with its database engines kept open, the event log of every home.

Dagster's ``SqliteEventLogStorage`` creates a SQLAlchemy engine, opens a connection and disposes
of both for every statement it runs: storing one event takes one to three of them (the run's
own database, then the index database for asset events, asset checks and run status). A build
of the sample home after one new message stores 474 events, and that churn cost 1.95 of the
3.24 s the event log took (cProfile, benchmarks/bench_build.py's one-message build; docs/
benchmarks.md). This subclass keeps one engine per database file, each with one pooled
connection, for the few most recent files (the index and the runs being written), so an event
costs its statements only. Everything else, the schema, the files and where they live, the
watchers the UI subscribes through, is Dagster's own; memc's dagster.yaml names this class
(orchestration/runner.py), and the base directory is Dagster's default, so a home written before
reads the same.

Safe as the parent is: the parent's lock still serializes every use of a connection in a
process (so a connection may move between threads), each database keeps SQLite's busy timeout,
other processes (the webserver, the daemon, a build) lock per transaction as before, and a
process forked from this one drops the engines it inherited instead of sharing their open
database handles.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from dagster import Field, StringSource
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._serdes import ConfigurableClassData
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool

# The index and the run being written, the run before it and a UI reading another: more open
# files would only hold descriptors (one per run ever made, in a long-lived daemon).
MAX_OPEN_ENGINES = 4


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    """``SqliteEventLogStorage`` that keeps an engine open per database file (see the module)."""

    def __init__(self, base_dir: str | None = None, inst_data: ConfigurableClassData | None = None):
        self._engines: OrderedDict[str, Engine] = OrderedDict()  # before the parent's init, which connects
        self._engines_pid = os.getpid()
        self._tables: set[str] = set()  # tables of the index database seen to exist
        super().__init__(base_dir or default_base_dir(), inst_data)

    @classmethod
    def config_type(cls) -> Mapping[str, Any]:
        # Optional, unlike the parent's: a home's dagster.yaml must not name its own path, since
        # homes are copied and moved (backups, tests) and the copy would write into the original.
        return {"base_dir": Field(StringSource, is_required=False)}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]):
        return cls(inst_data=inst_data, base_dir=config_value.get("base_dir"))

    def _engine(self, shard: str) -> Engine:
        if self._engines_pid != os.getpid():  # forked: the parent's connections are not ours
            for engine in self._engines.values():
                engine.dispose(close=False)
            self._engines.clear()
            self._engines_pid = os.getpid()
        engine = self._engines.get(shard)
        if engine is None:
            engine = create_engine(
                self.conn_string_for_shard(shard),
                poolclass=QueuePool,
                pool_size=1,
                max_overflow=2,  # a statement inside another's transaction (none seen; allowed)
                # The parent's lock guards every use; the pool may hand a connection to another thread.
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            )
            event.listen(engine, "connect", _wal_commits_without_fsync)
            self._engines[shard] = engine
            while len(self._engines) > MAX_OPEN_ENGINES:
                self._engines.popitem(last=False)[1].dispose()
        else:
            self._engines.move_to_end(shard)
        return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def has_table(self, table_name: str) -> bool:
        """Whether the index database has this table; a table once there is remembered. Dagster
        asks before storing each asset check result and asset event (``supports_asset_checks``,
        ...), each time with an engine and a schema query of its own: 250 times in a one-message
        build of the sample home, 0.2 s. Migrations only add tables; a wipe forgets them."""
        if table_name in self._tables:
            return True
        present = super().has_table(table_name)
        if present:
            self._tables.add(table_name)
        return present

    def _close_engines(self) -> None:
        with self._db_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()

    def wipe(self) -> None:
        self._close_engines()  # the run databases are unlinked: no connection may outlive them
        self._tables.clear()
        super().wipe()

    def dispose(self) -> None:
        self._close_engines()
        super().dispose()


def _wal_commits_without_fsync(dbapi_connection: Any, _record: Any) -> None:
    """SQLite's advice for a database in WAL mode (Dagster puts every event log file in it):
    ``synchronous=NORMAL`` fsyncs the log at checkpoints, not at every commit. A commit is still
    atomic and survives the process being killed; after a power cut the last commits may be rolled
    back, never half-applied. The build stores each of its ~480 events in one to three commits."""
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def default_base_dir() -> str:
    """Dagster's own default for the run-sharded event log: ``$DAGSTER_HOME/history/runs``."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        raise RuntimeError("the event log storage needs DAGSTER_HOME (memc sets it to <home>/dagster)")
    return os.path.join(home, "history", "runs", "")

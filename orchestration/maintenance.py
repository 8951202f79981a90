"""Maintenance that the compaction schedules run. Plain module: no Dagster.

View compaction: the LanceDB evidence table gains a version (a new manifest and small data
fragments) with every write, i.e. with every eager refresh; compacting merges the fragments,
folds the indexes, and deletes versions older than ``keep``.

Ledger compaction: every append is one Parquet file, and a read pays about 1.6 ms a file
whatever its size, so a home fed one entry at a time (the API, MCP, the inbox) reads slower
each week (on object storage, one GET each). ``compact_ledger`` asks the ledger to merge runs of
small batches; the protocol (journal, marker, swap under the rewrite lock, crash recovery) is
ledger/store.py's, the only writer of ledger files, and on S3 ledger/s3.py's (a merged marker
under the rewrite lease).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ledger import open_ledger
from memc.home import MemcHome
from memc.locks import exclusive
from views.build import vector_store

# Versions younger than this survive: a query that opened an older version a moment ago can
# still read it (LanceDB readers pin a version; deleting it under them makes them fail).
DEFAULT_KEEP = timedelta(minutes=10)


def compact_views(home: MemcHome, *, keep: timedelta = DEFAULT_KEEP) -> dict[str, Any]:
    store = vector_store(home)
    versions = store.versions()
    if versions is None:
        return {"compacted": False, "reason": "no evidence table yet"}
    before = {"versions": versions, "bytes": store.bytes_stored(), "rows": store.count()}
    store.compact(cleanup_older_than=keep)
    after = {"versions": store.versions(), "bytes": store.bytes_stored(), "rows": store.count()}
    if after["rows"] != before["rows"]:
        raise RuntimeError(f"compaction changed the row count: {before['rows']} -> {after['rows']}")
    return {"compacted": True, "before": before, "after": after}


def compact_ledger(home: MemcHome) -> dict[str, Any]:
    """Merge the ledger's small batches, local or on object storage, holding the home's build lock
    (waiting for a running build): dbt's staging model reads ledger/*.parquet by glob, not
    through the Ledger's reader, and for the moment between a merged file's publish and its
    sources' removal a glob sees both; no build may read then. (On S3 dbt reads the build's own
    mirror, which a compaction does not touch; the lock is held there too, one path for both.)"""
    ledger = open_ledger(home.ledger)
    with exclusive(home.build_lock, "ledger compaction", wait=True):
        head = ledger.head()
        report = ledger.compact()
        if ledger.head() < head:
            raise RuntimeError(f"ledger compaction moved the head back: {head} -> {ledger.head()}")
        return {**report.to_dict(), "head": ledger.head()}

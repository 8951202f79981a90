"""The marts dbt exports as Parquet, ``<home>/warehouse/marts/<name>.parquet``: their names, and
the one way to read them.

Readers read these exports, never the warehouse file: any process holding that file makes the
next ``dbt build`` fail to take DuckDB's lock. An empty model's export holds its columns and no
row (dbt_project/macros/mart_export.sql). Exports written before that materialization, by
dbt-duckdb's ``external``, held one all-NULL row for an empty model, and a home upgraded reads them
until its first build: ``read_mart`` drops such a row, and ``is_empty_export`` tells it from a real
one-row mart for readers that query the file in SQL."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from memc.atomic import read_parquet
from memc.home import MemcHome

STATE_CURRENT = "state_current"
STATE_HISTORY = "state_history"
STATE_CLOSINGS = "state_closings"
# Dreaming's derived analytics (centrality, community), apart from the facts in state_current.
ENTITY_ANALYTICS = "entity_analytics"
CONFLICTS = "conflicts"
ENTITIES = "entities"
INTERACTIONS = "interactions"
TIMELINE = "timeline"
GRAPH_ENTRIES = "graph_entries"
GRAPH_SESSIONS = "graph_sessions"
GRAPH_MENTIONS = "graph_mentions"
GRAPH_RELATIONS = "graph_relations"
# Two extractor versions on disk, fact by fact (dbt_project/models/marts/extractor_changes*.sql).
EXTRACTOR_CHANGES = "extractor_changes"
EXTRACTOR_CHANGES_BY_DAY = "extractor_changes_by_day"
# The write policy as a record: what the fold did with every claim (dbt_project/models/marts/memory_actions.sql).
MEMORY_ACTIONS = "memory_actions"


def mart_path(home: MemcHome, name: str) -> Path:
    return home.marts / f"{name}.parquet"


def is_empty_export(path: Path) -> bool:
    """True for an export of an empty model written by dbt-duckdb's ``external`` (before
    mart_export.sql): one row, every column null (only a one-row file, by its metadata, is read
    to tell)."""
    if pq.ParquetFile(path).metadata.num_rows != 1:
        return False
    return all(c.null_count == 1 for c in read_parquet(path).columns)


def read_mart(path: Path, columns: list[str] | None = None) -> pa.Table:
    """A mart file's rows, without the placeholder row of an empty model (so a home with no
    conversation sessions loads an empty interactions table, not an edge from None)."""
    t = read_parquet(path, columns=columns)
    return t.slice(0, 0) if t.num_rows == 1 and is_empty_export(path) else t

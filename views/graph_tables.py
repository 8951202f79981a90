"""The graph's input tables: the Arrow schemas of its nodes (entities, sessions, entries) and
edges (interactions, relations, mentions, entries in sessions), the checks every table passes
(schema, keys, no dangling edge) and the content version of a loaded graph. Plain pyarrow: the
Kùzu store (views/graph.py) loads what ``prepare_graph`` returns."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


TS = pa.timestamp("us", tz="UTC")

ENTITY_SCHEMA = pa.schema(
    [
        pa.field("entity_id", pa.string(), nullable=False),
        pa.field("scope", pa.string()),
        pa.field("name", pa.string()),
        pa.field("entity_type", pa.string()),
        pa.field("visibility", pa.list_(pa.string())),
        pa.field("evidence", pa.list_(pa.string())),  # ledger entry ids
    ]
)

INTERACTION_SCHEMA = pa.schema(
    [
        pa.field("src", pa.string(), nullable=False),
        pa.field("dst", pa.string(), nullable=False),
        pa.field("scope", pa.string()),
        pa.field("weight", pa.int64()),
        pa.field("first_at", TS),
        pa.field("last_at", TS),
        pa.field("evidence", pa.list_(pa.string())),
    ]
)

# The evidence layer (all optional in ``rebuild``): ledger entries, sessions, who is mentioned
# where, and relations between entities from current claims. Same column names as the dbt marts
# graph_entries, graph_sessions, graph_mentions and graph_relations.
ENTRY_SCHEMA = pa.schema(
    [
        pa.field("entry_id", pa.string(), nullable=False),
        pa.field("seq", pa.int64()),
        pa.field("scope", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("session_key", pa.string()),
        pa.field("actor", pa.string()),
        pa.field("source_ref", pa.string()),
        pa.field("valid_at", TS),
        pa.field("recorded_at", TS),
        pa.field("visibility", pa.list_(pa.string())),
    ]
)

SESSION_SCHEMA = pa.schema(
    [
        pa.field("session_key", pa.string(), nullable=False),
        pa.field("scope", pa.string()),
        pa.field("session_id", pa.string()),
        pa.field("entry_count", pa.int64()),
        pa.field("first_at", TS),
        pa.field("last_at", TS),
        pa.field("visibility", pa.list_(pa.string())),
    ]
)

MENTION_SCHEMA = pa.schema(
    [
        pa.field("entry_id", pa.string(), nullable=False),
        pa.field("entity_id", pa.string(), nullable=False),
        pa.field("scope", pa.string()),
    ]
)

RELATION_SCHEMA = pa.schema(
    [
        pa.field("src", pa.string(), nullable=False),
        pa.field("dst", pa.string(), nullable=False),
        pa.field("scope", pa.string()),
        pa.field("predicate", pa.string()),
        pa.field("object", pa.string()),
        pa.field("valid_from", TS),
        pa.field("recorded_at", TS),
        pa.field("claim_id", pa.string()),
        pa.field("weight", pa.int64()),
        pa.field("evidence", pa.list_(pa.string())),
        pa.field("visibility", pa.list_(pa.string())),
    ]
)

IN_SESSION_SCHEMA = pa.schema([pa.field("entry_id", pa.string(), nullable=False), pa.field("session_key", pa.string(), nullable=False)])

NODE_TABLES = ("Entity", "Session", "Entry")

EDGE_TABLES = ("INTERACTS", "RELATES", "MENTIONS", "IN_SESSION")


def _conform(table: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    if not isinstance(table, pa.Table):
        raise TypeError(f"{what} must be a pyarrow.Table, not {type(table).__name__}")
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise ValueError(f"{what} lack column(s) {missing}")
    cols = [table.column(f.name).cast(f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


def both_directions(interactions: pa.Table) -> pa.Table:
    """Interactions are symmetric, but Kùzu's page_rank follows edge direction: store each pair
    both ways so that neither speaker is favoured by which id sorts first."""
    if interactions.num_rows == 0:
        return interactions
    reverse = interactions.set_column(
        interactions.schema.get_field_index("src"), "src", interactions.column("dst")
    ).set_column(interactions.schema.get_field_index("dst"), "dst", interactions.column("src"))
    return pa.concat_tables([interactions, reverse.cast(interactions.schema)])


def _keys(table: pa.Table, col: str, what: str) -> pa.Array:
    """The table's keys (checked non-empty and unique), as the value set edges are checked against.
    In Arrow: at 100k entries these checks took ~0.1 s of a rebuild as Python sets."""
    ids = table.column(col).combine_chunks()
    if ids.null_count or pc.any(pc.equal(ids, ""), min_count=0).as_py():
        raise ValueError(f"{what}: {col} must be a non-empty string")
    if pc.count_distinct(ids).as_py() != len(ids):
        raise ValueError(f"{what}: duplicate {col}")
    return ids


def _dangling(table: pa.Table, col: str, known: pa.Array, what: str, target: str) -> None:
    values = table.column(col)
    unknown = values.filter(pc.invert(pc.is_in(values, value_set=known)))
    if len(unknown):
        dangling = sorted(set(unknown.to_pylist()), key=lambda v: "" if v is None else v)
        raise ValueError(f"{what}: {col} names unknown {target} {dangling[:5]}")


def _sorted(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    return table.sort_by([(k, "ascending") for k in keys]) if table.num_rows else table


def prepare_graph(
    entities: pa.Table,
    interactions: pa.Table,
    *,
    entries: pa.Table | None = None,
    sessions: pa.Table | None = None,
    mentions: pa.Table | None = None,
    relations: pa.Table | None = None,
) -> dict[str, pa.Table]:
    """Validate and canonically order the input, one table per Kùzu table (the order fixes
    PageRank's and Louvain's float summation order, so ranks are identical across rebuilds)."""
    ents = _conform(entities, ENTITY_SCHEMA, "entities")
    inter = _conform(interactions, INTERACTION_SCHEMA, "interactions")
    entr = _conform(entries if entries is not None else ENTRY_SCHEMA.empty_table(), ENTRY_SCHEMA, "entries")
    sess = _conform(sessions if sessions is not None else SESSION_SCHEMA.empty_table(), SESSION_SCHEMA, "sessions")
    ment = _conform(mentions if mentions is not None else MENTION_SCHEMA.empty_table(), MENTION_SCHEMA, "mentions")
    rel = _conform(relations if relations is not None else RELATION_SCHEMA.empty_table(), RELATION_SCHEMA, "relations")

    known = _keys(ents, "entity_id", "entities")
    for col in ("src", "dst"):
        _dangling(inter, col, known, "interactions", "entities")
        _dangling(rel, col, known, "relations", "entities")
    entry_ids = _keys(entr, "entry_id", "entries")
    session_keys = _keys(sess, "session_key", "sessions")
    _dangling(ment, "entity_id", known, "mentions", "entities")
    _dangling(ment, "entry_id", entry_ids, "mentions", "entries")
    in_session = entr.select(["entry_id", "session_key"]).filter(pc.is_valid(entr.column("session_key")))
    in_session = in_session.cast(IN_SESSION_SCHEMA)
    _dangling(in_session, "session_key", session_keys, "entries", "sessions")
    return {
        "Entity": _sorted(ents, ["entity_id"]),
        "Session": _sorted(sess, ["session_key"]),
        "Entry": _sorted(entr, ["entry_id"]),
        "INTERACTS": _sorted(inter, ["src", "dst", "scope", "first_at"]),
        "RELATES": _sorted(rel, ["src", "dst", "claim_id"]),
        "MENTIONS": _sorted(ment, ["entry_id", "entity_id"]),
        "IN_SESSION": _sorted(in_session, ["entry_id"]),
    }


def prepared_version(tables: dict[str, pa.Table]) -> str:
    """The content version of what ``prepare_graph`` returned (every store records this one)."""
    return graph_version(*(tables[t] for t in ("Entity", "INTERACTS", "Session", "Entry", "RELATES", "MENTIONS")))


def graph_version(*tables: pa.Table) -> str:
    """A content version of the graph's input (same input, same version), which the graph's
    metadata reports (graph.json, the asset's materialization, the in-memory twin's answer).

    Tables that are empty do not change the version, so a graph of entities and interactions
    alone keeps the version it had before the evidence layer existed.

    Each table is hashed as the bytes of one uncompressed Parquet file of it, its chunks combined
    first: its values and types, whatever chunks carried them (a null's slot holds no bytes
    there), written by Arrow's C++ writer. Until 2026-12-07 it was the JSON of every row, which
    took 1.8 s of a one-message build's ~4 s graph step at 100k entries (0.11-0.15 s now,
    docs/benchmarks.md), and every version changed once with it. A later pyarrow may write the
    same content otherwise and so name it anew, once: nothing recomputes a past version to
    compare it."""
    h = hashlib.sha256()
    for i, t in enumerate(tables):
        if i >= 2 and t.num_rows == 0:
            continue
        sink = pa.BufferOutputStream()
        pq.write_table(t.combine_chunks(), sink, compression="none")
        h.update(sink.getvalue())
        h.update(b"\x00")
    return "g_" + h.hexdigest()[:24]

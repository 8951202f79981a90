"""The rows of the evidence index: the schema callers hand to ``sync``, what every search hit
carries, the Lance table schema with the embedding model in its metadata, and the checks a row
passes before it is stored (views/vectors.py stores them).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memc.ids import canonical_json, json_rows, text_hash
from views.embedder import EMBEDDING_DIM, EMBEDDING_MODEL, EMBEDDING_MODEL_VERSION
from memc.visibility import check_literal
from views.lance_filters import HASH_RE, ID_RE

TS = pa.timestamp("us", tz="UTC")

# The rows a caller hands to ``sync``: one per chunk of ledger text.
EVIDENCE_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),  # content-addressed chunk id, unique
        pa.field("entry_id", pa.string()),
        pa.field("seq", pa.int64()),
        pa.field("kind", pa.string()),
        pa.field("scope", pa.string()),
        pa.field("session_id", pa.string()),
        pa.field("actor", pa.string()),
        pa.field("source_ref", pa.string()),
        pa.field("visibility", pa.list_(pa.string())),
        pa.field("valid_at", TS),
        pa.field("recorded_at", TS),
        pa.field("text", pa.string()),
        pa.field("content_hash", pa.string()),  # sha256 hex of text
        # Entities the row is about (speaker, mentioned people, a claim's subject and object): the
        # graph route hands entity ids to retrieval, which filters on them before ranking.
        pa.field("entity_ids", pa.list_(pa.string())),
        # Claim rows only: the claim rendered in the row. Their entry_id is the claim's source
        # ledger entry, so every row of the view names the ledger entry that supports it.
        pa.field("claim_id", pa.string()),
    ]
)

REQUIRED_COLUMNS = ("id", "entry_id", "kind", "scope", "visibility", "text", "content_hash")

# Columns a caller may leave out; they are stored as nulls.
OPTIONAL_COLUMNS = tuple(n for n in EVIDENCE_SCHEMA.names if n not in REQUIRED_COLUMNS)

# What every search hit carries (plus score, route and rank).
HIT_COLUMNS = (
    "id",
    "entry_id",
    "seq",
    "source_ref",
    "scope",
    "kind",
    "actor",
    "session_id",
    "visibility",
    "valid_at",
    "recorded_at",
    "text",
    "entity_ids",
    "claim_id",
)

META_MODEL = b"memc.embedding_model"

META_VERSION = b"memc.embedding_model_version"

META_DIM = b"memc.embedding_dim"


def evidence_table(rows: Iterable[dict[str, Any]]) -> pa.Table:
    """Build the ``sync`` input from dicts (handy in tests and small producers)."""
    return pa.Table.from_pylist(list(rows), schema=EVIDENCE_SCHEMA)


def lance_schema(dim: int, model: str, version: str) -> pa.Schema:
    """The stored schema: the evidence columns, a row fingerprint and the vector, plus model metadata."""
    fields = list(EVIDENCE_SCHEMA) + [
        pa.field("row_hash", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), dim)),
    ]
    return pa.schema(fields, metadata={META_MODEL: model.encode(), META_VERSION: version.encode(), META_DIM: str(dim).encode()})


def normalize_rows(rows: pa.Table, *, verify_texts: bool = True) -> pa.Table:
    """Validate ``rows`` and cast them to :data:`EVIDENCE_SCHEMA` (extra columns are dropped).

    ``verify_texts=False`` leaves out the check that each content_hash is its text's sha256 (one
    sha256 a row: 0.35 s of a one-message build at 100k entries): a sync makes only the rows it
    will write pass :func:`check_texts`, before it writes anything. The rows it leaves in place
    equal, column for column, rows that passed it when they were written."""
    if not isinstance(rows, pa.Table):
        raise TypeError(f"rows must be a pyarrow.Table, not {type(rows).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in rows.column_names]
    if missing:
        raise ValueError(f"rows lack required column(s) {missing}")
    cols = []
    for f in EVIDENCE_SCHEMA:
        if f.name in rows.column_names:
            cols.append(rows.column(f.name).cast(f.type))
        else:
            cols.append(pa.nulls(rows.num_rows, f.type))
    out = pa.Table.from_arrays(cols, schema=EVIDENCE_SCHEMA.with_metadata(None)) if rows.num_rows else EVIDENCE_SCHEMA.empty_table()
    ids = out.column("id")
    _check_all(ids, ID_RE, "id")
    if pc.count_distinct(ids).as_py() != out.num_rows:
        seen: set[str] = set()
        dupes = sorted({i for i in ids.to_pylist() if i in seen or seen.add(i)})  # type: ignore[func-returns-value]
        raise ValueError(f"duplicate id(s) in rows: {dupes[:5]}")
    if verify_texts:
        check_texts(out)
    return out


def _check_all(values: pa.ChunkedArray, pattern: Any, what: str) -> None:
    """check_literal over a column, in Arrow (RE2, whose ``$`` is the end of the value); the
    first value that fails is named as check_literal names it."""
    ok = pc.fill_null(pc.match_substring_regex(values, pattern.pattern), False)
    if values.null_count or not pc.all(ok, min_count=0).as_py():
        bad = values.filter(pc.invert(ok))[0].as_py()
        check_literal(bad, pattern, what)
        raise ValueError(f"malformed {what} {bad!r}: must match {pattern.pattern}")


def check_texts(rows: pa.Table) -> None:
    """Every row has a text and its content_hash is the text's sha256: vectors are reused by hash,
    so a wrong hash would silently attach another text's vector."""
    for i, t, h in zip(rows.column("id").to_pylist(), rows.column("text").to_pylist(), rows.column("content_hash").to_pylist()):
        if t is None:
            raise ValueError(f"row {i} has no text")
        if h is None or not HASH_RE.match(h) or text_hash(t) != h:
            raise ValueError(f"row {i}: content_hash is not the sha256 of its text")


def hash_rows(rows: pa.Table) -> list[str]:
    """A fingerprint of every stored column of each row, stored beside it (``row_hash``): the
    SHA-256 of the row as a JSON object (keys sorted), cut to 32 hex digits. ``sync`` tells a
    changed row by its columns (:func:`differing_rows`), so only the rows written are hashed."""
    return [hashlib.sha256(canonical_json(r).encode("utf-8")).hexdigest()[:32] for r in json_rows(rows)]


def _same_values(a: pa.Array, b: pa.Array) -> pa.Array:
    """Per row: whether ``a`` and ``b`` hold the same value (two nulls are the same; a list is
    compared by its length and its items joined with a separator no id, name or principal holds)."""
    if pa.types.is_list(a.type) or pa.types.is_large_list(a.type):
        same_length = pc.equal(pc.list_value_length(a), pc.list_value_length(b))
        a, b = pc.binary_join(a, "\x1f"), pc.binary_join(b, "\x1f")
        return pc.and_(_same_values(a, b), pc.fill_null(same_length, True))  # (null lengths: the lists' nulls, compared above)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    return pc.or_(pc.fill_null(pc.equal(a, b), False), both_null)


def differing_rows(
    wanted: pa.Table, stored: pa.Table, *, key: str = "id", columns: Sequence[str] | None = None
) -> tuple[list[str], list[str], list[int]]:
    """What makes ``stored`` (the table's rows, every column of EVIDENCE_SCHEMA, or ``columns``)
    equal to ``wanted`` (normalized rows, unique ``key``s): (keys to delete, keys whose row
    changed, positions in ``wanted`` of the rows to add: new keys and changed rows). Compared column
    by column in Arrow, which at 100k entries takes a fraction of hashing every wanted row again
    (~2.3 s a build). The evidence rows' own inputs (ledger entries, claims) are compared the same
    way (views/evidence.py :func:`~views.evidence.index_rows_since`)."""
    at = pc.index_in(wanted.column(key), value_set=stored.column(key))  # each wanted row's stored row, or null
    present = pc.is_valid(at)
    mine = wanted.filter(present)
    theirs = stored.take(pc.drop_null(at))
    same = pa.array([True] * mine.num_rows, pa.bool_())
    for name in EVIDENCE_SCHEMA.names if columns is None else columns:
        ours = mine.column(name).combine_chunks()
        same = pc.and_(same, _same_values(ours, theirs.column(name).combine_chunks().cast(ours.type)))
    changed = pc.invert(same)
    replaced = mine.column(key).filter(changed).to_pylist()
    kept_at = pc.indices_nonzero(present)  # the positions in wanted of mine's rows
    add = pc.indices_nonzero(pc.invert(present)).to_pylist() + kept_at.take(pc.indices_nonzero(changed)).to_pylist()
    gone = stored.column(key).filter(pc.invert(pc.is_in(stored.column(key), value_set=wanted.column(key)))).to_pylist()
    return sorted(gone), sorted(replaced), sorted(add)


def same_fields(a: pa.Schema, b: pa.Schema) -> bool:
    return [(f.name, f.type) for f in a] == [(f.name, f.type) for f in b]


def fixed_vectors(matrix: np.ndarray, dim: int) -> pa.Array:
    flat = pa.array(np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1), pa.float32())
    return pa.FixedSizeListArray.from_arrays(flat, dim)


def embedder_info(embedder: Any) -> tuple[str, str, int]:
    return (
        str(getattr(embedder, "model_name", EMBEDDING_MODEL)),
        str(getattr(embedder, "model_version", EMBEDDING_MODEL_VERSION)),
        int(getattr(embedder, "dim", EMBEDDING_DIM)),
    )

"""The vector + full-text view of the evidence, over LanceDB.

One row per chunk of ledger text or claim sentence; the claims' rows are a table of their own
beside the others (``KIND_PARTS``), which callers still name as one. The view is rebuildable from
the ledger at any time: ``sync`` makes a table hold exactly the rows it is given, and only text it
has never embedded costs an embedding (vectors are reused by ``content_hash``). Search always
pushes the asker's visibility into LanceDB as a prefilter, then checks it again in Python.

Everything LanceDB-specific lives in :class:`LanceVectorStore`; callers see :class:`VectorStore`.
``lancedb`` is imported lazily (1.8 s). One room of ~1,200 lines on purpose: the store's syncs,
swaps, index maintenance and searches share one connection cache and one table-swap protocol
(a reader must never open a table a sync is replacing). Its filters and its row schema live
beside it, in views/lance_filters.py and views/evidence_schema.py.

Verified on lancedb 0.40.0 (see tests/engine/test_vectors.py):

* visibility filter: ``array_has_any(visibility, ['public', 'alice'])`` works as a true prefilter for
  both vector and full-text search (``array_has``/``array_contains``/``list_has_any`` parse too);
* filters are SQL text: a value inlined unescaped is an injection (``id = 'a\\' OR true --'`` matches
  every row; a backslash is a literal character, doubling ``'`` escapes it). Every literal
  views/lance_filters.py puts in a filter is checked against a strict pattern first (no quotes, no backslashes) and refused
  otherwise, so nothing depends on escaping;
* native full-text search (``create_index("text", config=FTS(...))``; ``create_fts_index`` is
  deprecated since 0.25) works offline, in ``memory://`` too, and with ``.where(..., prefilter=True)``;
  rows added after the index was built are still found (searched flat) until the index is rebuilt;
* an approximate vector index (IVF_HNSW_SQ, cosine) keeps ``.where(..., prefilter=True)`` and
  searches rows added after it flat as well; it is built only for tables of
  ``VECTOR_INDEX_MIN_ROWS`` rows or more (below that an exact scan is fast and exact).
"""


from __future__ import annotations

import logging
import os
import shutil
import threading
import uuid
import warnings
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memc.visibility import check_literal
from memc.watermark import FILE as WATERMARK_FILE
from memc.watermark import read_watermark, watermark_record, write_watermark
from views.evidence_schema import (
    EVIDENCE_SCHEMA,
    HIT_COLUMNS,
    META_DIM,
    META_MODEL,
    META_VERSION,
    check_texts,
    differing_rows,
    embedder_info,
    fixed_vectors,
    hash_rows,
    lance_schema,
    normalize_rows,
    same_fields,
)  # fmt: skip
from views.lance_filters import (
    HASH_RE,
    ID_RE,
    TABLE_RE,
    allowed_principals,
    arrow_filter,
    chunks,
    ids_filter,
    search_filter,
    sql_list,
    visible_rows,
    within_window,
)  # fmt: skip
from views.evidence import CLAIM_KIND
from views.evidence_rows import ROW_ID, EvidenceRows
from views.grouped import table_rows

if TYPE_CHECKING:  # pragma: no cover
    from views.embedder import TextEmbedder

log = logging.getLogger(__name__)

DEFAULT_TABLE = "evidence"

# Rows of these kinds live in a table of their own beside the others, a *part* of the logical
# table callers name: the claim sentences in "evidence_claims" beside the turns in "evidence".
# A claims-only search of one shared approximate index walks the turns' graph too: at 100k
# entries the facts route's vector search took 41-54 ms for the slowest questions, and on
# copies of the table split by kind the claims' p95 went 43 -> 13 ms and the turns' own 26 ->
# 15-17 ms (docs/benchmarks.md). Each part is a whole table (its own indexes, versions and held
# rows); the store syncs, rebuilds, drops and audits them together. The replies keyed with their
# questions (views/evidence.py exchange_rows) stay with the turns: they are ranked with them, and
# one search of one table costs less than two merged.
KIND_PARTS = {CLAIM_KIND: "claims"}

# Names the parts above: part of the evidence index's code version (assets/retrieval.py), so a
# home built with another layout is synced again, which moves its rows.
INDEX_LAYOUT = "parts-" + "-".join(sorted(KIND_PARTS))


def table_parts(table: str, kinds: Sequence[str] | None = None) -> list[str]:
    """The parts of the logical ``table`` that hold rows of ``kinds`` (every part for None):
    ``table`` itself first, then ``<table>_<part>`` for the kinds of :data:`KIND_PARTS`."""
    every = [table, *(f"{table}_{p}" for p in dict.fromkeys(KIND_PARTS.values()))]
    if kinds is None:
        return every
    wanted = {f"{table}_{KIND_PARTS[k]}" if k in KIND_PARTS else table for k in kinds}
    return [p for p in every if p in wanted]

# One LanceDB connection per store directory in a process (see LanceVectorStore._connection):
# absolute path -> (connection, table name -> (inode, ctime) of the table directory it has seen).
_CONNECTIONS: dict[str, tuple[Any, dict[str, tuple[int, int]]]] = {}

# The tables a connection has opened, kept open (LanceVectorStore._open): connection -> table name
# -> handle; gone with the connection when a rebuild replaces it.
_HANDLES: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()

_CONNECTIONS_LOCK = threading.Lock()

# The rows of a table version held in memory without vectors (views/evidence_rows.py): a
# compile's searches select their hits' ids only and its windows read whole sessions from them
# (at 100k entries: p50 56 -> 36 ms). One per (directory, table) in a process, of the newest
# version only: (connection, physical table, its version, its row count, EvidenceRows or None).
# A table (each part of one: see KIND_PARTS) of more rows than MEMC_EVIDENCE_ROWS_HELD (0 turns
# it off) is read from LanceDB each time. By default a process holds as many rows as an eighth
# of the machine's memory takes at HELD_ROW_BYTES a row (3.1M rows on 24 GB, 0.5M on 4 GB):
# 161k rows (100k entries) hold ~55 MB, the 1.6M rows of the 1M-entry bench home 1.47 GB
# (longer texts), read in 4 s; held, that home's compile p50/p95 went 147/253 -> 85/124 ms
# (docs/benchmarks.md). EVIDENCE_ROWS_HELD is the default where the machine's memory cannot be
# read.
EVIDENCE_ROWS_HELD = 1_000_000
HELD_ROW_BYTES = 1024
HELD_SHARE_OF_MEMORY = 1 / 8


def rows_held_by_default() -> int:
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not on Linux
        return EVIDENCE_ROWS_HELD
    return int(memory * HELD_SHARE_OF_MEMORY / HELD_ROW_BYTES)

_HELD: dict[tuple[str, str], tuple[Any, str, int, int, EvidenceRows | None]] = {}

_HELD_LOCK = threading.Lock()

# Scalar indexes (column, lancedb.index config) on what search_filter and session_rows filter on:
# visibility and entity_ids with array_has_any, kind and scope by equality (few values: bitmaps),
# session_id IN (...) and valid_at ranges (many values: B-trees); entry_id IN (...) for the
# compiler's state route (the turns a fact was drawn from), a lookup rather than a scan.
SCALAR_INDEXES = (
    ("visibility", "LabelList"),
    ("kind", "Bitmap"),
    ("scope", "Bitmap"),
    ("session_id", "BTree"),
    ("entry_id", "BTree"),
    ("entity_ids", "LabelList"),
    ("valid_at", "BTree"),
)

# An approximate vector index from this many rows on. Exact search scans every visible vector:
# at 16k rows 17 ms, at 162k rows 87 ms per query, the largest stage of a compile at 100k ledger
# entries. IVF_HNSW_SQ with the re-rank below answers in ~17 ms there with 0.997 of the exact top
# 40, for 66-116 s of index build on two cores; below ~50k rows the exact scan stays under ~30 ms
# and its answers are exact. MEMC_VECTOR_INDEX_MIN_ROWS overrides it.
VECTOR_INDEX_MIN_ROWS = 50_000

# Rows added since the vector index was built are scanned exactly; past this share of the table
# the index is rebuilt (incremental syncs add a few rows; a rebuild costs a minute at 160k).
VECTOR_INDEX_MAX_UNINDEXED = 0.10

# The approximate index's candidates re-ranked by exact distance: k x this many (no effect on an
# exact scan). At 162k rows, against the exact top 40: 1 keeps 0.987 of it (13.5 ms), 2 keeps
# 0.997 and all of the top 10 (16.6 ms), 4 all of it (21.6 ms).
VECTOR_REFINE_FACTOR = 2

# Rows embedded and committed together by a sync: each commit is a LanceDB version, so a build
# that stops (killed, out of memory) keeps what it embedded and the next sync embeds only the
# rest. At ~200 texts/s on two cores one commit is ~2.5 min of embedding: a 1M-entry home's first
# build (~1.6M rows, 70-90 min) lost everything when it stopped before this. MEMC_SYNC_COMMIT_ROWS
# overrides it.
SYNC_COMMIT_ROWS = 32_768


class EmbeddingModelMismatch(ValueError):
    """A query vector from one embedding model against a table embedded with another: the scores
    would be meaningless, so the search is refused rather than answered."""


# What a view derived from the index groups rows by (VectorStore.kind_rows).
GROUPING_COLUMNS = ("entry_id", "scope", "actor", "session_id", "valid_at", "seq", "id", "vector")


@runtime_checkable
class VectorStore(Protocol):
    """A rebuildable vector + full-text view with mandatory visibility filtering."""

    def sync(self, rows: pa.Table, embedder: "TextEmbedder", *, table: str = DEFAULT_TABLE) -> dict[str, Any]:
        """Make ``table`` hold exactly ``rows``, embedding only content hashes it has not seen."""
        ...

    def rebuild(self, rows: pa.Table, embedder: "TextEmbedder", *, table: str = DEFAULT_TABLE) -> dict[str, Any]:
        """Like ``sync``, but into a fresh table that replaces the old one (erasure: no old bytes stay)."""
        ...

    def search(
        self,
        *,
        vector: Sequence[float] | np.ndarray | None = None,
        text: str | None = None,
        principals: Sequence[str],
        scope: str | None,
        k: int,
        kinds: Sequence[str] | None = None,
        table: str = DEFAULT_TABLE,
        phrase: bool = False,
        entity_ids: Sequence[str] | None = None,
        model_version: str | None = None,
        valid_between: tuple[datetime | None, datetime | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Hits the principals may see, tagged ``route`` = "vector" | "fulltext"."""
        ...

    def session_rows(
        self,
        *,
        session_ids: Sequence[str],
        principals: Sequence[str],
        scope: str | None,
        kinds: Sequence[str] | None = None,
        table: str = DEFAULT_TABLE,
    ) -> list[dict[str, Any]]:
        """Every row of these sessions the principals may see: a hit's conversation window."""
        ...

    def session_table(
        self,
        *,
        session_ids: Sequence[str],
        principals: Sequence[str],
        scope: str | None,
        kinds: Sequence[str] | None = None,
        table: str = DEFAULT_TABLE,
    ) -> pa.Table:
        """:meth:`session_rows` as Arrow, unordered, for a caller that converts only the rows it
        shows and checks those again (views/lance_filters.py visible_rows)."""
        ...

    def entry_rows(
        self,
        *,
        entry_ids: Sequence[str],
        principals: Sequence[str],
        scope: str | None,
        kinds: Sequence[str] | None = None,
        table: str = DEFAULT_TABLE,
        with_vectors: bool = False,
    ) -> list[dict[str, Any]]:
        """The rows of these ledger entries the principals may see: evidence reached through a
        fact drawn from it (the compiler's state route) or a memory unit, not through a search.
        ``with_vectors`` adds each row's ``vector``."""
        ...

    def kind_rows(self, kinds: Sequence[str], columns: Sequence[str] = GROUPING_COLUMNS, table: str = DEFAULT_TABLE) -> pa.Table:
        """Every row of these kinds, unfiltered by visibility, with ``columns`` (by default what a
        derived view groups by, the vector included): for views compiled from the index at
        build time and their audits (views/units.py), never for an asker."""
        ...

    def count(self, table: str = DEFAULT_TABLE) -> int: ...

    def hold(self, table: str = DEFAULT_TABLE) -> int:
        """Read into memory what a compile reads of this version of ``table`` (the rows a
        process holds, if it holds any), so that the next search does not; the rows held."""
        ...

    def ids(self, table: str = DEFAULT_TABLE) -> list[str]:
        """Every row id, sorted (what the view audit compares with the ledger's rows)."""
        ...

    def model_info(self, table: str = DEFAULT_TABLE) -> dict[str, Any] | None: ...

    def health(self, table: str = DEFAULT_TABLE) -> dict[str, Any] | None:
        """What the checks need to trust the view (None if the table is missing)."""
        ...

    def versions(self, table: str = DEFAULT_TABLE) -> int | None:
        """How many versions of the table are kept (None if it is missing)."""
        ...

    def compact(self, table: str = DEFAULT_TABLE, *, cleanup_older_than: timedelta = timedelta(0)) -> None:
        """Compact fragments and drop versions older than ``cleanup_older_than``."""
        ...

    def drop(self, table: str = DEFAULT_TABLE) -> None:
        """Remove the table and its files (the erasure path)."""
        ...

    def built(self, table: str = DEFAULT_TABLE) -> bool:
        """Whether a build made the store (cheap: asked before a model is loaded)."""
        ...

    def read_watermark(self) -> dict[str, Any] | None:
        """The ledger watermark record the index was built from, kept with the index."""
        ...

    def write_watermark(self, view: str, watermark: int, **info: Any) -> dict[str, Any]: ...

    def clear_watermark(self) -> None: ...

    def bytes_stored(self) -> int:
        """Bytes held, every retained version included."""
        ...


class LanceVectorStore:
    """:class:`VectorStore` over LanceDB. ``uri`` is a directory or ``"memory://"`` (an in-memory twin).

    One writer at a time (the Dagster asset); readers may run alongside: LanceDB versions every commit.
    """

    def __init__(self, uri: str | Path, *, vector_index_min_rows: int | None = None, commit_rows: int | None = None) -> None:
        self.uri = str(uri)
        self.in_memory = self.uri.startswith("memory://")
        self._db: Any = None
        self._mark: dict[str, Any] | None = None  # the in-memory twin's watermark
        self._pinned: dict[tuple[str, str], tuple[Any, str, int, dict[str, Any] | None]] | None = None  # see pinned()
        if vector_index_min_rows is None:
            vector_index_min_rows = int(os.environ.get("MEMC_VECTOR_INDEX_MIN_ROWS", VECTOR_INDEX_MIN_ROWS))
        self.vector_index_min_rows = vector_index_min_rows
        if commit_rows is None:
            commit_rows = int(os.environ.get("MEMC_SYNC_COMMIT_ROWS", SYNC_COMMIT_ROWS))
        if commit_rows < 1:
            raise ValueError(f"commit_rows must be at least 1, got {commit_rows}")
        self.commit_rows = commit_rows

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r})"

    def pinned(self) -> "LanceVectorStore":
        """This store, reading each table's version and schema once, for the reads of one
        compile (query/retrieve.py makes a store per compile). Each is a call into LanceDB's
        event loop, and a compile's searches and lookups made ten or more: alone 0.4 ms each, but
        from a route thread while another thread runs Python a call waits for the GIL on both
        sides (docs/benchmarks.md). Pinned, the rows held for the version first read serve the
        compile's later lookups, or those of a newer version when another reader moved them on;
        a search's query still runs on the table's newest version, and a hit not among the rows
        held is read from the table (:func:`_hit_rows`). A table swapped in by an erasure
        rebuild is another connection or table, never answered from what was pinned."""
        self._pinned = {}
        return self

    # -- plumbing ---------------------------------------------------------------------------------

    @property
    def db(self) -> Any:
        if self._db is None:
            self._db = self._connection()
        return self._db

    def _connection(self, table: str | None = None) -> Any:
        """A LanceDB connection; one per directory in a process, shared by every store object.

        A connection holds LanceDB's session: the indexes (full text, scalar, vector) and file
        metadata it has read. A fresh connection per compile reads them again on every query;
        shared, they are read once per version of the table. Its tables are opened with
        ``read_consistency_interval`` 0: a handle kept open (see :meth:`_open`) checks for a newer
        version before each read, so it answers as a freshly opened one would. A table swapped in
        by a rebuild (erasure) is a new directory: its identity (inode, ctime) differs, and the
        connection is replaced, so nothing read from the retired table is kept here."""
        import lancedb  # lazy: 2.2 s to import; commands that never open the index skip it

        if self.in_memory:
            return self._db if self._db is not None else lancedb.connect(self.uri)
        key = os.path.abspath(self.uri)
        ident = None
        if table is not None:
            try:
                st = os.stat(os.path.join(key, f"{table}.lance"))
                ident = (st.st_ino, st.st_ctime_ns)
            except OSError:
                pass
        with _CONNECTIONS_LOCK:
            conn, seen = _CONNECTIONS.get(key, (None, {}))
            if conn is None or not os.path.isdir(key) or (ident is not None and seen.get(table, ident) != ident):
                conn, seen = lancedb.connect(self.uri, read_consistency_interval=timedelta(0)), {}  # creates a local directory if missing
                _CONNECTIONS[key] = (conn, seen)
            if ident is not None:
                seen[table] = ident
        return conn

    def _open(self, table: str) -> Any | None:
        """The open table, or None when it does not exist. A local store keeps each table's handle
        open with its connection: opening reads the manifest (~1 ms on two cores), and a compile
        asked for its two tables 7 times (docs/benchmarks.md, "Tables kept open, the question embedded
        first")."""
        check_literal(table, TABLE_RE, "table name")
        if not self.in_memory and not Path(self.uri).exists():
            return None  # reading never creates the store
        self._db = self._connection(table)
        handles = None
        if not self.in_memory:
            with _CONNECTIONS_LOCK:
                handles = _HANDLES.setdefault(self._db, {})
                if not (Path(self.uri) / f"{table}.lance").is_dir():
                    handles.pop(table, None)  # dropped: never answered from a handle
                elif (tbl := handles.get(table)) is not None:
                    return tbl
        # Not `table in db.list_tables()`: that is a ListTablesResponse and `in` is always False (P14).
        try:
            tbl = self.db.open_table(table)
        except ValueError:
            return None
        if handles is not None:
            with _CONNECTIONS_LOCK:
                tbl = handles.setdefault(table, tbl)
        return tbl

    def table_names(self) -> list[str]:
        return sorted(self.db.list_tables().tables)

    @staticmethod
    def _meta(tbl: Any) -> dict[str, Any] | None:
        md = tbl.schema.metadata or {}
        if META_MODEL not in md:
            return None
        return {
            "embedding_model": md[META_MODEL].decode(),
            "embedding_model_version": md.get(META_VERSION, b"").decode(),
            "embedding_dim": int(md.get(META_DIM, b"0").decode() or 0),
        }

    @staticmethod
    def _scan(tbl: Any, columns: list[str], where: str | None = None, *, row_ids: bool = False) -> pa.Table:
        q = tbl.search().with_row_id(row_ids).select(columns)
        if where:
            q = q.where(where)
        return q.limit(None).to_arrow()

    @staticmethod
    def _ensure_fts(tbl: Any, force: bool) -> bool:
        """(Re)build the native full-text index on ``text``; returns whether it was built."""
        if not force:
            for ix in tbl.list_indices():
                if str(getattr(ix, "index_type", "")).upper() == "FTS" and list(ix.columns) == ["text"]:
                    return False
        from lancedb.index import FTS  # lazy: see `import lancedb` in _connection

        # with_position: phrase queries ("ORD 99812" as adjacent tokens) need term positions.
        tbl.create_index("text", config=FTS(with_position=True), replace=True)
        return True

    def _ensure_scalar(self, tbl: Any, force: bool) -> None:
        """(Re)build the scalar indexes on the columns every search filters on (:data:`SCALAR_INDEXES`);
        without force, only those missing (a table written by an older memc gets them on its next sync).

        LanceDB then evaluates the prefilter from the indexes instead of scanning those columns
        over every row: at 160k rows, full text 81 -> 26 ms, vector 326 -> 94 ms, session windows
        50 -> 21 ms, the time and entity routes 3-25x less, with the same rows and scores
        (benchmarks/bench_compile.py; tests/engine/test_views_search_paths.py). Rows added after an
        index was built are still found (scanned) until the next rebuild, but a search pays for them
        whatever their number: at 100k entries 11 rows left uncovered made each full-text search
        ~4 ms slower (10.9 -> 15 ms median, vector and session reads ~0.5 ms), against 0.23 s to
        rebuild the indexes (docs/benchmarks.md), so a sync that changed rows rebuilds them all.
        In-memory tables (the compiler's patch of the ledger tail) are small and built per query:
        no indexes."""
        if self.in_memory:
            return
        from lancedb import index  # lazy: see `import lancedb` in _connection

        have = {tuple(ix.columns) for ix in tbl.list_indices() if str(getattr(ix, "index_type", "")).upper() != "FTS"}
        for column, kind in SCALAR_INDEXES:
            if force or (column,) not in have:
                tbl.create_index(column, config=getattr(index, kind)(), replace=True)

    @staticmethod
    def _vector_index(tbl: Any) -> Any | None:
        return next((ix for ix in tbl.list_indices() if list(ix.columns) == ["vector"]), None)

    def _ensure_vector_index(self, tbl: Any, force: bool, deleted: int = 0) -> bool:
        """Build the approximate vector index when the table has ``vector_index_min_rows`` rows or
        more and has none, or (``force``, i.e. the rows changed) when more than
        :data:`VECTOR_INDEX_MAX_UNINDEXED` of them were added since it was built or were
        ``deleted`` by the sync that asks. Returns whether it built one. Deleted rows leave the
        answers through LanceDB's deletion files but stay in the index's graph, walked past by
        every search until it is rebuilt (a sync that moves the claims to a part of their own
        deletes 38 % of a 100k home's rows). An erasure rebuild writes a fresh table, so no
        quantised vector of an erased row survives."""
        if self.in_memory:
            return False
        rows = tbl.count_rows()
        if rows < self.vector_index_min_rows:
            return False
        ix = self._vector_index(tbl)
        if ix is not None:
            if not force:
                return False
            unindexed = int(tbl.index_stats(ix.name).num_unindexed_rows)
            if unindexed + deleted <= VECTOR_INDEX_MAX_UNINDEXED * rows:
                return False
        from lancedb.index import HnswSq  # lazy: see `import lancedb` in _connection

        tbl.create_index("vector", config=HnswSq(distance_type="cosine"), replace=True)
        return True

    def _vectors_for(self, tbl: Any | None, hashes: list[str], dim: int) -> dict[str, np.ndarray]:
        """Stored vectors for the given content hashes (a read-side filter: nothing is written)."""
        found: dict[str, np.ndarray] = {}
        if tbl is None or not hashes:
            return found
        for part in chunks(sorted(hashes)):
            where = f"content_hash IN ({sql_list(check_literal(h, HASH_RE, 'content hash') for h in part)})"
            got = self._scan(tbl, ["content_hash", "vector"], where)
            if got.num_rows == 0:
                continue
            mat = got.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)
            for h, v in zip(got.column("content_hash").to_pylist(), mat):
                found.setdefault(h, v)
        return found

    def _materialize(
        self, rows: pa.Table, embedder: Any, source: Any | None, dim: int, prior: dict[str, np.ndarray] | None = None
    ) -> tuple[pa.Table, int, int]:
        """``rows`` plus row_hash and vector columns; vectors come from ``prior`` or ``source`` by
        content hash when known, else from the embedder (one call, each new text once). Returns
        (table, embedded, reused)."""
        hashes = rows.column("content_hash").to_pylist()
        texts = rows.column("text").to_pylist()
        prior = prior or {}
        known = {h: prior[h] for h in set(hashes) & prior.keys()}
        known.update(self._vectors_for(source, sorted(set(hashes) - known.keys()), dim))
        new_hashes: dict[str, str] = {}
        for h, t in zip(hashes, texts):
            if h not in known and h not in new_hashes:
                new_hashes[h] = t
        if new_hashes:
            mat = np.asarray(embedder.encode(list(new_hashes.values())), dtype=np.float32)
            if mat.shape != (len(new_hashes), dim):
                raise ValueError(f"embedder returned shape {mat.shape}, expected {(len(new_hashes), dim)}")
            fresh = dict(zip(new_hashes, mat))
        else:
            fresh = {}
        matrix = np.zeros((len(hashes), dim), dtype=np.float32)
        reused = 0
        for i, h in enumerate(hashes):
            if h in known:
                matrix[i] = known[h]
                reused += 1
            else:
                matrix[i] = fresh[h]
        out = rows.append_column("row_hash", pa.array(hash_rows(rows), pa.string()))
        out = out.append_column("vector", fixed_vectors(matrix, dim))
        return out, len(new_hashes), reused

    # -- writing ----------------------------------------------------------------------------------

    def sync(self, rows: pa.Table, embedder: "TextEmbedder", *, table: str = DEFAULT_TABLE) -> dict[str, Any]:
        """Make ``table`` hold exactly ``rows``: each part (:func:`table_parts`) the rows of its
        kinds. A part left without rows is dropped, except ``table`` itself. When a part is new
        beside an existing main part (an upgrade), the parts of kinds kept apart are synced first,
        so that the new part reuses the vectors the main part still holds for its texts (rather
        than embedding them again); otherwise the parts are synced side by side. When any part holds
        another model's vectors, every part is re-embedded and swapped in (:meth:`_rebuild_parts`).
        Returns the parts' counts summed (see :meth:`_sync_part`), each part's under ``parts``."""
        rows = normalize_rows(rows, verify_texts=False)  # each write path checks what it writes
        model, version, dim = embedder_info(embedder)
        ours = {"embedding_model": model, "embedding_model_version": version, "embedding_dim": dim}
        split = self._split(rows, table)
        opened = dict(self._opened(table))
        other = {part: meta for part, tbl in opened.items() if (meta := self._meta(tbl)) != ours}
        if other:
            # Another model's vectors: every part re-embedded, then swapped in (_rebuild_parts).
            log.warning("%s/%s holds vectors of another model (%s): rebuilding", self.uri, table, other)
            stats = self._rebuild_parts(split, embedder)
            return _merged(table, {part: {**st, "model_changed": True} for part, st in stats.items()})
        main = opened.get(table)
        synced = [(part, part_rows) for part, part_rows in reversed(split) if part_rows is not None]
        if main is not None and all(part in opened for part, _ in synced):
            # Every part exists, so none takes vectors from another (only a part's first fill
            # does): the parts, each its own LanceDB table, are checked and then written side by
            # side, their index rebuilds being LanceDB's own threads (at 100k entries the two took
            # 1.8 s one after the other). A first build stays in one thread: it is all embedding,
            # which uses every core already, and a cancelled run must not wait for a second
            # thread's minutes of it. The main part is always among them: _split gives it a table.
            embedder = _OneEncodeAtATime(embedder)
            with ThreadPoolExecutor(max_workers=len(synced), thread_name_prefix="memc-sync") as pool:
                writes = _all_or_raise({part: pool.submit(self._planned_part, part_rows, embedder, part) for part, part_rows in synced})
                stats = _all_or_raise({part: pool.submit(write, None) for part, write in writes.items()})
        else:
            # Every part is checked before any writes, so a bad row anywhere changes no part (a
            # new part filled from the main one, then a main part refusing its rows, would leave
            # the claims in both); a new part first, as it reuses the main part's vectors.
            writes = {part: self._planned_part(part_rows, embedder, part) for part, part_rows in synced}
            stats = {part: write(main if part != table else None) for part, write in writes.items()}
        for part, part_rows in reversed(split):
            if part_rows is None and (dropped := self._drop_counted(part)) is not None:
                stats[part] = dropped
        return _merged(table, stats)

    def _drop_counted(self, part: str) -> dict[str, Any] | None:
        """Drop ``part`` (left without rows) and report it as a sync does (None if it did not exist)."""
        tbl = self._open(part)
        if tbl is None:
            return None
        gone = int(tbl.count_rows())
        self._drop_part(part)
        return {"table": part, "rows": 0, "deleted": gone, "version": None}

    @staticmethod
    def _split(rows: pa.Table, table: str) -> list[tuple[str, pa.Table | None]]:
        """``rows`` by part, ``table`` first; None for a part other than ``table`` without rows."""
        kinds = rows.column("kind")
        kept_apart = pc.fill_null(pc.is_in(kinds, pa.array(list(KIND_PARTS), pa.string())), False)
        out: list[tuple[str, pa.Table | None]] = [(table, rows.filter(pc.invert(kept_apart)))]
        for part in table_parts(table)[1:]:
            own = [k for k, p in KIND_PARTS.items() if f"{table}_{p}" == part]
            picked = rows.filter(pc.fill_null(pc.is_in(kinds, pa.array(own, pa.string())), False))
            out.append((part, picked if picked.num_rows else None))
        return out

    def _sync_part(self, rows: pa.Table, embedder: "TextEmbedder", table: str, reuse_from: Any | None = None) -> dict[str, Any]:
        """Make the part ``table`` hold exactly ``rows`` (normalized): :meth:`_planned_part`'s
        write, made at once."""
        return self._planned_part(rows, embedder, table)(reuse_from)

    def _planned_part(self, rows: pa.Table, embedder: "TextEmbedder", table: str) -> Callable[[Any | None], dict[str, Any]]:
        """A part's sync in two steps: this call reads the part and checks every row it will
        write (a wrong content hash raises here), writing nothing; the function it returns makes
        the part ``table`` hold exactly ``rows`` (normalized), given the table to reuse vectors
        from in a first fill (``reuse_from``).

        Rows whose id is gone (or whose columns changed) are deleted by id; new rows are added with a
        vector reused from the table when their content hash is known, else embedded. The full-text
        index is rebuilt whenever the rows changed. If the stored vectors come from another embedding
        model, the table is rebuilt and everything re-embedded.

        Returns counts: ``rows`` (after), ``added``, ``deleted`` (ids no longer in the input),
        ``replaced`` (same id, changed columns), ``unchanged``, ``newly_embedded`` (texts encoded now),
        ``reused`` (rows in the table whose vector was not computed now), ``fts_reindexed``.
        """
        model, version, dim = embedder_info(embedder)
        tbl = self._open(table)
        ours = {"embedding_model": model, "embedding_model_version": version, "embedding_dim": dim}
        if tbl is None or self._meta(tbl) != ours or not same_fields(tbl.schema, lance_schema(dim, model, version)):
            # A first fill or a rebuild writes every row: all are checked now, and again by the
            # write itself (_fill, _embedded), which costs ~2 us a row beside ~5 ms of embedding.
            check_texts(rows)
            return lambda reuse_from: self._whole_part(rows, embedder, table, tbl, reuse_from)

        gone, replaced, add_idx = differing_rows(rows, self._scan(tbl, list(EVIDENCE_SCHEMA.names)))
        to_add = rows.take(pa.array(add_idx, pa.int64())) if add_idx else rows.slice(0, 0)
        check_texts(to_add)  # before the deletes: a bad row changes nothing

        def write(reuse_from: Any | None) -> dict[str, Any]:
            # Delete by opaque id only: LanceDB writes a delete's predicate text into its manifests.
            # Deletes first (a replaced row's new version may be in any commit below), so the vectors
            # the deleted rows hold for texts that stay are read before (re-chunked texts embed nothing).
            prior: dict[str, np.ndarray] = {}
            if gone or replaced:
                prior = self._vectors_for(tbl, sorted(set(to_add.column("content_hash").to_pylist())), dim)
            for part in chunks(gone + replaced):
                tbl.delete(ids_filter(part))
            embedded = reused_added = 0
            for start in range(0, to_add.num_rows, self.commit_rows):
                batch, e, r = self._materialize(to_add.slice(start, self.commit_rows), embedder, tbl, dim, prior)
                tbl.add(batch.cast(tbl.schema))
                embedded, reused_added = embedded + e, reused_added + r
            changed = bool(gone or replaced or to_add.num_rows)
            reindexed = self._ensure_fts(tbl, force=changed)
            self._ensure_scalar(tbl, force=changed)
            vector_indexed = self._ensure_vector_index(tbl, force=changed, deleted=len(gone) + len(replaced))
            total = tbl.count_rows()
            return {
                "table": table,
                "rows": total,
                "added": to_add.num_rows - len(replaced),
                "deleted": len(gone),
                "replaced": len(replaced),
                "unchanged": rows.num_rows - len(add_idx),
                "newly_embedded": embedded,
                "reused": total - (to_add.num_rows - reused_added),
                "fts_reindexed": reindexed,
                "vector_indexed": vector_indexed,
                "model_changed": False,
                "version": tbl.version,
            }

        return write

    def _whole_part(self, rows: pa.Table, embedder: Any, table: str, tbl: Any | None, reuse_from: Any | None) -> dict[str, Any]:
        """A part written whole: filled when it does not exist, else rebuilt, every vector embedded
        again when the stored ones are another model's, else reused by hash (a memc upgrade that
        added a column: the stored rows cannot take new ones)."""
        if tbl is None:
            return self._fill(rows, embedder, table, reuse_from)
        model, version, dim = embedder_info(embedder)
        meta = self._meta(tbl)
        if meta != {"embedding_model": model, "embedding_model_version": version, "embedding_dim": dim}:
            log.warning("%s/%s holds vectors of another model (%s): rebuilding", self.uri, table, meta)
            return {**self._rebuild(rows, embedder, table, reuse=False), "model_changed": True}
        log.warning("%s/%s has an older row layout: rebuilding (vectors reused)", self.uri, table)
        return {**self._rebuild(rows, embedder, table, reuse=True), "model_changed": False, "layout_changed": True}

    def _fill(self, rows: pa.Table, embedder: Any, table: str, reuse_from: Any | None = None) -> dict[str, Any]:
        """The first sync of ``table``: created from the first ``commit_rows`` rows, the rest added
        a commit at a time, then indexed. Nothing is swapped out, so nothing is staged: a sync that
        stops leaves a table of the commits made, and the next sync finds it and adds the rest
        (the view's watermark moves only after a sync returns). ``reuse_from``: another table of
        the same model whose vectors are taken by content hash before anything is embedded."""
        check_texts(rows)
        model, version, dim = embedder_info(embedder)
        schema = lance_schema(dim, model, version)
        tbl = None
        embedded = reused = 0
        for start in range(0, max(rows.num_rows, 1), self.commit_rows):
            part = rows.slice(start, self.commit_rows)
            prior = self._vectors_for(reuse_from, sorted(set(part.column("content_hash").to_pylist())), dim)
            batch, e, r = self._materialize(part, embedder, tbl, dim, prior)
            embedded, reused = embedded + e, reused + r
            if tbl is None:
                tbl = self._create(table, batch.cast(schema), schema)
            else:
                tbl.add(batch.cast(schema))
        assert tbl is not None
        self._ensure_fts(tbl, force=True)
        self._ensure_scalar(tbl, force=True)
        vector_indexed = self._ensure_vector_index(tbl, force=True)
        return {
            "table": table,
            "rows": tbl.count_rows(),
            "added": rows.num_rows,
            "deleted": 0,
            "replaced": 0,
            "unchanged": 0,
            "newly_embedded": embedded,
            "reused": reused,
            "fts_reindexed": True,
            "vector_indexed": vector_indexed,
            "model_changed": False,
            "version": tbl.version,
        }

    def _create(self, table: str, batch: pa.Table, schema: pa.Schema) -> Any:
        """A new table under ``table``'s name holding ``batch`` (the first commit of :meth:`_fill`)."""
        return self.db.create_table(table, data=batch, schema=schema)

    def rebuild(self, rows: pa.Table, embedder: "TextEmbedder", *, table: str = DEFAULT_TABLE) -> dict[str, Any]:
        """Write ``rows`` into a fresh table directory and swap it in for the old one, whose files are
        then removed (deletes in place leave bytes on disk: this is the erasure path). Vectors of
        known content hashes are still reused."""
        stats = self._rebuild_parts(self._split(normalize_rows(rows, verify_texts=False), table), embedder)  # _embedded checks the texts
        return _merged(table, {part: {**st, "model_changed": False} for part, st in stats.items()})

    def _rebuild(self, rows: pa.Table, embedder: Any, table: str, *, reuse: bool) -> dict[str, Any]:
        return self._install(table, *self._embedded(rows, embedder, table, reuse=reuse))

    def _rebuild_parts(self, split: list[tuple[str, pa.Table | None]], embedder: Any) -> dict[str, dict[str, Any]]:
        """Rebuild every part of a split (:meth:`_split`), vectors reused by hash from the part's
        own table when it holds the same model's. Every part is embedded before any is swapped in, so an embedding that
        fails (a new model that crashes half-way) leaves every part as it was. The swaps follow one
        another: a reader between two of them finds one part of each model, and its vector search
        of that part is refused (EmbeddingModelMismatch), never ranked across models."""
        made = {part: self._embedded(part_rows, embedder, part, reuse=True) for part, part_rows in split if part_rows is not None}
        stats = {part: self._install(part, *m) for part, m in made.items()}
        for part, part_rows in split:
            if part_rows is None and (dropped := self._drop_counted(part)) is not None:
                stats[part] = dropped
        return stats

    def _embedded(self, rows: pa.Table, embedder: Any, table: str, *, reuse: bool) -> tuple[pa.Table, pa.Schema, int, int, set[str], set[str]]:
        """What a rebuild of ``table`` writes: (batch, schema, embedded, reused, old ids, new ids)."""
        check_texts(rows)
        model, version, dim = embedder_info(embedder)
        old = self._open(table)
        old_ids: set[str] = set()
        source = None
        if old is not None:
            old_ids = set(self._scan(old, ["id"]).column("id").to_pylist())
            meta = self._meta(old)
            if reuse and meta == {"embedding_model": model, "embedding_model_version": version, "embedding_dim": dim}:
                source = old
        batch, embedded, reused = self._materialize(rows, embedder, source, dim)
        schema = lance_schema(dim, model, version)
        return batch.cast(schema), schema, embedded, reused, old_ids, set(rows.column("id").to_pylist())

    def _install(self, table: str, batch: pa.Table, schema: pa.Schema, embedded: int, reused: int, old_ids: set[str], new_ids: set[str]) -> dict[str, Any]:
        """Swap ``batch`` in as ``table`` (see :meth:`_swap_in`) and report it."""
        if self.in_memory:
            if self._open(table) is not None:
                self.db.drop_table(table)
            tbl = self.db.create_table(table, data=batch, schema=schema)
            self._ensure_fts(tbl, force=True)
        else:
            tbl = self._swap_in(table, batch, schema)
        return {
            "table": table,
            "rows": tbl.count_rows(),
            "added": len(new_ids - old_ids),
            "deleted": len(old_ids - new_ids),
            "replaced": 0,
            "unchanged": len(new_ids & old_ids),
            "newly_embedded": embedded,
            "reused": reused,
            "fts_reindexed": True,
            "vector_indexed": not self.in_memory and self._vector_index(tbl) is not None,
            "version": tbl.version,
        }

    def _swap_in(self, table: str, batch: pa.Table, schema: pa.Schema) -> Any:
        import lancedb  # lazy: 2.2 s to import; commands that never open the index skip it

        root = Path(self.uri)
        # Leftovers of a crashed swap. Neither name ends in ".lance", so list_tables never shows them.
        for p in [*root.glob(f".staging-{table}-*"), *root.glob(f".retired-{table}-*")]:
            shutil.rmtree(p, ignore_errors=True)
        token = uuid.uuid4().hex[:12]
        staging = root / f".staging-{table}-{token}"  # same filesystem, so the renames are cheap
        retired = root / f".retired-{table}-{token}"
        live = root / f"{table}.lance"
        try:
            sdb = lancedb.connect(str(staging))
            stbl = sdb.create_table(table, data=batch, schema=schema)
            self._ensure_fts(stbl, force=True)
            self._ensure_scalar(stbl, force=True)
            self._ensure_vector_index(stbl, force=True)
            del stbl, sdb
            if live.exists():
                live.rename(retired)
            try:
                (staging / f"{table}.lance").rename(live)
            except BaseException:
                if retired.exists() and not live.exists():
                    retired.rename(live)  # keep the old table rather than none
                raise
        finally:
            shutil.rmtree(retired, ignore_errors=True)
            shutil.rmtree(staging, ignore_errors=True)
        self._db = None  # reconnect: cached handles point at the retired files
        with _CONNECTIONS_LOCK:
            _CONNECTIONS.pop(os.path.abspath(self.uri), None)
        tbl = self._open(table)
        assert tbl is not None
        return tbl

    def _opened(self, table: str, kinds: Sequence[str] | None = None) -> list[tuple[str, Any]]:
        """(part, open table) for each part of ``table`` holding ``kinds`` that exists."""
        return [(part, tbl) for part in table_parts(table, kinds) if (tbl := self._open(part)) is not None]

    def compact(self, table: str = DEFAULT_TABLE, *, cleanup_older_than: timedelta = timedelta(0)) -> None:
        """Compact fragments, fold indexes and drop old versions (older than ``cleanup_older_than``)
        of every part. With the default 0, concurrent readers of an older version fail: run it from
        the one writer."""
        for _, tbl in self._opened(table):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "removes every version except the latest"
                tbl.optimize(cleanup_older_than=cleanup_older_than, delete_unverified=cleanup_older_than == timedelta(0))

    def versions(self, table: str = DEFAULT_TABLE) -> int | None:
        """The versions kept, summed over the parts (None when the table is missing)."""
        parts = self._opened(table)
        return sum(len(tbl.list_versions()) for _, tbl in parts) if parts else None

    def built(self, table: str = DEFAULT_TABLE) -> bool:
        """Whether a build made the store (a cheap check, before a model is loaded to search it)."""
        return self.in_memory or Path(self.uri).exists()

    def read_watermark(self) -> dict[str, Any] | None:
        """The index's watermark record (memc/watermark.py), kept with the index: a file in its
        directory here, an object beside the tables on S3, an attribute in memory."""
        if self.in_memory:
            return self._mark
        return read_watermark(Path(self.uri))

    def write_watermark(self, view: str, watermark: int, **info: Any) -> dict[str, Any]:
        if self.in_memory:
            self._mark = watermark_record(view, watermark, **info)
            return self._mark
        return write_watermark(Path(self.uri), view, watermark, **info)

    def clear_watermark(self) -> None:
        if self.in_memory:
            self._mark = None
        else:
            (Path(self.uri) / WATERMARK_FILE).unlink(missing_ok=True)

    def bytes_stored(self) -> int:
        """The bytes the store holds, every retained version included (0 in memory)."""
        root = Path(self.uri)
        if self.in_memory or not root.exists():
            return 0
        return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())

    def drop(self, table: str = DEFAULT_TABLE) -> None:
        """Remove every part of ``table`` with its files."""
        for part in table_parts(table):
            self._drop_part(part)

    def _drop_part(self, table: str) -> None:
        if self._open(table) is not None:
            self.db.drop_table(table)
            if not self.in_memory:
                shutil.rmtree(Path(self.uri) / f"{table}.lance", ignore_errors=True)

    # -- reading ----------------------------------------------------------------------------------

    def count(self, table: str = DEFAULT_TABLE) -> int:
        return sum(int(tbl.count_rows()) for _, tbl in self._opened(table))

    def model_info(self, table: str = DEFAULT_TABLE) -> dict[str, Any] | None:
        """``{"embedding_model", "embedding_model_version", "embedding_dim"}`` from the table's schema
        metadata, or None when the table does not exist."""
        tbl = self._open(table)
        return None if tbl is None else self._meta(tbl)

    def health(self, table: str = DEFAULT_TABLE) -> dict[str, Any] | None:
        """What the checks need to trust the view, read from the tables themselves (None if
        missing): row count, vectors that are null / of the wrong dimension / not unit length / not
        finite, whether the full-text index covers every row (``fts_unindexed_rows`` = 0), and the
        approximate vector index, if any. The main part's figures with the other parts' counts
        added; a part embedded by another model or without a full-text index shows as such (so
        the check fails on it); each part's own under ``parts``."""
        parts = {part: self._part_health(tbl) for part, tbl in self._opened(table)}
        if table not in parts:
            return None
        out = dict(parts[table])
        for part, h in parts.items():
            if part == table:
                continue
            for c in ("rows", "null_vectors", "wrong_dimension", "non_finite_vectors", "non_unit_vectors", "fts_unindexed_rows"):
                if h.get(c) is not None:
                    out[c] = (out.get(c) or 0) + h[c]
            for c in ("embedding_model", "embedding_model_version", "embedding_dim", "stored_dim"):
                if h.get(c) != out.get(c):
                    out[c] = h.get(c)
            if h["rows"] and not h["fts_index"]:
                out["fts_index"] = False
        out["parts"] = parts
        return out

    def _part_health(self, tbl: Any) -> dict[str, Any]:
        meta = self._meta(tbl) or {}
        dim = int(meta.get("embedding_dim") or 0)
        got = self._scan(tbl, ["vector"])
        col = got.column("vector").combine_chunks() if got.num_rows else None
        null_vectors = 0 if col is None else int(col.null_count)
        vtype = tbl.schema.field("vector").type
        stored_dim = getattr(vtype, "list_size", -1)
        bad_dim = got.num_rows if stored_dim != dim else 0
        non_unit = non_finite = 0
        if col is not None and bad_dim == 0 and got.num_rows:
            mat = col.flatten().to_numpy(zero_copy_only=False).reshape(-1, stored_dim)
            if null_vectors:
                mat = mat[~np.asarray(col.is_null().to_numpy(zero_copy_only=False))]
            # Each row's sum of squares in float64: not finite exactly when an element is not (a
            # float32's square cannot overflow it), so one pass over the matrix gives both counts
            # (the evidence part of the 100k bench home, 111k rows: 0.77 s with the three full-size
            # copies this made, ~0.04 s now; the whole health() 1.43 -> 0.47 s, docs/benchmarks.md).
            squares = np.einsum("ij,ij->i", mat, mat, dtype=np.float64)
            finite = np.isfinite(squares)
            non_finite = int((~finite).sum())
            non_unit = int((finite & (np.abs(np.sqrt(np.where(finite, squares, 1.0)) - 1.0) > 1e-3)).sum())
        fts = [ix for ix in tbl.list_indices() if str(getattr(ix, "index_type", "")).upper() == "FTS" and list(ix.columns) == ["text"]]
        unindexed = None
        if fts:
            unindexed = int(tbl.index_stats(fts[0].name).num_unindexed_rows)
        vix = self._vector_index(tbl)
        return {
            "rows": int(tbl.count_rows()),
            **meta,
            "stored_dim": stored_dim,
            "null_vectors": null_vectors,
            "wrong_dimension": bad_dim,
            "non_finite_vectors": non_finite,
            "non_unit_vectors": non_unit,
            "fts_index": bool(fts),
            "fts_unindexed_rows": unindexed,
            # approximate vector index (tables of vector_index_min_rows rows and more)
            "vector_index": vix is not None,
            "vector_unindexed_rows": int(tbl.index_stats(vix.name).num_unindexed_rows) if vix is not None else None,
            "version": tbl.version,
        }

    def ids(self, table: str = DEFAULT_TABLE) -> list[str]:
        return sorted(i for _, tbl in self._opened(table) for i in self._scan(tbl, ["id"]).column("id").to_pylist())

    def search(
        self,
        *,
        vector: Sequence[float] | np.ndarray | None = None,
        text: str | None = None,
        principals: Sequence[str],
        scope: str | None,
        k: int,
        kinds: Sequence[str] | None = None,
        table: str = DEFAULT_TABLE,
        phrase: bool = False,
        entity_ids: Sequence[str] | None = None,
        model_version: str | None = None,
        valid_between: tuple[datetime | None, datetime | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Vector and/or full-text search over the rows ``principals`` may see.

        Returns ONE FLAT LIST: the vector hits (best first), then the full-text hits (best first).
        Each hit is a dict with the :data:`HIT_COLUMNS` plus ``score`` (vector: cosine similarity;
        fulltext: BM25), ``route`` ("vector" | "fulltext") and ``rank`` (1-based within its route).
        The same row may appear once per route; fusing the routes is the query module's job.

        Visibility is mandatory: the filter ``array_has_any(visibility, [public, *principals])`` (and
        ``scope``/``kinds`` when given) is pushed into LanceDB as a prefilter, so ``k`` visible hits
        come back even when invisible rows score higher; each hit is then checked again here.
        ``text`` is matched as terms (``MatchQuery``, no query syntax); ``phrase=True`` requires the
        terms adjacent and in order (``PhraseQuery``).

        ``entity_ids`` keeps rows about any of those entities (a prefilter too). ``model_version`` is
        the version of the model that embedded ``vector``: when the table was embedded by another
        model the vector route raises :class:`EmbeddingModelMismatch` instead of ranking by
        meaningless scores (a rebuild swaps a whole new-model table in, so a table is never mixed).
        ``valid_between`` (start, end) keeps rows valid at ``start <= valid_at < end`` (either end
        None for open), a prefilter as well: the context compiler's time-window route.
        """
        if k <= 0:
            return []
        where = search_filter(principals, scope, kinds, entity_ids, valid_between)
        allowed = set(allowed_principals(principals))
        kind_set = None if kinds is None else set(kinds)
        wanted = set(entity_ids) if entity_ids is not None else None

        def refused(h: dict[str, Any]) -> str | None:
            """Why ``where`` would not hold for the row ``h`` (None: it holds), in Python."""
            if not allowed.intersection(h.get("visibility") or ()):
                return "visibility"
            if scope is not None and h.get("scope") != scope:
                return "scope"
            if kind_set is not None and h.get("kind") not in kind_set:
                return "kind"
            if wanted is not None and not wanted.intersection(h.get("entity_ids") or ()):
                return "entity"
            if valid_between is not None and not within_window(h.get("valid_at"), valid_between):
                return "time"
            return None

        # Each part ranks its own rows; a search of kinds in several parts (no retrieval route
        # asks for one) takes each route's best k over them by score.
        by_route: dict[str, list[dict[str, Any]]] = {"vector": [], "fulltext": []}
        for part, tbl in self._opened(table, kinds):
            held = self._held_rows(tbl, part)
            if vector is not None:
                meta = self._search_meta(tbl, part)
                stored = meta.get("embedding_model_version")
                if model_version is not None and stored != model_version:
                    raise EmbeddingModelMismatch(
                        f"{self.uri}/{part} holds vectors of {stored!r}; the query vector is from {model_version!r}"
                    )
                dim = meta.get("embedding_dim") or tbl.schema.field("vector").type.list_size
                by_route["vector"] += self._vector_route(tbl, vector, dim, where, k, held, lambda h: refused(h) is None)
            if text is not None and text.strip():
                by_route["fulltext"] += self._fulltext_route(tbl, text, where, k, phrase, held)
        hits = [h for route, found in by_route.items() for h in _ranked(_best(found, k), route)]
        safe = []
        for h in hits:
            # Defence in depth: the prefilter already did this; a hit failing here is a bug upstream.
            why = refused(h)
            if why in ("visibility", "scope"):
                log.error("vector view returned row %s outside the asker's %s (%s): dropped", h.get("id"), why, scope)
            if why is None:
                safe.append(h)
        return safe

    def session_rows(
        self,
        *,
        session_ids: Sequence[str],
        principals: Sequence[str],
        scope: str | None,
        kinds: Sequence[str] | None = None,
        table: str = DEFAULT_TABLE,
    ) -> list[dict[str, Any]]:
        """Every row of these sessions the principals may see (no ranking): what the query module
        shows around a hit as its conversation window. Visibility, scope and kinds are pushed into
        LanceDB as in :meth:`search` and checked again here. Rows carry :data:`HIT_COLUMNS`."""
        return self._rows_in("session_id", session_ids, principals, scope, kinds, table)

    def entry_rows(
        self,
        *,
        entry_ids: Sequence[str],
        principals: Sequence[str],
        scope: str | None,
        kinds: Sequence[str] | None = None,
        table: str = DEFAULT_TABLE,
        with_vectors: bool = False,
    ) -> list[dict[str, Any]]:
        """The rows of these ledger entries the principals may see, filtered as in
        :meth:`session_rows`: the turns the compiler's state route reaches through a fact, and a
        memory unit's turns (``with_vectors``: each row's vector too, to rank them)."""
        return self._rows_in("entry_id", entry_ids, principals, scope, kinds, table, extra=["vector"] if with_vectors else [])

    def kind_rows(self, kinds: Sequence[str], columns: Sequence[str] = GROUPING_COLUMNS, table: str = DEFAULT_TABLE) -> pa.Table:
        columns = list(columns)
        if not all(ID_RE.match(k) for k in kinds):
            raise ValueError(f"not a kind: {kinds!r}")
        found = [self._scan(tbl, columns, f"kind IN ({sql_list(sorted(set(kinds)))})") for _, tbl in self._opened(table, kinds)]
        if not found:
            return pa.table({c: pa.array([], pa.string()) for c in columns})
        return pa.concat_tables(found) if len(found) > 1 else found[0]

    def _rows_in(
        self,
        column: str,
        values: Sequence[str],
        principals: Sequence[str],
        scope: str | None,
        kinds: Sequence[str] | None,
        table: str,
        extra: Sequence[str] = (),
    ) -> list[dict[str, Any]]:
        want = set(values)
        rows = visible_rows(table_rows(self._table_in(column, values, principals, scope, kinds, table, extra)), principals, scope, kinds)
        out = {r["id"]: r for r in rows if r[column] in want}  # a row once, whichever part or filter found it
        return sorted(out.values(), key=lambda r: (r["session_id"] or "", r["valid_at"] is None, r["valid_at"], r["seq"] or 0, r["id"]))

    def _table_in(
        self,
        column: str,
        values: Sequence[str],
        principals: Sequence[str],
        scope: str | None,
        kinds: Sequence[str] | None,
        table: str,
        extra: Sequence[str] = (),
    ) -> pa.Table:
        """The rows whose ``column`` is one of ``values`` that the principals may see, in Arrow:
        LanceDB's filter (or the rows held in memory), then :func:`arrow_filter` and the values
        again on every part's rows. Callers check in Python the rows they convert."""
        if isinstance(values, str):
            raise TypeError(f"{column}s must be a list of strings, not a string")
        columns = [*HIT_COLUMNS, *extra]
        wanted = sorted({s for s in values if s})
        if not wanted:
            return _empty(columns)
        base = search_filter(principals, scope, kinds)
        # Session ids come from sources (up to 512 chars of anything): only values that pass
        # the id pattern are inlined into a filter; the others are matched below after a scan.
        inline = [s for s in wanted if ID_RE.match(s)]
        lists = [f"{column} IN ({sql_list(part)})" for part in chunks(inline)] if inline else []
        wheres = [f"({base}) AND ({p})" for p in lists] + ([base] if len(inline) < len(wanted) else [])

        def keep(rows: pa.Table) -> pa.Array:
            return pc.and_(arrow_filter(rows, principals, scope, kinds), pc.is_in(rows.column(column), value_set=pa.array(wanted, pa.string())))

        def rows_of(part: str, tbl: Any) -> list[pa.Table]:
            held = self._held_rows(tbl, part) if column in ("session_id", "entry_id") and not extra else None
            if held is not None:
                # Filtered in Arrow before anything becomes Python (most of a lookup's cost).
                return [held.of_sessions(wanted, keep) if column == "session_id" else held.of_entries(wanted, keep)]
            return [found.filter(keep(found)) for where in wheres if (found := self._scan(tbl, columns, where)).num_rows]

        found = [t for part, tbl in self._opened(table, kinds) for t in rows_of(part, tbl) if t.num_rows]
        if not found:
            return _empty(columns)
        return pa.concat_tables(found, promote_options="permissive") if len(found) > 1 else found[0]

    def session_table(
        self,
        *,
        session_ids: Sequence[str],
        principals: Sequence[str],
        scope: str | None,
        kinds: Sequence[str] | None = None,
        table: str = DEFAULT_TABLE,
    ) -> pa.Table:
        """:meth:`session_rows` in Arrow, unordered (a row two filters found comes twice), for a
        caller that converts only the rows it shows (query/windows.py: ~800 rows a compile at
        100k entries, of which it makes ~230 Python rows) and checks those with :func:`visible_rows`."""
        return self._table_in("session_id", session_ids, principals, scope, kinds, table)

    def hold(self, table: str = DEFAULT_TABLE) -> int:
        return sum(len(held) for part, tbl in self._opened(table) if (held := self._held_rows(tbl, part)) is not None)

    def _held_rows(self, tbl: Any, table: str) -> EvidenceRows | None:
        """The rows of this version of ``table`` held in memory, or None for a table too large to
        hold (see rows_held_by_default). Read on the first use of a version; a newer version, or a
        table swapped in by an erasure rebuild, replaces them, so no row of a retired version is
        ever served. A swapped-in table is another connection here (a new directory, see
        :meth:`_connection`) and another physical table on object storage (views/vectors_s3.py:
        a new name, its versions counted from 1 again): both are part of what must match."""
        if self.in_memory:
            return None  # the twin's rows are in memory already (every patched tail's store is one)
        limit = int(os.environ.get("MEMC_EVIDENCE_ROWS_HELD") or rows_held_by_default())
        key = (os.path.abspath(self.uri), table)
        conn, name = self.db, tbl.name
        pinned = self._pin(key, conn, name)
        version = pinned[2] if pinned is not None else tbl.version
        with _HELD_LOCK:
            held = _HELD.get(key)
            same = held is not None and held[0] is conn and held[1] == name
            if not same or not (held[2] == version or (pinned is not None and held[2] > version)):
                # The retired version's rows go before the new ones are read; the row count is
                # kept with the version, so a table too large to hold is not counted per search.
                held = _HELD[key] = (conn, name, version, tbl.count_rows(), None)
            if held[3] > limit:  # too large, or turned off: nothing held
                if held[4] is not None:
                    _HELD[key] = (*held[:4], None)
            elif held[4] is None:
                held = _HELD[key] = (*held[:4], EvidenceRows(self._scan(tbl, list(HIT_COLUMNS), row_ids=True)))
        if self._pinned is not None and (pinned is None or pinned[2] != held[2]):
            self._pinned[key] = (conn, name, held[2], None)
        return held[4] if held[3] <= limit else None

    def _pin(self, key: tuple[str, str], conn: Any, name: str) -> tuple[Any, str, int, dict[str, Any] | None] | None:
        """What :meth:`pinned` holds of this table: (connection, physical table, version, its
        schema's model metadata or None until read), or None (not pinned, or not this table)."""
        pinned = self._pinned.get(key) if self._pinned is not None else None
        return pinned if pinned is not None and pinned[0] is conn and pinned[1] == name else None

    def _search_meta(self, tbl: Any, table: str) -> dict[str, Any]:
        """:meth:`_meta` of the table a search ranks by vector (called after :meth:`_held_rows`,
        which pins the version): read once per pinned version."""
        key = (os.path.abspath(self.uri), table)
        pinned = self._pin(key, self.db, tbl.name)
        if pinned is not None and pinned[3] is not None:
            return pinned[3]
        meta = self._meta(tbl) or {}
        if pinned is not None:
            self._pinned[key] = (*pinned[:3], meta)
        return meta

    def _vector_route(self, tbl: Any, vector: Any, dim: int, where: str, k: int, held: EvidenceRows | None, admits: Any) -> list[dict[str, Any]]:
        """The best ``k`` rows by cosine similarity passing ``where`` (``admits``: the same test
        in Python, for rows taken from ``held``; ``dim``: the table's vector size), ties broken by id
        (see :func:`_top_k`)."""
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != dim:
            raise ValueError(f"query vector has {q.shape[0]} dimensions, the table {dim}")

        def fetch(limit: int) -> list[dict[str, Any]]:
            def query(columns: list[str]) -> pa.Table:
                return _searched(
                    tbl,
                    lambda t: t.query()
                    .nearest_to(q)
                    .column("vector")
                    .distance_type("cosine")
                    # With the approximate index: rank the index's best limit x REFINE by their exact
                    # (unquantised) distance, so scores are exact and near-ties keep their true order.
                    .refine_factor(VECTOR_REFINE_FACTOR)
                    .where(where)  # a prefilter (the async query's default; .postfilter() would not be)
                    .limit(limit),
                    columns,
                    "_distance",
                )

            rows = _hit_rows(query, "_distance", held)
            for r in rows:
                r["score"] = 1.0 - float(r.pop("_distance"))
            return rows

        if held is None:
            return _top_k(fetch, k)
        # A tie at the k-th place is rows of one text (one vector: it is embedded once and reused
        # by hash), so the held rows of that text complete the group, where _top_k would fetch 4x
        # the rows again: at 100k entries 7 % of the claims' searches tied (claims repeat a
        # sentence), 42 ms at the mean against 16 for one fetch (docs/benchmarks.md).
        rows = sorted(fetch(k + 1), key=lambda r: (-r["score"], r["id"]))
        if len(rows) <= k or rows[k]["score"] < rows[k - 1]["score"]:
            return rows[:k]
        tie = rows[k - 1]["score"]
        tied = {r["id"] for r in rows if r["score"] == tie}
        group = [r for r in held.of_texts({r["text"] for r in rows if r["id"] in tied}) if admits(r)]
        if not tied <= {r["id"] for r in group}:  # tied rows of other texts: not what is assumed above
            return _top_k(fetch, k)
        rows = [r for r in rows if r["score"] > tie] + [{**r, "score": tie} for r in group]
        return sorted(rows, key=lambda r: (-r["score"], r["id"]))[:k]

    def _fulltext_route(self, tbl: Any, text: str, where: str, k: int, phrase: bool, held: EvidenceRows | None) -> list[dict[str, Any]]:
        from lancedb.query import (  # lazy: see `import lancedb` in _connection
            MatchQuery,
            PhraseQuery,
        )

        query = PhraseQuery(text, "text") if phrase else MatchQuery(text, "text")

        def fetch(limit: int) -> list[dict[str, Any]]:
            def search(columns: list[str]) -> pa.Table:  # the filter is a prefilter, as for vectors
                return _searched(tbl, lambda t: t.query().nearest_to_text(query).where(where).limit(limit), columns, "_score")

            rows = _hit_rows(search, "_score", held)
            for r in rows:
                r["score"] = float(r.pop("_score"))
            return rows

        return _top_k(fetch, k, first=FULLTEXT_FIRST_FETCH * k)


# What a sync or rebuild reports per part, summed over the parts of a table (the flags: any part).
_COUNTS = ("rows", "added", "deleted", "replaced", "unchanged", "newly_embedded", "reused")
_FLAGS = ("fts_reindexed", "vector_indexed", "model_changed", "layout_changed")


class _OneEncodeAtATime:
    """An embedder shared by the parts' syncs in two threads, encoding for one at a time. A Hugging
    Face fast tokenizer raises "Already borrowed" when one thread's first encode sets its
    truncation while another thread encodes, and an encode uses every core anyway."""

    def __init__(self, inner: "TextEmbedder") -> None:
        self.inner = inner
        self.model_name, self.model_version, self.dim = embedder_info(inner)
        self._lock = threading.Lock()

    def encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            return self.inner.encode(texts)


def _all_or_raise(futures: dict[str, Future]) -> dict[str, Any]:
    """Each future's result by key, once every one is done; when any failed, the first failure
    (in the dict's order) is raised and the others are logged, so none is lost unseen."""
    wait(futures.values())
    failed = [(key, f.exception()) for key, f in futures.items() if f.exception() is not None]
    for key, error in failed[1:]:
        log.error("the sync of %s failed too: %r", key, error)
    if failed:
        raise failed[0][1]
    return {key: f.result() for key, f in futures.items()}


def _merged(table: str, stats: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One report for the parts of ``table`` written by a sync or rebuild: counts summed, flags
    true when true for any part, ``version`` the main part's, each part's own under ``parts``."""
    out: dict[str, Any] = {"table": table}
    out |= {c: sum(int(st.get(c) or 0) for st in stats.values()) for c in _COUNTS}
    out |= {f: any(bool(st.get(f)) for st in stats.values()) for f in _FLAGS if any(f in st for st in stats.values())}
    out["version"] = stats[table]["version"]
    out["parts"] = {part: {"rows": st["rows"], "version": st["version"]} for part, st in stats.items()}
    return out


def _empty(columns: Sequence[str]) -> pa.Table:
    """No rows, with the index's columns (a vector column as a list: its size is the table's)."""
    return pa.schema([EVIDENCE_SCHEMA.field(c) if c in EVIDENCE_SCHEMA.names else pa.field(c, pa.list_(pa.float32())) for c in columns]).empty_table()


def _searched(tbl: Any, build: Any, columns: list[str], score: str) -> pa.Table:
    """The ``columns`` and the ``score`` of the rows the query ``build`` makes on the table's async
    twin (:data:`ROW_ID` among the columns: LanceDB's row ids), run in LanceDB's event loop in
    one call. A search made eight calls into that loop, six of them LanceDB 0.40's sync
    query builder's (the table's schema three times for its own checks, the query, its batches),
    each a thread hop of ~0.15-0.4 ms; the same query on ``LanceTable._table`` (the AsyncTable the sync
    API wraps: private, so tests/engine/test_vectors.py holds it to the pinned version) is one.
    At 100k entries, alone: a vector search 10.4-12.0 -> 8.9-9.1 ms, a full-text search
    6.3-6.7 -> 5.1 ms at the median, the same ids and scores (docs/benchmarks.md)."""
    from lancedb.background_loop import LOOP  # lazy: see `import lancedb` in _connection

    async def run() -> pa.Table:
        query = build(tbl._table)
        if ROW_ID in columns:
            query = query.with_row_id()
        return await query.select([*(c for c in columns if c != ROW_ID), score]).to_arrow()

    return LOOP.run(run())


def _hit_rows(query: Any, score: str, held: EvidenceRows | None) -> list[dict[str, Any]]:
    """A search's hits as rows with their ``score`` column: ``query(columns)`` selects only
    LanceDB's row ids when the version's rows are held, and the rows come from memory. LanceDB
    then reads no column of the table: selecting the text cost a full-text search 7.5 ms against
    3.4 for the ids at 161k rows; selecting the ids, 6.6 ms against 3.5 for the row ids at 111k
    rows (320 hits), and a vector search 11.2 against 9.3 (81 hits; docs/benchmarks.md)."""
    if held is not None:
        found = query([ROW_ID])
        rows = held.by_row_id(found.column(ROW_ID).to_numpy())
        if rows is not None:  # always, for the rows held; else read them below
            for r, value in zip(rows, found.column(score).to_pylist()):
                r[score] = value
            return rows
    return table_rows(query(list(HIT_COLUMNS)))


# A tie group straddling the k-th place is fetched whole, up to this many rows.
_MAX_TIE_FETCH = 4096

# A full-text search first asks for this many times k rows. BM25 ties at the k-th place are
# common (short turns of the same length sharing the question's terms), and a tie group running
# past the first fetch costs a second query at 4x its rows. At 100k entries (the compile bench's
# home, k 80, 200 questions) 26 tie groups ran past 2k rows and none past 4k (the longest ended
# at row 222); the search took 7.0 ms at the median and 17.1 at p95 with 2k first, 8.2 and 8.9
# with 4k, 10.1 and 11.0 with 8k (docs/benchmarks.md). The answer is the same whatever it is.
FULLTEXT_FIRST_FETCH = 4


def _top_k(fetch: Any, k: int, first: int | None = None) -> list[dict[str, Any]]:
    """The best ``k`` rows, ties broken by id, independent of storage order.

    LanceDB returns tied scores (same text under several ids; BM25 over near-identical turns) in
    storage order, and which of them make the cut at ``limit(k)`` depends on how the table was
    written: a table rebuilt from scratch and one grown by appends would answer differently. So
    when the k-th score is tied with the last row fetched, fetch more until the tie group is
    complete, then sort by (score desc, id) and cut.

    The first fetch asks for ``first`` rows, at least one more than ``k``: with exactly ``k`` rows
    nothing shows whether the k-th is tied with the next, so every search used to fetch a second
    time (at 4k). Full text passes more (:data:`FULLTEXT_FIRST_FETCH`): BM25 ties at the k-th
    place are common, and a second query costs more than the first, while a few k rows cost
    barely more than k+1; vectors keep k+1, and with the rows held complete a tie from them
    instead (LanceVectorStore._vector_route). Whatever the first limit, the answer is the same."""
    limit = min(max(first or 0, k + 1), _MAX_TIE_FETCH) if k < _MAX_TIE_FETCH else k
    while True:
        rows = fetch(limit)
        if len(rows) < limit or limit >= _MAX_TIE_FETCH:
            break
        rows.sort(key=lambda r: -r["score"])
        if rows[-1]["score"] < rows[k - 1]["score"]:
            break
        limit = min(limit * 4, _MAX_TIE_FETCH)
    rows.sort(key=lambda r: (-r["score"], r["id"]))
    return rows[:k]


def _best(rows: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """The best ``k`` of hits from one or more parts, by score, ties by id (as :func:`_top_k`)."""
    return sorted(rows, key=lambda r: (-r["score"], r["id"]))[:k]


def _ranked(rows: list[dict[str, Any]], route: str) -> list[dict[str, Any]]:
    for rank, r in enumerate(rows, 1):
        r["route"] = route
        r["rank"] = rank
    return rows

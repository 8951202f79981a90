"""The entity graph view: entities and who interacts with whom, for PageRank and communities
("dreaming") and multi-hop retrieval, plus the evidence layer: ledger entries (ids, no text),
sessions, which entry mentions which entity, and relations between entities from current claims.

Callers see :class:`GraphStore` (its in-memory twin for unit tests is views/graph_memory.py, which
shares ``walk`` and ``name_communities`` below); every Kùzu-specific line lives in :class:`KuzuGraphStore`, one
room of ~590 lines on purpose: the swap-in rebuild, the connection held across queries and the
literal checks of every Cypher text belong to the one store (its input tables are in
views/graph_tables.py). Kùzu was
archived upstream in October 2025 (0.11.3 is the last release); its LadybugDB fork is meant as the
drop-in exit, so this module uses only plain Cypher, ``COPY ... FROM`` an Arrow table and the built-in algo
extension (``project_graph``/``page_rank``, statically linked in 0.11.3: no INSTALL, no network).

The graph is a rebuildable view. ``rebuild`` never edits in place (Kùzu keeps deleted text in its
file after DETACH DELETE + CHECKPOINT): it builds a fresh directory next to the live one and swaps it
in with two renames, then removes the old directory.

Verified on kuzu 0.11.3 (tests/engine/test_graph.py):

* filtered projection: ``CALL project_graph('G', {'Entity': 'n.scope = "s1"'}, {'INTERACTS':
  'r.scope = "s1"'})`` (the predicates are string literals: query parameters are not allowed in them);
* ``CALL page_rank('G', dampingFactor := 0.85, maxIterations := 100, tolerance := 1e-7)``; unweighted,
  directed; isolated nodes of the projection get (1 - d) / N;
* ranks are bit-identical across rebuilds only if the input is loaded in the same order: rows are
  sorted before COPY (shuffled input differed by ~1e-18 otherwise);
* ``CALL louvain('G') RETURN node, louvain_id``: communities over the projection; it also returns
  the nodes outside the projection (louvain_id -1), which ``communities`` drops by scope; one
  thread gives the same partition across rebuilds;
* multi-label walks ``-[r:INTERACTS|RELATES]-`` read a property missing from one table as null;
* project_graph needs a read-write database (P11); ``QueryResult.get_as_arrow()`` raises
  ZeroDivisionError on a result with no columns (CALL project_graph): such results are just closed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa

from memc.visibility import PRINCIPAL_RE, PUBLIC, SCOPE_RE, check_literal
from views.graph_tables import (
    EDGE_TABLES,
    NODE_TABLES,
    prepare_graph,
    prepared_version,
)

MAX_DEPTH = 4


@runtime_checkable
class GraphStore(Protocol):
    """A rebuildable entity graph."""

    def rebuild(
        self,
        entities: pa.Table,
        interactions: pa.Table,
        *,
        entries: pa.Table | None = None,
        sessions: pa.Table | None = None,
        mentions: pa.Table | None = None,
        relations: pa.Table | None = None,
    ) -> dict[str, Any]:
        """Replace the whole graph (Kùzu: a fresh directory, swapped in). Returns counts per table,
        totals ``nodes``/``edges`` and a content ``graph_version``."""
        ...

    def pagerank(self, scope: str) -> list[tuple[str, float]]:
        """(entity_id, rank) for the scope's nodes over the scope's edges, rank desc then entity_id."""
        ...

    def communities(self, scope: str) -> list[tuple[str, str]]:
        """(entity_id, community) over the scope's interaction graph; a community is named by its
        smallest member id, so the labels depend on the graph only. Sorted by entity_id."""
        ...

    def counts(self) -> dict[str, int]:
        """Rows per node and edge table (see NODE_TABLES, EDGE_TABLES); {} when no graph is built."""
        ...

    def node_evidence(self) -> dict[str, dict[str, list[str]]]:
        """Per node table, node id -> the ledger entry ids it traces to."""
        ...

    def neighbours(
        self,
        entity_ids: Sequence[str],
        *,
        depth: int = 1,
        scope: str | None = None,
        principals: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Entities within ``depth`` hops of the seeds (either direction), nearest first."""
        ...

    def node_count(self, scope: str | None = None) -> int: ...

    def edge_count(self, scope: str | None = None) -> int: ...

    def close(self) -> None: ...


class KuzuGraphStore:
    """:class:`GraphStore` on Kùzu 0.11. ``path`` is a directory this store owns: it holds the database
    file (``graph.kuzu`` plus Kùzu's side files) and ``graph.json`` (counts, content version).

    The database is opened read-write (``project_graph`` fails on a read-only database, P11) on first
    use. Kùzu lets only one process open a file read-write ("Could not set lock on file"), so a
    long-lived process that shares the graph with others (a query server next to Dagster runs) should
    pass ``keep_open=False``: every call then opens and closes the database (about 30 ms). A rebuild
    needs no lock on the live file (it builds a new one and renames), and a store that kept the old
    file open notices the swap on its next call and reopens.
    """

    DB_FILE = "graph.kuzu"
    META_FILE = "graph.json"

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        keep_open: bool = True,
        buffer_pool_size: int = 256 * 1024**2,
        max_num_threads: int = 0,
        compression: bool = True,
    ) -> None:
        self.path = Path(path)
        self.keep_open = keep_open
        self.buffer_pool_size = buffer_pool_size  # Kùzu's default is 80% of RAM
        self.max_num_threads = max_num_threads
        self.compression = compression
        self._db: Any = None
        self._conn: Any = None
        self._inode: int | None = None
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"KuzuGraphStore({str(self.path)!r})"

    def __enter__(self) -> "KuzuGraphStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- connection -------------------------------------------------------------------------------

    @property
    def db_file(self) -> Path:
        return self.path / self.DB_FILE

    def exists(self) -> bool:
        return self.db_file.exists()

    def _open_db(self, file: Path, buffer_pool_size: int | None = None) -> tuple[Any, Any]:
        import kuzu  # lazy: importing views loads no engine (tests/engine/test_vectors.py holds every views module to it)

        db = kuzu.Database(
            str(file),
            buffer_pool_size=buffer_pool_size or self.buffer_pool_size,
            max_num_threads=self.max_num_threads,
            compression=self.compression,
            read_only=False,
        )
        return db, kuzu.Connection(db)

    def _connection(self) -> Any | None:
        """The open connection, or None when no graph has been built yet (reading never creates one)."""
        try:
            inode = self.db_file.stat().st_ino
        except FileNotFoundError:
            self.close()
            return None
        if self._conn is not None and inode != self._inode:
            self.close()  # swapped by a rebuild in another process
        if self._conn is None:
            self._db, self._conn = self._open_db(self.db_file)
            self._inode = inode
        return self._conn

    @contextlib.contextmanager
    def _session(self) -> Iterator[Any | None]:
        with self._lock:
            try:
                yield self._connection()
            finally:
                if not self.keep_open:
                    self.close()

    def close(self) -> None:
        with self._lock:
            for obj in (self._conn, self._db):
                if obj is not None:
                    try:
                        obj.close()
                    except Exception:  # pragma: no cover - closing twice is harmless
                        pass
            self._conn = self._db = None
            self._inode = None

    @staticmethod
    def _rows(conn: Any, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        res = conn.execute(query, params or {})
        try:
            names = res.get_column_names()
            out = []
            while res.has_next():
                out.append(dict(zip(names, res.get_next())))
            return out
        finally:
            res.close()

    @staticmethod
    def _table(conn: Any, query: str) -> dict[str, list[Any]]:
        """A query's columns as lists, read as one Arrow table (the query must return columns)."""
        res = conn.execute(query)
        try:
            table = res.get_as_arrow()
            return {name: table.column(name).to_pylist() for name in table.column_names}
        finally:
            res.close()

    @staticmethod
    def _run(conn: Any, query: str, params: dict[str, Any] | None = None) -> None:
        res = conn.execute(query, params or {})
        for r in res if isinstance(res, list) else [res]:
            r.close()

    # -- building ---------------------------------------------------------------------------------

    _DDL = (
        "CREATE NODE TABLE Entity(entity_id STRING, scope STRING, name STRING, entity_type STRING, "
        "visibility STRING[], evidence STRING[], PRIMARY KEY(entity_id))",
        "CREATE NODE TABLE Session(session_key STRING, scope STRING, session_id STRING, entry_count INT64, "
        "first_at TIMESTAMP, last_at TIMESTAMP, visibility STRING[], PRIMARY KEY(session_key))",
        "CREATE NODE TABLE Entry(entry_id STRING, seq INT64, scope STRING, kind STRING, session_key STRING, "
        "actor STRING, source_ref STRING, valid_at TIMESTAMP, recorded_at TIMESTAMP, visibility STRING[], "
        "PRIMARY KEY(entry_id))",
        "CREATE REL TABLE INTERACTS(FROM Entity TO Entity, scope STRING, weight INT64, "
        "first_at TIMESTAMP, last_at TIMESTAMP, evidence STRING[])",
        # weight (always 1) and evidence mirror INTERACTS so that a walk over both sums and cites alike.
        "CREATE REL TABLE RELATES(FROM Entity TO Entity, scope STRING, predicate STRING, object STRING, "
        "valid_from TIMESTAMP, recorded_at TIMESTAMP, claim_id STRING, weight INT64, evidence STRING[], "
        "visibility STRING[])",
        "CREATE REL TABLE MENTIONS(FROM Entry TO Entity, scope STRING)",
        "CREATE REL TABLE IN_SESSION(FROM Entry TO Session)",
    )
    # What each table's rows are counted and keyed by.
    _COUNT = {
        "Entity": "MATCH (n:Entity) RETURN count(n) AS c",
        "Session": "MATCH (n:Session) RETURN count(n) AS c",
        "Entry": "MATCH (n:Entry) RETURN count(n) AS c",
        "INTERACTS": "MATCH ()-[r:INTERACTS]->() RETURN count(r) AS c",
        "RELATES": "MATCH ()-[r:RELATES]->() RETURN count(r) AS c",
        "MENTIONS": "MATCH ()-[r:MENTIONS]->() RETURN count(r) AS c",
        "IN_SESSION": "MATCH ()-[r:IN_SESSION]->() RETURN count(r) AS c",
    }

    def rebuild(
        self,
        entities: pa.Table,
        interactions: pa.Table,
        *,
        entries: pa.Table | None = None,
        sessions: pa.Table | None = None,
        mentions: pa.Table | None = None,
        relations: pa.Table | None = None,
    ) -> dict[str, Any]:
        """Build the graph into a fresh directory beside ``path`` (bulk COPY from the Arrow tables,
        nodes before edges), then swap: rename the live directory away, rename the fresh
        one in, delete the old. Returns ``{"nodes", "edges", "tables", "graph_version", "path"}``."""

        tables = prepare_graph(entities, interactions, entries=entries, sessions=sessions, mentions=mentions, relations=relations)
        # The content version is hashed (Arrow's Parquet writer, outside the GIL) on the core the
        # one-thread load below leaves free: 0.1-0.2 s at 100k entries.
        hashing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memc-graph-version")
        versioned = hashing.submit(prepared_version, tables)
        hashing.shutdown(wait=False)
        parent = self.path.parent
        parent.mkdir(parents=True, exist_ok=True)
        self._remove_leftovers()
        token = uuid.uuid4().hex[:12]
        fresh = parent / f".{self.path.name}.new-{token}"
        retired = parent / f".{self.path.name}.old-{token}"
        with self._lock:
            try:
                fresh.mkdir()
                db, conn = self._open_db(fresh / self.DB_FILE, load_pool_size(tables, self.buffer_pool_size))
                try:
                    for ddl in self._DDL:
                        self._run(conn, ddl)
                    # Straight from Arrow (a query parameter), on one thread: Kùzu's parallel scan
                    # of an Arrow table loads rows out of order, and the order fixes PageRank's
                    # sums; read on one thread the load is the same, offsets included, as a load
                    # of the Parquet files this staged before, and at 100k entries 1.6 -> 1.3 s.
                    conn.set_max_threads_for_exec(1)
                    for target in (*NODE_TABLES, *EDGE_TABLES):
                        if not tables[target].num_rows:  # an empty COPY is pointless
                            continue
                        try:
                            self._run(conn, f"COPY {target} FROM $rows", {"rows": tables[target]})
                        except RuntimeError as e:  # Kùzu's message on an Arrow scan need not name the table
                            raise RuntimeError(f"loading the graph's {target} table ({tables[target].num_rows} rows): {e}") from e
                    counts = {t: int(self._rows(conn, q)[0]["c"]) for t, q in self._COUNT.items()}
                    expected = {t: tables[t].num_rows for t in counts}
                    if counts != expected:
                        raise RuntimeError(f"graph load mismatch: {counts} vs {expected}")
                finally:
                    conn.close()
                    db.close()  # checkpoints: the fresh directory is complete on disk
                nodes = sum(counts[t] for t in NODE_TABLES)
                edges = sum(counts[t] for t in EDGE_TABLES)
                version = versioned.result()
                meta = {"nodes": nodes, "edges": edges, "tables": counts, "graph_version": version, "engine": self._engine_version()}
                (fresh / self.META_FILE).write_text(json.dumps(meta, sort_keys=True) + "\n")
                self.close()
                if self.path.exists():
                    self.path.rename(retired)
                try:
                    fresh.rename(self.path)
                except BaseException:
                    if retired.exists() and not self.path.exists():
                        retired.rename(self.path)  # put the old graph back rather than none
                    raise
            finally:
                shutil.rmtree(fresh, ignore_errors=True)
                shutil.rmtree(retired, ignore_errors=True)
        return {"nodes": nodes, "edges": edges, "tables": counts, "graph_version": version, "path": str(self.path)}

    def _remove_leftovers(self) -> None:
        """Half-done swaps of a crashed rebuild (the live directory is never among them)."""
        parent = self.path.parent
        for p in parent.glob(f".{self.path.name}.new-*"):
            shutil.rmtree(p, ignore_errors=True)
        for p in parent.glob(f".{self.path.name}.old-*"):
            shutil.rmtree(p, ignore_errors=True)

    @staticmethod
    def _engine_version() -> str:
        import kuzu  # lazy: as in _open_db

        return f"kuzu=={kuzu.__version__}"

    def info(self) -> dict[str, Any] | None:
        """What the last rebuild wrote to ``graph.json`` (counts, graph_version), or None."""
        try:
            return json.loads((self.path / self.META_FILE).read_text())
        except FileNotFoundError:
            return None

    # -- reading ----------------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        with self._session() as conn:
            if conn is None:
                return {}
            return {t: int(self._rows(conn, q)[0]["c"]) for t, q in self._COUNT.items()}

    def node_evidence(self) -> dict[str, dict[str, list[str]]]:
        """Entity -> its evidence list; Entry -> itself; Session -> the entries in it."""
        with self._session() as conn:
            if conn is None:
                return {}
            # As Arrow, not a row at a time: at 100k entries the Entry nodes took 0.13 s with
            # get_next, 0.014 s so.
            ent = self._table(conn, "MATCH (n:Entity) RETURN n.entity_id AS id, n.evidence AS ev")
            entr = self._table(conn, "MATCH (n:Entry) RETURN n.entry_id AS id")
            sess = self._table(conn, "MATCH (s:Session) OPTIONAL MATCH (e:Entry)-[:IN_SESSION]->(s) RETURN s.session_key AS id, collect(e.entry_id) AS ev")
        return {
            "Entity": {i: sorted(ev or []) for i, ev in zip(ent["id"], ent["ev"])},
            "Entry": {i: [i] for i in entr["id"]},
            "Session": {i: sorted(e for e in (ev or []) if e) for i, ev in zip(sess["id"], sess["ev"])},
        }

    def node_count(self, scope: str | None = None) -> int:
        """Entity nodes (of ``scope``); see :meth:`counts` for every table."""
        with self._session() as conn:
            if conn is None:
                return 0
            if scope is None:
                return int(self._rows(conn, "MATCH (n:Entity) RETURN count(n) AS c")[0]["c"])
            check_literal(scope, SCOPE_RE, "scope")
            return int(self._rows(conn, "MATCH (n:Entity) WHERE n.scope = $s RETURN count(n) AS c", {"s": scope})[0]["c"])

    def edge_count(self, scope: str | None = None) -> int:
        """INTERACTS edges (of ``scope``); see :meth:`counts` for every table."""
        with self._session() as conn:
            if conn is None:
                return 0
            if scope is None:
                return int(self._rows(conn, "MATCH ()-[r:INTERACTS]->() RETURN count(r) AS c")[0]["c"])
            check_literal(scope, SCOPE_RE, "scope")
            q = "MATCH ()-[r:INTERACTS]->() WHERE r.scope = $s RETURN count(r) AS c"
            return int(self._rows(conn, q, {"s": scope})[0]["c"])

    def pagerank(
        self,
        scope: str,
        *,
        damping: float = 0.85,
        max_iterations: int = 100,
        tolerance: float = 1e-7,
    ) -> list[tuple[str, float]]:
        """PageRank over the scope's subgraph: nodes with ``scope`` and the edges with ``scope`` between
        them (a projected graph, dropped afterwards). Sorted by rank desc, then entity_id."""
        check_pagerank(scope, damping, max_iterations, tolerance)
        with self._session() as conn:
            if conn is None:
                return []
            name = f"pr_{uuid.uuid4().hex[:16]}"
            # The filters are Cypher text inside a string literal (no parameters allowed there); the
            # scope passed the pattern check above, so it holds no quote of either kind.
            self._run(
                conn,
                f"CALL project_graph('{name}', {{'Entity': 'n.scope = \"{scope}\"'}}, "
                f"{{'INTERACTS': 'r.scope = \"{scope}\"'}})",
            )
            try:
                rows = self._rows(
                    conn,
                    f"CALL page_rank('{name}', dampingFactor := {float(damping)!r}, "
                    f"maxIterations := {int(max_iterations)}, tolerance := {float(tolerance)!r}) "
                    "RETURN node.entity_id AS entity_id, rank",
                )
            finally:
                self._run(conn, f"CALL drop_projected_graph('{name}')")
        ranked = [(r["entity_id"], float(r["rank"])) for r in rows]
        ranked.sort(key=lambda t: (-t[1], t[0]))
        return ranked

    def communities(self, scope: str) -> list[tuple[str, str]]:
        """Louvain communities (Kùzu's algo extension) over the scope's interaction graph.

        Kùzu numbers communities arbitrarily and gives isolated nodes -1; here a community is named
        by its smallest member entity_id (an isolated node is its own community), so the labels
        follow from the graph alone. Louvain runs on one thread: with the input order fixed by
        prepare_graph that makes the partition repeatable across rebuilds."""
        check_literal(scope, SCOPE_RE, "scope")
        with self._session() as conn:
            if conn is None:
                return []
            name = f"cm_{uuid.uuid4().hex[:16]}"
            self._run(
                conn,
                f"CALL project_graph('{name}', {{'Entity': 'n.scope = \"{scope}\"'}}, "
                f"{{'INTERACTS': 'r.scope = \"{scope}\"'}})",
            )
            conn.set_max_threads_for_exec(1)
            try:
                rows = self._rows(conn, f"CALL louvain('{name}') RETURN node.entity_id AS entity_id, node.scope AS scope, louvain_id AS c")
            finally:
                conn.set_max_threads_for_exec(self.max_num_threads or os.cpu_count() or 1)
                self._run(conn, f"CALL drop_projected_graph('{name}')")
        groups: dict[Any, list[str]] = {}
        for r in rows:
            if r["scope"] != scope:
                continue  # kuzu 0.11.3's louvain also returns the nodes outside the projection, with -1
            isolated = r["c"] is None or int(r["c"]) < 0
            groups.setdefault(r["entity_id"] if isolated else int(r["c"]), []).append(r["entity_id"])
        return name_communities(groups.values())

    def neighbours(
        self,
        entity_ids: Sequence[str],
        *,
        depth: int = 1,
        scope: str | None = None,
        principals: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Entities within ``depth`` hops of ``entity_ids`` along INTERACTS and RELATES (relations
        from current claims) in either direction; the seeds themselves are not returned.

        Each result: the entity's columns plus ``distance`` (hops), ``via`` (the entities one hop
        closer it was reached from), ``edge_evidence`` (ledger entry ids of those connecting edges,
        sorted) and ``edge_weight`` (their summed weight). Sorted by distance, weight desc, entity_id.

        ``scope`` keeps the walk on that scope's nodes and edges. ``principals`` (when given) keeps it
        on entities whose visibility holds ``public`` or one of them: an invisible entity is neither
        returned nor walked through, and a RELATES edge (a claim) the principals may not see is not
        followed. Edge evidence still names ledger entries, which the query module must ACL-filter
        like any other evidence. ``relations`` lists the predicates of RELATES edges used.
        """
        # The edges' scope is compared here, not in the query: Kùzu 0.11 filters an edge property
        # by scanning the edge table (a hop at 100k entries, one seed: 46-53 ms with `r.scope =
        # $scope` in the WHERE, 10 ms with the entities' scope alone, the same rows).
        query = (
            "MATCH (a:Entity)-[r:INTERACTS|RELATES]-(b:Entity) WHERE a.entity_id IN $frontier"
            + (" AND b.scope = $scope" if scope is not None else "")
            + " RETURN a.entity_id AS via, b.entity_id AS entity_id, b.scope AS scope, b.name AS name,"
            " b.entity_type AS entity_type, b.visibility AS visibility, b.evidence AS evidence,"
            " r.evidence AS edge_evidence, r.weight AS weight, r.visibility AS edge_visibility,"
            " r.predicate AS predicate, r.scope AS edge_scope"
        )
        with self._session() as conn:

            def hop(frontier: list[str]) -> list[dict[str, Any]]:
                if conn is None:
                    return []  # no graph built yet: the arguments are still checked
                params: dict[str, Any] = {"frontier": frontier}
                if scope is not None:
                    params["scope"] = scope
                rows = self._rows(conn, query, params)
                return rows if scope is None else [r for r in rows if r["edge_scope"] == scope]

            return walk(entity_ids, hop, depth=depth, scope=scope, principals=principals)


# Kùzu's buffer pool for a bulk load, per byte of the Arrow input: a COPY holds its table's pages
# and primary-key index in the pool. Loads of synthetic graphs failed at about 1x their input
# (100k entries: 30 MB of Arrow failed in 32 MB, loaded in 64 MB; 1M: 304 MB failed in 128 MB),
# and the 1M-entry bench home's graph failed in the fixed 256 MB pool. The pool is an upper
# bound on what the load may hold, and the database is closed when the load is done; queries
# then open the store's own, smaller pool.
LOAD_POOL_PER_INPUT_BYTE = 3
LOAD_POOL_MAX_SHARE_OF_RAM = 0.4


def load_pool_size(tables: dict[str, pa.Table], floor: int) -> int:
    """The buffer pool a rebuild opens its fresh database with: ``floor`` (the store's own pool),
    or LOAD_POOL_PER_INPUT_BYTE times the input's Arrow size when that is more, up to
    LOAD_POOL_MAX_SHARE_OF_RAM of this machine's memory."""
    need = LOAD_POOL_PER_INPUT_BYTE * sum(t.nbytes for t in tables.values())
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        ram = 0
    cap = int(ram * LOAD_POOL_MAX_SHARE_OF_RAM) if ram else need
    return max(floor, min(need, cap))


def check_pagerank(scope: str, damping: float, max_iterations: int, tolerance: float) -> None:
    check_literal(scope, SCOPE_RE, "scope")
    if not (0.0 < damping < 1.0) or max_iterations < 1 or tolerance <= 0:
        raise ValueError("damping in (0, 1), max_iterations >= 1, tolerance > 0")


def name_communities(groups: Iterable[Iterable[str]]) -> list[tuple[str, str]]:
    """(entity_id, community) sorted by entity_id, each community named by its smallest member so
    that the labels follow from the partition alone (engines number communities arbitrarily)."""
    out: dict[str, str] = {}
    for members in groups:
        members = list(members)
        label = min(members)
        out.update({m: label for m in members})
    return sorted(out.items())


def walk(
    entity_ids: Sequence[str],
    hop: Callable[[list[str]], Iterable[dict[str, Any]]],
    *,
    depth: int = 1,
    scope: str | None = None,
    principals: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The breadth-first walk behind :meth:`GraphStore.neighbours`, for every engine: ``hop(frontier)``
    yields one row per edge (INTERACTS or RELATES, either direction, already kept to ``scope``) from
    a frontier entity ``via`` to an entity ``entity_id``, with that entity's columns and the edge's
    ``edge_evidence``, ``weight``, ``edge_visibility`` and ``predicate`` (both None on INTERACTS)."""
    if isinstance(entity_ids, str):
        raise TypeError("entity_ids must be a list of strings")
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be within 1..{MAX_DEPTH}")
    if scope is not None:
        check_literal(scope, SCOPE_RE, "scope")
    allowed = None
    if principals is not None:
        if isinstance(principals, str):
            raise TypeError("principals must be a list of strings")
        allowed = {PUBLIC, *(check_literal(p, PRINCIPAL_RE, "principal") for p in principals)}
    seeds = sorted({str(e) for e in entity_ids})
    if not seeds:
        return []
    visited = set(seeds)
    found: dict[str, dict[str, Any]] = {}
    frontier = seeds
    for level in range(1, depth + 1):
        reached: dict[str, dict[str, Any]] = {}
        for row in hop(frontier):
            eid = row["entity_id"]
            if eid in visited:
                continue
            if allowed is not None and not allowed.intersection(row["visibility"] or ()):
                continue
            if allowed is not None and row["predicate"] is not None and not allowed.intersection(row["edge_visibility"] or ()):
                continue  # a relation is a claim: only those who may see it may follow it
            cur = reached.setdefault(
                eid,
                {
                    "entity_id": eid,
                    "scope": row["scope"],
                    "name": row["name"],
                    "entity_type": row["entity_type"],
                    "visibility": list(row["visibility"] or []),
                    "evidence": list(row["evidence"] or []),
                    "distance": level,
                    "via": set(),
                    "edge_evidence": set(),
                    "edge_weight": 0,
                    "relations": set(),
                },
            )
            if row["predicate"] is not None:
                cur["relations"].add(row["predicate"])
            cur["via"].add(row["via"])
            cur["edge_evidence"].update(row["edge_evidence"] or ())
            cur["edge_weight"] += int(row["weight"] or 0)
        if not reached:
            break
        for eid, d in reached.items():
            d["via"] = sorted(d["via"])
            d["edge_evidence"] = sorted(d["edge_evidence"])
            d["relations"] = sorted(d["relations"])
            found[eid] = d
        visited.update(reached)
        frontier = sorted(reached)
    return sorted(found.values(), key=lambda d: (d["distance"], -d["edge_weight"], d["entity_id"]))

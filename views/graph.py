"""The entity graph view: entities and who interacts with whom, for PageRank ("dreaming") and
multi-hop retrieval.

Callers see :class:`GraphStore`; every Kùzu-specific line lives in :class:`KuzuGraphStore`. Kùzu was
archived upstream in October 2025 (0.11.3 is the last release); its LadybugDB fork is meant as the
drop-in exit, so this module uses only plain Cypher, ``COPY ... FROM`` Parquet and the built-in algo
extension (``project_graph``/``page_rank``, statically linked in 0.11.3: no INSTALL, no network).

The graph is a rebuildable view. ``rebuild`` never edits in place (Kùzu keeps deleted text in its
file after DETACH DELETE + CHECKPOINT): it builds a fresh directory next to the live one and swaps it
in with two renames, then removes the old directory.

Verified on kuzu 0.11.3 (tests/test_graph.py):

* filtered projection: ``CALL project_graph('G', {'Entity': 'n.scope = "s1"'}, {'INTERACTS':
  'r.scope = "s1"'})`` (the predicates are string literals: query parameters are not allowed in them);
* ``CALL page_rank('G', dampingFactor := 0.85, maxIterations := 100, tolerance := 1e-7)``; unweighted,
  directed; isolated nodes of the projection get (1 - d) / N;
* ranks are bit-identical across rebuilds only if the input is loaded in the same order: rows are
  sorted before COPY (shuffled input differed by ~1e-18 otherwise);
* project_graph needs a read-write database (P11); ``QueryResult.get_as_arrow()`` raises
  ZeroDivisionError on a result with no columns (CALL project_graph): such results are just closed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa

PUBLIC = "public"
# Mirror ledger/schema.py; only validated values are ever inlined into Cypher text.
SCOPE_PATTERN = r"^[A-Za-z0-9_.:\-]{1,128}$"
PRINCIPAL_PATTERN = r"^[A-Za-z0-9_.@:\-]{1,128}$"
_SCOPE_RE = re.compile(SCOPE_PATTERN)
_PRINCIPAL_RE = re.compile(PRINCIPAL_PATTERN)

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

MAX_DEPTH = 4


@runtime_checkable
class GraphStore(Protocol):
    """A rebuildable entity graph."""

    def rebuild(self, entities: pa.Table, interactions: pa.Table) -> dict[str, Any]:
        """Replace the whole graph with these entities and interactions (fresh directory, swapped in)."""
        ...

    def pagerank(self, scope: str) -> list[tuple[str, float]]:
        """(entity_id, rank) for the scope's nodes over the scope's edges, rank desc then entity_id."""
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


def _check(value: Any, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise ValueError(f"malformed {what} {value!r}: must match {pattern.pattern}")
    return value


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


def prepare_graph(entities: pa.Table, interactions: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Validate and canonically order the input (the order fixes PageRank's float summation order)."""
    ents = _conform(entities, ENTITY_SCHEMA, "entities")
    rels = _conform(interactions, INTERACTION_SCHEMA, "interactions")
    ids = ents.column("entity_id").to_pylist()
    if any(i is None or i == "" for i in ids):
        raise ValueError("entities: entity_id must be a non-empty string")
    if len(set(ids)) != len(ids):
        raise ValueError("entities: duplicate entity_id")
    known = set(ids)
    for col in ("src", "dst"):
        dangling = sorted({v for v in rels.column(col).to_pylist() if v not in known})
        if dangling:
            raise ValueError(f"interactions: {col} names unknown entities {dangling[:5]}")
    if ents.num_rows:
        ents = ents.sort_by([("entity_id", "ascending")])
    if rels.num_rows:
        rels = rels.sort_by([("src", "ascending"), ("dst", "ascending"), ("scope", "ascending"), ("first_at", "ascending")])
    return ents, rels


def graph_version(entities: pa.Table, interactions: pa.Table) -> str:
    """A content version of the graph's input (same input, same version): lineage for derived claims."""
    h = hashlib.sha256()
    for t in (entities, interactions):
        for r in t.to_pylist():
            h.update(json.dumps(r, sort_keys=True, default=str, ensure_ascii=False).encode("utf-8"))
            h.update(b"\n")
        h.update(b"\x00")
    return "g_" + h.hexdigest()[:24]


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

    def _open_db(self, file: Path) -> tuple[Any, Any]:
        import kuzu

        db = kuzu.Database(
            str(file),
            buffer_pool_size=self.buffer_pool_size,
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
    def _run(conn: Any, query: str, params: dict[str, Any] | None = None) -> None:
        res = conn.execute(query, params or {})
        for r in res if isinstance(res, list) else [res]:
            r.close()

    # -- building ---------------------------------------------------------------------------------

    _DDL = (
        "CREATE NODE TABLE Entity(entity_id STRING, scope STRING, name STRING, entity_type STRING, "
        "visibility STRING[], evidence STRING[], PRIMARY KEY(entity_id))",
        "CREATE REL TABLE INTERACTS(FROM Entity TO Entity, scope STRING, weight INT64, "
        "first_at TIMESTAMP, last_at TIMESTAMP, evidence STRING[])",
    )

    def rebuild(self, entities: pa.Table, interactions: pa.Table) -> dict[str, Any]:
        """Build the graph into a fresh directory beside ``path`` (bulk COPY from Parquet staged in a
        temp dir), then swap: rename the live directory away, rename the fresh one in, delete the old.
        Returns ``{"nodes", "edges", "graph_version", "path"}``."""
        import pyarrow.parquet as pq

        ents, rels = prepare_graph(entities, interactions)
        version = graph_version(ents, rels)
        parent = self.path.parent
        parent.mkdir(parents=True, exist_ok=True)
        self._remove_leftovers()
        token = uuid.uuid4().hex[:12]
        fresh = parent / f".{self.path.name}.new-{token}"
        retired = parent / f".{self.path.name}.old-{token}"
        with self._lock:
            try:
                fresh.mkdir()
                db, conn = self._open_db(fresh / self.DB_FILE)
                try:
                    for ddl in self._DDL:
                        self._run(conn, ddl)
                    with tempfile.TemporaryDirectory(prefix="memc-graph-") as stage:
                        for name, table, target in (("entities", ents, "Entity"), ("interactions", rels, "INTERACTS")):
                            if table.num_rows == 0:
                                continue  # COPY of an empty file is pointless
                            file = Path(stage) / f"{name}.parquet"
                            if "'" in str(file) or "\\" in str(file):
                                raise ValueError(f"unsafe staging path {file}")
                            pq.write_table(table, file)
                            self._run(conn, f"COPY {target} FROM '{file}'")
                    nodes = self._rows(conn, "MATCH (n:Entity) RETURN count(n) AS c")[0]["c"]
                    edges = self._rows(conn, "MATCH ()-[r:INTERACTS]->() RETURN count(r) AS c")[0]["c"]
                    if (nodes, edges) != (ents.num_rows, rels.num_rows):
                        raise RuntimeError(f"graph load mismatch: {nodes}/{edges} vs {ents.num_rows}/{rels.num_rows}")
                finally:
                    conn.close()
                    db.close()  # checkpoints: the fresh directory is complete on disk
                meta = {"nodes": nodes, "edges": edges, "graph_version": version, "engine": self._engine_version()}
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
        return {"nodes": nodes, "edges": edges, "graph_version": version, "path": str(self.path)}

    def _remove_leftovers(self) -> None:
        """Half-done swaps of a crashed rebuild (the live directory is never among them)."""
        parent = self.path.parent
        for p in parent.glob(f".{self.path.name}.new-*"):
            shutil.rmtree(p, ignore_errors=True)
        for p in parent.glob(f".{self.path.name}.old-*"):
            shutil.rmtree(p, ignore_errors=True)

    @staticmethod
    def _engine_version() -> str:
        import kuzu

        return f"kuzu=={kuzu.__version__}"

    def info(self) -> dict[str, Any] | None:
        """What the last rebuild wrote to ``graph.json`` (counts, graph_version), or None."""
        try:
            return json.loads((self.path / self.META_FILE).read_text())
        except FileNotFoundError:
            return None

    # -- reading ----------------------------------------------------------------------------------

    def node_count(self, scope: str | None = None) -> int:
        with self._session() as conn:
            if conn is None:
                return 0
            if scope is None:
                return int(self._rows(conn, "MATCH (n:Entity) RETURN count(n) AS c")[0]["c"])
            _check(scope, _SCOPE_RE, "scope")
            return int(self._rows(conn, "MATCH (n:Entity) WHERE n.scope = $s RETURN count(n) AS c", {"s": scope})[0]["c"])

    def edge_count(self, scope: str | None = None) -> int:
        with self._session() as conn:
            if conn is None:
                return 0
            if scope is None:
                return int(self._rows(conn, "MATCH ()-[r:INTERACTS]->() RETURN count(r) AS c")[0]["c"])
            _check(scope, _SCOPE_RE, "scope")
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
        _check(scope, _SCOPE_RE, "scope")
        if not (0.0 < damping < 1.0) or max_iterations < 1 or tolerance <= 0:
            raise ValueError("damping in (0, 1), max_iterations >= 1, tolerance > 0")
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

    def neighbours(
        self,
        entity_ids: Sequence[str],
        *,
        depth: int = 1,
        scope: str | None = None,
        principals: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Entities within ``depth`` hops of ``entity_ids`` along INTERACTS in either direction; the
        seeds themselves are not returned.

        Each result: the entity's columns plus ``distance`` (hops), ``via`` (the entities one hop
        closer it was reached from), ``edge_evidence`` (ledger entry ids of those connecting edges,
        sorted) and ``edge_weight`` (their summed weight). Sorted by distance, weight desc, entity_id.

        ``scope`` keeps the walk on that scope's nodes and edges. ``principals`` (when given) keeps it
        on entities whose visibility holds ``public`` or one of them: an invisible entity is neither
        returned nor walked through. Edge evidence still names ledger entries, which the query module
        must ACL-filter like any other evidence.
        """
        if isinstance(entity_ids, str):
            raise TypeError("entity_ids must be a list of strings")
        if not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"depth must be within 1..{MAX_DEPTH}")
        if scope is not None:
            _check(scope, _SCOPE_RE, "scope")
        allowed = None
        if principals is not None:
            if isinstance(principals, str):
                raise TypeError("principals must be a list of strings")
            allowed = {PUBLIC, *(_check(p, _PRINCIPAL_RE, "principal") for p in principals)}
        seeds = sorted({str(e) for e in entity_ids})
        if not seeds:
            return []
        query = (
            "MATCH (a:Entity)-[r:INTERACTS]-(b:Entity) WHERE a.entity_id IN $frontier"
            + (" AND r.scope = $scope AND b.scope = $scope" if scope is not None else "")
            + " RETURN a.entity_id AS via, b.entity_id AS entity_id, b.scope AS scope, b.name AS name,"
            " b.entity_type AS entity_type, b.visibility AS visibility, b.evidence AS evidence,"
            " r.evidence AS edge_evidence, r.weight AS weight"
        )
        visited = set(seeds)
        found: dict[str, dict[str, Any]] = {}
        frontier = seeds
        with self._session() as conn:
            if conn is None:
                return []
            for level in range(1, depth + 1):
                params: dict[str, Any] = {"frontier": frontier}
                if scope is not None:
                    params["scope"] = scope
                reached: dict[str, dict[str, Any]] = {}
                for row in self._rows(conn, query, params):
                    eid = row["entity_id"]
                    if eid in visited:
                        continue
                    if allowed is not None and not allowed.intersection(row["visibility"] or ()):
                        continue
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
                        },
                    )
                    cur["via"].add(row["via"])
                    cur["edge_evidence"].update(row["edge_evidence"] or ())
                    cur["edge_weight"] += int(row["weight"] or 0)
                if not reached:
                    break
                for eid, d in reached.items():
                    d["via"] = sorted(d["via"])
                    d["edge_evidence"] = sorted(d["edge_evidence"])
                    found[eid] = d
                visited.update(reached)
                frontier = sorted(reached)
        return sorted(found.values(), key=lambda d: (d["distance"], -d["edge_weight"], d["entity_id"]))

"""The in-memory twin of the Kùzu graph store: the same :class:`views.graph.GraphStore`, held in
Python lists, with PageRank and Louvain from networkx. Unit tests of whatever reads a graph
(dreaming, the query module's neighbourhoods) use it to run without a database file; the Kùzu
store stays the one the platform builds, and tests/engine/test_graph.py runs the contract over both.
The compiler holds the graph's relations in one for its walks (query/entities.py held_relations):
a walk reads its frontier's edges from an index by endpoint, not every edge.

Input goes through the same ``prepare_graph`` (validation, canonical order) and the same graph
version; walks go through the same ``walk``. Where the engines may differ, and how much:

* PageRank: networkx spreads the rank of a node without out-edges over every node, Kùzu drops it.
  Interactions are stored both ways, so only isolated nodes have no out-edges: on a scope without
  isolated nodes both compute the same fixpoint (ranks sum to 1); with k isolated nodes of N,
  Kùzu gives each (1 - d) / N and the others a little less than networkx does. Order is the same.
* Louvain: networkx's (seeded, so repeatable) and Kùzu's may split a graph differently; both
  name a community by its smallest member.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from views.graph import check_pagerank, name_communities, walk
from memc.visibility import SCOPE_RE, check_literal
from views.graph_tables import EDGE_TABLES, NODE_TABLES, prepare_graph, prepared_version

if TYPE_CHECKING:
    import networkx as nx

# Louvain is randomised; a fixed seed makes the partition a function of the graph.
LOUVAIN_SEED = 0


class MemoryGraphStore:
    """:class:`GraphStore` in this process's memory; nothing is written anywhere."""

    def __init__(self) -> None:
        self._tables: dict[str, list[dict[str, Any]]] | None = None
        self._ends: dict[str, list[tuple[str, dict[str, Any]]]] | None = None  # see _edges_by_end
        self._by_id: dict[str, dict[str, Any]] | None = None

    def __repr__(self) -> str:
        return "MemoryGraphStore()"

    def __enter__(self) -> "MemoryGraphStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release: the graph lives as long as the store."""

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
        tables = prepare_graph(entities, interactions, entries=entries, sessions=sessions, mentions=mentions, relations=relations)
        version = prepared_version(tables)
        self._tables = {name: table.to_pylist() for name, table in tables.items()}
        self._ends = self._by_id = None
        counts = self.counts()
        return {
            "nodes": sum(counts[t] for t in NODE_TABLES),
            "edges": sum(counts[t] for t in EDGE_TABLES),
            "tables": counts,
            "graph_version": version,
            "path": None,
        }

    def _entities(self) -> dict[str, dict[str, Any]]:
        if self._by_id is None:
            self._by_id = {r["entity_id"]: r for r in self._rows("Entity")}
        return self._by_id

    def _edges_by_end(self) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        """Each entity's edges (INTERACTS, then RELATES) as (the other end, the edge), from both
        ends, made once per rebuild: a walk reads its frontier's edges, not every edge of the
        graph (the compiler walks one held in memory for each question naming someone: query/entities.py)."""
        if self._ends is None:
            ends: dict[str, list[tuple[str, dict[str, Any]]]] = {}
            edges = [{**r, "predicate": None, "edge_visibility": None} for r in self._rows("INTERACTS")]
            edges += [{**r, "edge_visibility": r["visibility"]} for r in self._rows("RELATES")]
            for e in edges:
                ends.setdefault(e["src"], []).append((e["dst"], e))
                ends.setdefault(e["dst"], []).append((e["src"], e))
            self._ends = ends
        return self._ends

    def _rows(self, table: str) -> list[dict[str, Any]]:
        return [] if self._tables is None else self._tables[table]

    def counts(self) -> dict[str, int]:
        if self._tables is None:
            return {}
        return {t: len(self._tables[t]) for t in (*NODE_TABLES, *EDGE_TABLES)}

    def node_evidence(self) -> dict[str, dict[str, list[str]]]:
        if self._tables is None:
            return {}
        sessions: dict[str, list[str]] = {r["session_key"]: [] for r in self._rows("Session")}
        for r in self._rows("IN_SESSION"):
            sessions[r["session_key"]].append(r["entry_id"])
        return {
            "Entity": {r["entity_id"]: sorted(r["evidence"] or []) for r in self._rows("Entity")},
            "Entry": {r["entry_id"]: [r["entry_id"]] for r in self._rows("Entry")},
            "Session": {k: sorted(v) for k, v in sessions.items()},
        }

    def node_count(self, scope: str | None = None) -> int:
        if scope is not None:
            check_literal(scope, SCOPE_RE, "scope")
        return sum(1 for r in self._rows("Entity") if scope is None or r["scope"] == scope)

    def edge_count(self, scope: str | None = None) -> int:
        if scope is not None:
            check_literal(scope, SCOPE_RE, "scope")
        return sum(1 for r in self._rows("INTERACTS") if scope is None or r["scope"] == scope)

    def _projection(self, scope: str) -> nx.MultiDiGraph:
        """The scope's nodes and the scope's INTERACTS edges between them (Kùzu's project_graph);
        a multigraph, so repeated pairs count once each as they do in Kùzu."""
        import networkx as nx  # lazy: the query module walks this store on the ask path, which runs no algorithm

        g = nx.MultiDiGraph()
        g.add_nodes_from(r["entity_id"] for r in self._rows("Entity") if r["scope"] == scope)
        g.add_edges_from(
            (r["src"], r["dst"]) for r in self._rows("INTERACTS") if r["scope"] == scope and r["src"] in g and r["dst"] in g
        )
        return g

    def pagerank(
        self,
        scope: str,
        *,
        damping: float = 0.85,
        max_iterations: int = 100,
        tolerance: float = 1e-7,
    ) -> list[tuple[str, float]]:
        import networkx as nx  # lazy: see _projection

        check_pagerank(scope, damping, max_iterations, tolerance)
        g = self._projection(scope)
        if g.number_of_nodes() == 0:
            return []
        ranks = nx.pagerank(g, alpha=damping, max_iter=max_iterations, tol=tolerance, weight=None)
        return sorted(((e, float(r)) for e, r in ranks.items()), key=lambda t: (-t[1], t[0]))

    def communities(self, scope: str) -> list[tuple[str, str]]:
        import networkx as nx  # lazy: see _projection

        check_literal(scope, SCOPE_RE, "scope")
        g = nx.Graph(self._projection(scope).to_undirected())
        if g.number_of_nodes() == 0:
            return []
        return name_communities(nx.community.louvain_communities(g, weight=None, seed=LOUVAIN_SEED))

    def neighbours(
        self,
        entity_ids: Sequence[str],
        *,
        depth: int = 1,
        scope: str | None = None,
        principals: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        entities = self._entities()
        ends = self._edges_by_end()

        def hop(frontier: list[str]) -> list[dict[str, Any]]:
            rows = []
            for a in frontier:
                # An undirected match: an edge between two frontier entities is met from both ends.
                for b, e in ends.get(a, ()):
                    if scope is not None and (e["scope"] != scope or entities[b]["scope"] != scope):
                        continue
                    node = entities[b]
                    rows.append(
                        {
                            "via": a,
                            "entity_id": b,
                            "scope": node["scope"],
                            "name": node["name"],
                            "entity_type": node["entity_type"],
                            "visibility": node["visibility"],
                            "evidence": node["evidence"],
                            "edge_evidence": e["evidence"],
                            "weight": e["weight"],
                            "edge_visibility": e["edge_visibility"],
                            "predicate": e["predicate"],
                        }
                    )
            return rows

        return walk(entity_ids, hop, depth=depth, scope=scope, principals=principals)

"""The entities a question names (by their content-addressed ids, and aliases entity resolution
found) and those one typed relation away in the graph.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from claims.ontology import ONTOLOGY
from memc.filecache import cached
from memc.home import MemcHome
from memc.ids import entity_id, is_common_noun
from memc.visibility import may_see
from views.graph_memory import MemoryGraphStore
from views.graph_tables import INTERACTION_SCHEMA
from views.marts import ENTITIES, GRAPH_RELATIONS, mart_path, read_mart

log = logging.getLogger(__name__)

_NAME = re.compile(r"\b[A-Z][\w-]*(?:'[\w-]+)*")


def entity_rows(home: MemcHome) -> list[dict[str, Any]]:
    """The entities mart, read once per version of the file in a warm process."""
    return entity_names(home)[0]


def entity_names(home: MemcHome) -> tuple[list[dict[str, Any]], dict[str, list[int]]]:
    """The entity rows, and for each name or alias (case-folded) the positions of the rows that
    carry it, read together once per version of the mart: a question's words look up their rows
    rather than every row being checked against them (548 rows a compile at 100k ledger entries)."""
    path = mart_path(home, ENTITIES)
    cols = ["entity_id", "scope", "name", "aliases", "visibility"]

    def load() -> tuple[list[dict[str, Any]], dict[str, list[int]]]:
        rows = read_mart(path, columns=cols).to_pylist()
        names: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            if is_common_noun(r["name"]):
                continue  # a thing pointed at ("The studio looks amazing"): a common noun, no name a question says
            for a in dict.fromkeys(a.casefold() for a in [r["name"], *(r["aliases"] or [])] if a):
                names.setdefault(a, []).append(i)
        return rows, names

    return cached("entity_rows", [path], load) or ([], {})


def named_entities(home: MemcHome, question: str, asker: str, scope: str | None) -> dict[str, str]:
    """Entity id -> the name the question calls it by, for the entities the question names.

    Ids are content-addressed (memc.ids.entity_id over scope and name), so a capitalised word
    maps to an id without reading any row; aliases entity resolution found ("Lena" -> Elena)
    come from the entities this asker may see. The ids only narrow searches that keep their
    visibility prefilter, so a name that is nobody's (or someone this asker may not see) adds
    nothing. An entity row derived from private evidence is visible only to who may see all of
    it, which is why names are not looked up only there."""
    rows, names = entity_names(home)
    scopes = [scope] if scope is not None else sorted({r["scope"] for r in rows})
    out: dict[str, str] = {}
    for word in _NAME.findall(question):
        name = re.sub(r"'s$", "", word)
        for sc in scopes:
            out.setdefault(entity_id(sc, name), name)
    words = set(re.findall(r"[\w'-]+", question.casefold()))
    words |= {w[:-2] for w in words if w.endswith("'s")}
    for r in (rows[i] for i in sorted({i for w in words for i in names.get(w, ())})):  # in the mart's order, as before
        if (scope is None or r["scope"] == scope) and may_see(asker, r["visibility"]):
            said = [a for a in [r["name"], *(r["aliases"] or [])] if a.casefold() in words]
            if said:
                out[r["entity_id"]] = said[0]
    return out


# Relations that hold between any two people who talk (ontology: walked=False).
NOT_WALKED = frozenset(name for name, p in ONTOLOGY.items() if not p.walked)


def related_entities(home: MemcHome, named: dict[str, str], asker: str, scope: str | None) -> list[str]:
    """Entities one typed relation away from the known entities the question names, walked over
    the graph's relations held in memory (:func:`held_relations`; GraphStore.neighbours, visibility
    pushed into the walk). ``mentions`` edges and who-talks-to-whom are not relations of this
    kind: in a conversation everyone is one such hop from everyone."""
    known = {r["entity_id"] for r in entity_rows(home)}
    seeds = sorted(set(named) & known)
    if not seeds:
        return []
    try:
        graph = held_relations(home)
    except ValueError as exc:  # the two marts caught between two builds' writes: answer without the route
        log.warning("graph route skipped: %s", exc)
        return []
    if graph is None:
        return []
    found = graph.neighbours(seeds, depth=1, scope=scope, principals=[asker])
    return sorted(n["entity_id"] for n in found if set(n["relations"]) - NOT_WALKED)


def held_relations(home: MemcHome) -> MemoryGraphStore | None:
    """The entity graph's typed relations in this process's memory: the entities and
    graph_relations marts, the rows the graph view's Entity nodes and RELATES edges are loaded
    from (views/build.py build_graph), in the graph store's in-memory twin, read once per version
    of the two files (None before a state build, or when no relation is walked: then nothing is
    held). The compile's walk is one hop over a walked relation, so the who-talks-to-whom edges
    and the relations not walked are left out: they never make an entity related.

    The Kùzu view is not opened on the ask path: a query process may hold its file only between
    calls (dreaming's Dagster runs open it read-write), and opening it, walking and closing it was
    ~47 ms of each compile that named someone on a home with typed relations (most questions on
    the LoCoMo dev homes: compile p50 137 -> 90 ms there; docs/benchmarks.md, "The graph route
    without opening the graph"). Dreaming and the dossiers still read Kùzu."""
    entities, relations = mart_path(home, ENTITIES), mart_path(home, GRAPH_RELATIONS)

    def load() -> MemoryGraphStore | None:
        rows = read_mart(relations)
        # the walked ones only: `mentions` alone were 17k of a 100k-entry home's rows, and an entity
        # reached by none but those is no relative (a null predicate is none either)
        rows = rows.filter(pc.invert(pc.is_in(rows.column("predicate"), value_set=pa.array(sorted(NOT_WALKED), pa.string()))))
        if not rows.num_rows:
            return None  # no typed relation (the compile bench's home): the entities are not read
        graph = MemoryGraphStore()
        graph.rebuild(read_mart(entities), INTERACTION_SCHEMA.empty_table(), relations=rows)
        return graph

    return cached("held_relations", [entities, relations], load)

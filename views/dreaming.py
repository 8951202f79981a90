"""Dreaming: compile the interaction graph, rank who is central (PageRank), find who belongs
together (Louvain communities), and write the results back to the ledger as derived claims with
lineage: ``claim: Elena centrality = 0.0873; graph: interactions 3f2a..; ledger watermark: 1048;
producer: dreaming 1.1``.

A derived claim's watermark is the highest seq among its inputs (not the ledger head), and its
content, valid time and id follow from its inputs alone. Re-running at the same inputs therefore
produces the same entries, which the ledger's idempotency check turns into a no-op; dreaming's
own write-back does not change its inputs, so it never feeds on itself.

Its write policy (``unchanged``): a value the ledger already holds is not said again. A new
interaction changes the scope's graph version, and with it every derived entry's content; when
the ranks and communities it computes are the ones the ledger holds (one new message on the
sample corpus: all seven), restating them added an entry per value and made the build compile
every view a second time for nothing. A derived claim is written when its entity has none for
its predicate yet, or when what it says differs from the latest one: the value, who may see it,
or (for a community) its members.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ledger.schema import NewEntry
from memc.ids import digest, is_common_noun
from memc.visibility import meet

PRODUCER = "dreaming"
# 1.1: community claims (Louvain) beside centrality. 1.2: an unchanged value is not restated.
# 1.3: a thing pointed at (an entity under a common noun: "studio" for "The studio looks
# amazing", rules 0.4.0 on) is not ranked: it is a node of the graph with no interaction.
PRODUCER_VERSION = "1.3"


@dataclass(frozen=True)
class ScopeInputs:
    """What every claim dreamt for one scope shares: its lineage and visibility."""

    scope: str
    evidence: tuple[str, ...]  # the interaction turns' entry ids, sorted
    watermark: int  # highest seq among them: never the ledger head, so dreaming never feeds on itself
    visibility: tuple[str, ...]  # the meet of their visibilities
    valid_at: datetime  # the last interaction's valid time
    graph_version: str  # content hash of the scope's interaction edges


def scope_inputs(interactions: pa.Table, seq_of: dict[str, int]) -> dict[str, ScopeInputs]:
    """Per scope, the lineage of anything computed from its interaction graph. Scopes whose inputs
    no single principal may all see are left out: a claim visible to nobody but an administrator
    would be refused by the policy validator anyway. Each scope's rows are taken in Arrow, not as
    a dict each (0.17 s at 100k entries, twice a dreaming run, before 2026-12-07)."""
    out = {}
    scopes = interactions.column("scope")
    for scope in sorted(s for s in pc.unique(scopes).to_pylist() if s is not None):
        rows = interactions.filter(pc.equal(scopes, scope)).sort_by([("src", "ascending"), ("dst", "ascending")])
        evidence = sorted(pc.unique(pc.list_flatten(rows.column("evidence"))).to_pylist())
        # meet() is a set intersection (public its identity): each distinct list once is enough.
        visibility = meet({tuple(v) if v is not None else None: v for v in rows.column("visibility").to_pylist()}.values())
        if not rows.num_rows or not evidence or not visibility:
            continue
        edges = zip(rows.column("src").to_pylist(), rows.column("dst").to_pylist(), rows.column("weight").to_pylist())
        out[scope] = ScopeInputs(
            scope=scope,
            evidence=tuple(evidence),
            watermark=max(seq_of[e] for e in evidence),
            visibility=tuple(visibility),
            valid_at=pc.max(rows.column("last_at")).as_py(),
            graph_version=digest(list(edges))[:12],
        )
    return out


def _entry(inp: ScopeInputs, entity_id: str, name: str, predicate: str, value: str, **attrs: Any) -> NewEntry:
    return NewEntry(
        kind="derived_claim",
        scope=inp.scope,
        content=(
            f"claim: {name} {predicate} = {value}; graph: interactions {inp.graph_version}; "
            f"ledger watermark: {inp.watermark}; producer: {PRODUCER} {PRODUCER_VERSION}"
        ),
        valid_at=inp.valid_at,
        actor=PRODUCER,
        source_ref=f"{predicate}:{entity_id}:{inp.graph_version}",
        visibility=inp.visibility,
        confidence=1.0,
        attributes={
            "subject": name,
            "subject_id": entity_id,
            "predicate": predicate,
            "object": value,
            "graph_version": inp.graph_version,
            **attrs,
        },
        derived_from=inp.evidence,
        ingested_by="memc:dreaming",
        producer=PRODUCER,
        producer_version=PRODUCER_VERSION,
        watermark=inp.watermark,
    )


def centrality_entries(
    inputs: dict[str, ScopeInputs],
    entities: pa.Table,
    ranks_by_scope: dict[str, list[tuple[str, float]]],
) -> list[NewEntry]:
    """Derived ``centrality`` claims, one per ranked entity.

    ``inputs`` are :func:`scope_inputs` of the interactions mart, ``entities`` the entities mart;
    ``ranks_by_scope`` maps a scope to its PageRank results."""
    names = _names(entities)
    out: list[NewEntry] = []
    for scope, ranks in sorted(ranks_by_scope.items()):
        inp = inputs.get(scope)
        if inp is None or not ranks:
            continue
        for entity_id, rank in ranks:
            name = names.get(entity_id, entity_id)
            if entity_id in names and is_common_noun(name):
                continue  # a common noun, no one (1.3)
            out.append(_entry(inp, entity_id, name, "centrality", f"{rank:.4f}", algorithm="pagerank"))
    return out


def community_entries(
    inputs: dict[str, ScopeInputs],
    entities: pa.Table,
    communities_by_scope: dict[str, list[tuple[str, str]]],
    ranks_by_scope: dict[str, list[tuple[str, float]]],
) -> list[NewEntry]:
    """Derived ``community`` claims, one per entity in a community of two or more: ``claim: Priya
    community = Elena's circle (3 members)``. A community is named after its most central member
    (PageRank, then entity_id), so the name means something to a reader and follows from the
    graph alone; ``community_id`` hashes the sorted member ids."""
    names = _names(entities)
    out: list[NewEntry] = []
    for scope, assignment in sorted(communities_by_scope.items()):
        inp = inputs.get(scope)
        if inp is None or not assignment:
            continue
        rank = dict(ranks_by_scope.get(scope, []))
        members: dict[str, list[str]] = defaultdict(list)
        for entity_id, label in assignment:
            members[label].append(entity_id)
        for label, group in sorted(members.items()):
            if len(group) < 2:
                continue  # an isolated speaker is no community
            group.sort()
            leader = min(group, key=lambda e: (-round(rank.get(e, 0.0), 12), e))
            community_id = "cm_" + digest(scope, group)[:12]
            value = f"{names.get(leader, leader)}'s circle ({len(group)} members)"
            for entity_id in group:
                out.append(
                    _entry(
                        inp, entity_id, names.get(entity_id, entity_id), "community", value,
                        algorithm="louvain", community_id=community_id, members=len(group),
                    )
                )
    return out


def dream(graph: Any, interactions: pa.Table, entities: pa.Table, seq_of: dict[str, int], scopes: Sequence[str] | None = None) -> list[NewEntry]:
    """Everything dreaming derives from a built graph (a views.graph.GraphStore): PageRank and
    Louvain communities per scope of the interaction mart, as derived ledger entries (the write
    policy, ``unchanged``, is the caller's: views/build.py ``dream_home``). A scope without
    :func:`scope_inputs` (no principal may see all of its inputs) yields no claim, so its graph
    is not ranked at all."""
    inputs = scope_inputs(interactions, seq_of)
    scopes = sorted(set(interactions.column("scope").to_pylist())) if scopes is None else sorted(scopes)
    scopes = [scope for scope in scopes if scope in inputs]
    ranks = {scope: graph.pagerank(scope) for scope in scopes}
    comms = {scope: graph.communities(scope) for scope in scopes}
    return centrality_entries(inputs, entities, ranks) + community_entries(inputs, entities, comms, ranks)


def _says(scope: str, attributes: dict[str, Any], visibility: Sequence[str]) -> tuple[tuple[str, str, str], tuple]:
    """(scope, subject id, predicate) and what a derived claim says of it: the value, who may
    see it and, for a community, its members (by the community's id)."""
    key = (scope, attributes["subject_id"], attributes["predicate"])
    return key, (attributes["object"], tuple(sorted(visibility)), attributes.get("community_id"))


def held_values(derived: pa.Table) -> dict[tuple[str, str, str], tuple]:
    """What the ledger's derived claims hold now, per (scope, subject id, predicate): the latest
    one's ``_says``. ``derived`` has the ledger's seq, scope, attributes (JSON) and visibility of
    dreaming's derived_claim entries (erased ones are gone from the ledger: they hold nothing)."""
    held: dict[tuple[str, str, str], tuple] = {}
    for r in sorted(derived.to_pylist(), key=lambda r: r["seq"]):
        attributes = json.loads(r["attributes"] or "{}")
        if attributes.get("subject_id") and attributes.get("predicate"):
            key, says = _says(r["scope"], attributes, r["visibility"] or ())
            held[key] = says
    return held


def unchanged(entry: NewEntry, held: dict[tuple[str, str, str], tuple]) -> bool:
    """Whether the ledger already holds what ``entry`` says (the write policy above)."""
    key, says = _says(entry.scope, entry.attributes, entry.visibility)
    return held.get(key) == says


def _names(entities: pa.Table) -> dict[str, str]:
    return {r["entity_id"]: r["name"] for r in entities.select(["entity_id", "name"]).to_pylist()}

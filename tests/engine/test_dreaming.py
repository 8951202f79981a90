"""Dreaming on a real ledger and a graph store (real Kùzu, and its in-memory twin for the contract): PageRank and Louvain written back as derived claims with
lineage; idempotent; never feeding on its own output; visibility no broader than the inputs'."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from ledger import Ledger, NewEntry
from views.dreaming import PRODUCER, PRODUCER_VERSION, dream, held_values, scope_inputs, unchanged
from views.graph import KuzuGraphStore
from views.graph_memory import MemoryGraphStore
from views.graph_tables import ENTITY_SCHEMA, both_directions

T0 = datetime(2025, 3, 1, tzinfo=timezone.utc)

# Two triangles joined by one edge (c-d), plus a lonely speaker: two communities.
PEOPLE = ["a", "b", "c", "d", "e", "f", "lonely"]
EDGES = [("a", "b"), ("a", "c"), ("b", "c"), ("d", "e"), ("d", "f"), ("e", "f"), ("c", "d")]


def _ledger_with_turns(tmp_path, private_pair=("e", "f")) -> tuple[Ledger, dict[tuple[str, str], list[str]]]:
    ledger = Ledger(tmp_path / "ledger")
    evidence: dict[tuple[str, str], list[str]] = {}
    batch = []
    for n, (s, d) in enumerate(EDGES):
        vis = tuple(sorted({"e", "f", "d"})) if (s, d) == private_pair else ("public",)
        batch.append(NewEntry(kind="message", scope="acme", actor=s, content=f"{s} answers {d} ({n})", valid_at=T0 + timedelta(hours=n), visibility=vis))
    ledger.append(batch)
    for (s, d), e in zip(EDGES, ledger.iter_entries()):
        evidence[(s, d)] = [e["entry_id"]]
    return ledger, evidence


def _marts(ledger: Ledger, evidence) -> tuple[pa.Table, pa.Table]:
    vis = {e["entry_id"]: e["visibility"] for e in ledger.iter_entries()}
    ents = pa.Table.from_pylist(
        [{"entity_id": p, "scope": "acme", "name": p.upper(), "entity_type": "person", "visibility": ["public"], "evidence": ["x"]} for p in PEOPLE],
        schema=ENTITY_SCHEMA,
    )
    inter = pa.Table.from_pylist(
        [
            {"src": s, "dst": d, "scope": "acme", "weight": 1, "first_at": T0, "last_at": T0 + timedelta(hours=n),
             "evidence": evidence[(s, d)], "visibility": vis[evidence[(s, d)][0]]}
            for n, (s, d) in enumerate(EDGES)
        ]
    )
    return ents, inter


def _store(kind: str, path):
    return KuzuGraphStore(path) if kind == "kuzu" else MemoryGraphStore()


@pytest.fixture(params=["kuzu", "memory"])
def setup(request, tmp_path):
    ledger, evidence = _ledger_with_turns(tmp_path)
    ents, inter = _marts(ledger, evidence)
    graph = _store(request.param, tmp_path / "graph")
    graph.rebuild(ents, both_directions(inter.drop_columns(["visibility"])))
    seq_of = {e["entry_id"]: e["seq"] for e in ledger.iter_entries()}
    yield ledger, ents, inter, graph, seq_of
    graph.close()


def test_dreaming_writes_centrality_and_communities_with_lineage(setup):
    ledger, ents, inter, graph, seq_of = setup
    head = ledger.head()
    entries = dream(graph, inter, ents, seq_of)
    by_pred: dict[str, list[NewEntry]] = {}
    for e in entries:
        by_pred.setdefault(e.attributes["predicate"], []).append(e)
    assert len(by_pred["centrality"]) == len(PEOPLE)
    # Louvain splits the two triangles; the lonely speaker is no community.
    comms = {e.attributes["subject_id"]: e.attributes["community_id"] for e in by_pred["community"]}
    assert set(comms) == {"a", "b", "c", "d", "e", "f"}
    assert comms["a"] == comms["b"] == comms["c"] != comms["d"] == comms["e"] == comms["f"]
    # A community is named after its most central member: c and d bridge the triangles.
    names = {e.attributes["subject_id"]: e.attributes["object"] for e in by_pred["community"]}
    assert names["a"] == "C's circle (3 members)" and names["f"] == "D's circle (3 members)"
    for e in entries:
        assert e.kind == "derived_claim" and e.producer == PRODUCER and e.producer_version == PRODUCER_VERSION
        assert e.watermark == head == max(seq_of[s] for s in e.derived_from)
        assert set(e.derived_from) == set(seq_of)
        # One input is private to d, e and f: nothing derived from it may be seen more broadly.
        assert e.visibility == ("d", "e", "f")
        assert e.valid_at == T0 + timedelta(hours=len(EDGES) - 1)
        assert f"ledger watermark: {head}" in e.content and f"producer: dreaming {PRODUCER_VERSION}" in e.content
    ranks = dict(graph.pagerank("acme"))
    c = next(e for e in by_pred["centrality"] if e.attributes["subject_id"] == "c")
    assert c.content.startswith(f"claim: C centrality = {ranks['c']:.4f}; graph: interactions ")


def test_rerunning_appends_nothing_and_never_feeds_on_its_own_output(setup, tmp_path):
    ledger, ents, inter, graph, seq_of = setup
    first = dream(graph, inter, ents, seq_of)
    assert ledger.append(first).appended == len(first)
    head = ledger.head()
    # The ledger grew (by dreaming's own output): the inputs did not, so neither does the output.
    seq_after = {e["entry_id"]: e["seq"] for e in ledger.iter_entries()}
    again = dream(graph, inter, ents, seq_after)
    assert [e.entry_id for e in again] == [e.entry_id for e in first]
    assert ledger.append(again).appended == 0 and ledger.head() == head
    # A rebuilt graph (fresh directory, shuffled input) dreams the same entries.
    other = _store("kuzu" if isinstance(graph, KuzuGraphStore) else "memory", tmp_path / "graph2")
    idx = list(reversed(range(inter.num_rows)))
    other.rebuild(ents.take(pa.array(list(reversed(range(ents.num_rows))))), both_directions(inter.drop_columns(["visibility"]).take(pa.array(idx))))
    assert [e.entry_id for e in dream(other, inter, ents, seq_after)] == [e.entry_id for e in first]
    other.close()


def test_new_evidence_gives_new_claims_at_the_new_watermark(setup):
    ledger, ents, inter, graph, seq_of = setup
    first = dream(graph, inter, ents, seq_of)
    ledger.append(first)
    ledger.append([NewEntry(kind="message", scope="acme", actor="lonely", content="lonely answers a", valid_at=T0 + timedelta(days=1))])
    new_turn = list(ledger.iter_entries())[-1]
    inter2 = pa.concat_tables([inter, pa.Table.from_pylist(
        [{"src": "a", "dst": "lonely", "scope": "acme", "weight": 1, "first_at": T0, "last_at": T0 + timedelta(days=1),
          "evidence": [new_turn["entry_id"]], "visibility": ["public"]}], schema=inter.schema)])
    graph.rebuild(ents, both_directions(inter2.drop_columns(["visibility"])))
    seq_now = {e["entry_id"]: e["seq"] for e in ledger.iter_entries()}
    second = dream(graph, inter2, ents, seq_now)
    assert {e.watermark for e in second} == {new_turn["seq"]}
    assert not {e.entry_id for e in second} & {e.entry_id for e in first}
    assert ledger.append(second).appended == len(second)


def _held(ledger: Ledger) -> dict:
    t = ledger.read(["seq", "kind", "scope", "attributes", "visibility"])
    return held_values(t.filter(pc.equal(t.column("kind"), "derived_claim")))


def _turn(ledger: Ledger, actor: str, to: str, day: int) -> dict:
    ledger.append([NewEntry(kind="message", scope="acme", actor=actor, content=f"{actor} answers {to} again", valid_at=T0 + timedelta(days=day))])
    return list(ledger.iter_entries())[-1]


def test_what_the_ledger_holds_is_not_said_again(setup):
    """The write policy: a new graph version that computes the values the ledger holds adds
    nothing; a value that moved, a community that changed members and a narrower visibility are
    written, and nothing else."""
    ledger, ents, inter, graph, seq_of = setup
    first = dream(graph, inter, ents, seq_of)
    ledger.append(first)
    assert not any(unchanged(e, {}) for e in first) and all(unchanged(e, _held(ledger)) for e in first)

    # One more turn between a and b: a new graph version (new evidence, weight 2), the same ranks and communities.
    turn = _turn(ledger, "a", "b", 1)
    rows = inter.to_pylist()
    rows[0] = {**rows[0], "weight": 2, "evidence": [*rows[0]["evidence"], turn["entry_id"]], "last_at": T0 + timedelta(days=1)}
    inter2 = pa.Table.from_pylist(rows, schema=inter.schema)
    graph.rebuild(ents, both_directions(inter2.drop_columns(["visibility"])))
    seq_now = {e["entry_id"]: e["seq"] for e in ledger.iter_entries()}
    second = dream(graph, inter2, ents, seq_now)
    assert {e.watermark for e in second} == {turn["seq"]} and not {e.entry_id for e in second} & {e.entry_id for e in first}
    # (PageRank and Louvain read the edges, not their weights: every value is the one held.)
    assert [e.attributes["object"] for e in second] == [e.attributes["object"] for e in first]
    assert [e for e in second if not unchanged(e, _held(ledger))] == [], "nothing moved: nothing is written"

    # The lonely speaker answers a: a new edge, so ranks move and a's community grows to four (a now leads it).
    turn = _turn(ledger, "lonely", "a", 2)
    inter3 = pa.concat_tables([inter2, pa.Table.from_pylist(
        [{"src": "a", "dst": "lonely", "scope": "acme", "weight": 1, "first_at": T0 + timedelta(days=2), "last_at": T0 + timedelta(days=2),
          "evidence": [turn["entry_id"]], "visibility": ["public"]}], schema=inter.schema)])  # fmt: skip
    graph.rebuild(ents, both_directions(inter3.drop_columns(["visibility"])))
    seq_now = {e["entry_id"]: e["seq"] for e in ledger.iter_entries()}
    held = _held(ledger)
    third = [e for e in dream(graph, inter3, ents, seq_now) if not unchanged(e, held)]
    communities = {e.attributes["subject_id"]: e.attributes["object"] for e in third if e.attributes["predicate"] == "community"}
    assert set(communities) == {"a", "b", "c", "lonely"} and set(communities.values()) == {"A's circle (4 members)"}, communities
    assert "lonely" in {e.attributes["subject_id"] for e in third if e.attributes["predicate"] == "centrality"}
    ledger.append(third)
    assert not [e for e in dream(graph, inter3, ents, seq_now) if not unchanged(e, _held(ledger))], "now held: nothing more"

    # Who may see it is part of what a claim says: the same values, seen by fewer, are written.
    narrower = inter3.set_column(inter3.schema.get_field_index("visibility"), "visibility", pa.array([["d", "e"]] * inter3.num_rows))
    fourth = [e for e in dream(graph, narrower, ents, seq_now) if not unchanged(e, _held(ledger))]
    assert len(fourth) == len(dream(graph, narrower, ents, seq_now)) and all(e.visibility == ("d", "e") for e in fourth)


def test_scopes_no_one_may_wholly_see_are_skipped():
    inter = pa.Table.from_pylist(
        [
            {"src": "a", "dst": "b", "scope": "s", "weight": 1, "first_at": T0, "last_at": T0, "evidence": ["e1"], "visibility": ["ana"]},
            {"src": "b", "dst": "c", "scope": "s", "weight": 1, "first_at": T0, "last_at": T0, "evidence": ["e2"], "visibility": ["bob"]},
            {"src": "x", "dst": "y", "scope": "t", "weight": 2, "first_at": T0, "last_at": T0, "evidence": ["e3"], "visibility": ["public"]},
        ]
    )
    got = scope_inputs(inter, {"e1": 1, "e2": 2, "e3": 3})
    assert set(got) == {"t"} and got["t"].visibility == ("public",) and got["t"].watermark == 3

    class Asked:
        """A graph that records which scopes dreaming ranks (an unseen scope yields no claim)."""

        def __init__(self) -> None:
            self.asked: list[str] = []

        def pagerank(self, scope: str) -> list[tuple[str, float]]:
            self.asked.append(scope)
            return [("x", 0.5), ("y", 0.5)]

        def communities(self, scope: str) -> list[tuple[str, str]]:
            self.asked.append(scope)
            return [("x", "x"), ("y", "x")]

    graph = Asked()
    ents = pa.Table.from_pylist([{"entity_id": e, "name": e.upper()} for e in "abcxy"])
    derived = dream(graph, inter, ents, {"e1": 1, "e2": 2, "e3": 3})
    assert graph.asked == ["t", "t"]
    assert sorted((e.scope, e.attributes["predicate"], e.attributes["subject"]) for e in derived) == [
        ("t", "centrality", "X"), ("t", "centrality", "Y"), ("t", "community", "X"), ("t", "community", "Y")
    ]


def test_dream_entries_are_valid_derived_claims_for_the_extractor(setup):
    """The rule extractor turns a derived entry's attributes into a claim: subject, predicate, object."""
    ledger, ents, inter, graph, seq_of = setup
    for e in dream(graph, inter, ents, seq_of):
        attrs = e.attributes
        assert {"subject", "subject_id", "predicate", "object", "graph_version", "algorithm"} <= set(attrs)
        assert json.loads(json.dumps(attrs)) == attrs


def test_a_thing_pointed_at_is_not_ranked(setup):
    # "The studio looks amazing" makes "studio" an entity of the mart (rules 0.4.0): a node of the
    # graph with no interaction, whose PageRank would only be the teleport share.
    ledger, ents, inter, graph, seq_of = setup
    studio = pa.Table.from_pylist([{**ents.slice(0, 1).to_pylist()[0], "entity_id": "studio", "name": "studio"}], schema=ents.schema)
    with_thing = pa.concat_tables([ents, studio])
    graph.rebuild(with_thing, both_directions(inter.drop_columns(["visibility"])))
    assert "studio" in dict(graph.pagerank("acme"))  # the graph ranks it: dreaming leaves it out
    ranked = {e.attributes["subject_id"] for e in dream(graph, inter, with_thing, seq_of) if e.attributes["predicate"] == "centrality"}
    assert "studio" not in ranked and len(ranked) == len(PEOPLE)

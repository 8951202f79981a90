"""The entity graph view: the GraphStore contract, run on real Kùzu and on its in-memory twin
(views/graph_memory.py), plus what only the Kùzu store does (fresh-directory rebuilds, one file
shared between processes, ranks identical to the reference formulation)."""

from __future__ import annotations

import random
import secrets
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from views.graph import GraphStore, KuzuGraphStore
from views.graph_memory import MemoryGraphStore
from views.graph_tables import ENTITY_SCHEMA, INTERACTION_SCHEMA, graph_version, prepare_graph, prepared_version

T0 = datetime(2025, 3, 1, tzinfo=timezone.utc)


def entities(rows: list[tuple]) -> pa.Table:
    """rows: (entity_id, scope, name[, visibility])"""
    return pa.Table.from_pylist(
        [
            {
                "entity_id": r[0],
                "scope": r[1],
                "name": r[2],
                "entity_type": "person",
                "visibility": list(r[3]) if len(r) > 3 else ["public"],
                "evidence": [f"e_{r[0]}"],
            }
            for r in rows
        ],
        schema=ENTITY_SCHEMA,
    )


def interactions(rows: list[tuple]) -> pa.Table:
    """rows: (src, dst, scope[, weight])"""
    return pa.Table.from_pylist(
        [
            {
                "src": r[0],
                "dst": r[1],
                "scope": r[2],
                "weight": r[3] if len(r) > 3 else 1,
                "first_at": T0,
                "last_at": T0 + timedelta(days=n),
                "evidence": [f"e_{r[0]}_{r[1]}"],
            }
            for n, r in enumerate(rows)
        ],
        schema=INTERACTION_SCHEMA,
    )


# acme: a -> b -> c -> a, a -> x, plus a cross-scope edge a -> g (tagged acme) that must not count;
# globex: g <-> h.
SMALL_E = entities(
    [
        ("a", "acme", "Ana"),
        ("b", "acme", "Bruno"),
        ("c", "acme", "Carla", ["carla"]),
        ("x", "acme", "Xavier"),
        ("lonely", "acme", "Lonely"),
        ("g", "globex", "Gus"),
        ("h", "globex", "Hana"),
    ]
)
SMALL_I = interactions(
    [
        ("a", "b", "acme", 3),
        ("b", "c", "acme", 1),
        ("c", "a", "acme", 2),
        ("a", "x", "acme", 5),
        ("a", "g", "acme", 1),
        ("g", "h", "globex", 1),
        ("h", "g", "globex", 1),
    ]
)


def reference_pagerank(nodes: list[str], edges: list[tuple[str, str]], d: float = 0.85, iters: int = 500) -> dict[str, float]:
    """Kùzu's formulation: r(v) = (1 - d)/N + d * sum(r(u)/outdeg(u)), no dangling redistribution."""
    n = len(nodes)
    out = {v: 0 for v in nodes}
    for s, _ in edges:
        out[s] += 1
    r = {v: 1.0 / n for v in nodes}
    for _ in range(iters):
        nxt = {v: (1 - d) / n for v in nodes}
        for s, t in edges:
            nxt[t] += d * r[s] / out[s]
        r = nxt
    return r


def random_graph(seed: int, n: int = 120, m: int = 500) -> tuple[pa.Table, pa.Table]:
    rng = random.Random(seed)
    scopes = {f"n{i:03d}": ("acme" if i % 3 else "globex") for i in range(n)}
    ids = sorted(scopes)
    edges: set[tuple[str, str]] = set()
    while len(edges) < m:
        s, t = rng.choice(ids), rng.choice(ids)
        if s != t and scopes[s] == scopes[t]:
            edges.add((s, t))
    return (
        entities([(i, scopes[i], i.upper()) for i in ids]),
        interactions([(s, t, scopes[s], rng.randint(1, 9)) for s, t in sorted(edges)]),
    )


def shuffled(t: pa.Table, seed: int) -> pa.Table:
    idx = list(range(t.num_rows))
    random.Random(seed).shuffle(idx)
    return t.take(pa.array(idx, pa.int64()))


def new_store(kind: str, path: Path) -> GraphStore:
    return KuzuGraphStore(path) if kind == "kuzu" else MemoryGraphStore()


@pytest.fixture(params=["kuzu", "memory"])
def graph(request, tmp_path) -> GraphStore:
    """Every test that takes ``graph`` is the contract: it runs on both stores."""
    g = new_store(request.param, tmp_path / "graph")
    yield g
    g.close()


def on_disk(graph: GraphStore) -> bool:
    return isinstance(graph, KuzuGraphStore)


def test_empty_and_missing_graph(graph) -> None:
    assert isinstance(graph, GraphStore)
    assert graph.node_count() == graph.edge_count() == 0
    assert graph.pagerank("acme") == [] and graph.neighbours(["a"]) == []
    if on_disk(graph):
        assert not graph.path.exists(), "reading must not create a database"
    res = graph.rebuild(entities([]), interactions([]))
    assert res["nodes"] == res["edges"] == 0
    assert graph.node_count() == 0 and graph.pagerank("acme") == []


def test_rebuild_swaps_in_a_fresh_directory(tmp_path) -> None:
    graph = KuzuGraphStore(tmp_path / "graph", compression=False)  # uncompressed, so a byte search means something
    canary = "canary" + secrets.token_hex(12)
    ents = entities([("a", "acme", "Ana"), ("s", "acme", canary)])
    first = graph.rebuild(ents, interactions([("a", "s", "acme")]))
    assert first["nodes"] == 2 and first["edges"] == 1
    assert graph.node_count() == 2  # opens the live database
    old_dir_inode = graph.path.stat().st_ino
    old_file_inode = graph.db_file.stat().st_ino

    def files_with_canary() -> list[Path]:
        return [p for p in tmp_path.rglob("*") if p.is_file() and canary.encode() in p.read_bytes()]

    assert files_with_canary()

    second = graph.rebuild(ents.slice(0, 1), interactions([]))
    assert second["nodes"] == 1 and second["edges"] == 0
    assert graph.path.stat().st_ino != old_dir_inode and graph.db_file.stat().st_ino != old_file_inode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graph"], "old and staging directories are gone"
    assert files_with_canary() == []
    assert graph.node_count() == 1 and graph.info()["nodes"] == 1
    assert second["graph_version"] != first["graph_version"]
    graph.close()


def test_a_second_store_sees_a_rebuild_by_another(tmp_path) -> None:
    reader, writer = KuzuGraphStore(tmp_path / "graph"), KuzuGraphStore(tmp_path / "graph")
    writer.rebuild(SMALL_E, SMALL_I)
    writer.close()
    assert reader.node_count() == SMALL_E.num_rows  # holds the database open
    writer.rebuild(SMALL_E.slice(0, 2), interactions([("a", "b", "acme")]))
    assert reader.node_count() == 2 and reader.edge_count() == 1  # noticed the swap and reopened
    reader.close()
    writer.close()


def test_rebuild_validates_input(graph) -> None:
    with pytest.raises(ValueError, match="unknown entities"):
        graph.rebuild(SMALL_E, interactions([("a", "nobody", "acme")]))
    with pytest.raises(ValueError, match="duplicate"):
        graph.rebuild(entities([("a", "acme", "A"), ("a", "acme", "A2")]), interactions([]))
    with pytest.raises(ValueError, match="lack"):
        graph.rebuild(SMALL_E.drop_columns(["scope"]), SMALL_I)
    assert graph.counts() == {}
    if on_disk(graph):
        assert not graph.path.exists()
        assert [p for p in graph.path.parent.iterdir()] == []  # a failed build leaves nothing behind


def test_counts(graph) -> None:
    res = graph.rebuild(SMALL_E, SMALL_I)
    assert res == {**res, "nodes": 7, "edges": 7}
    assert graph.node_count() == 7 and graph.edge_count() == 7
    assert graph.node_count("acme") == 5 and graph.edge_count("globex") == 2


def test_pagerank_covers_only_the_scope_and_matches_the_reference(graph) -> None:
    graph.rebuild(SMALL_E, SMALL_I)
    acme = graph.pagerank("acme")
    assert {e for e, _ in acme} == {"a", "b", "c", "x", "lonely"}
    ref = reference_pagerank(["a", "b", "c", "x", "lonely"], [("a", "b"), ("b", "c"), ("c", "a"), ("a", "x")])
    assert [e for e, _ in acme] == sorted(ref, key=lambda e: (-ref[e], e))
    if on_disk(graph):  # the twin spreads the rank of nodes without out-edges (views/graph_memory.py)
        for e, rank in acme:
            assert rank == pytest.approx(ref[e], abs=1e-6), e
    ranks = [r for _, r in acme]
    assert ranks == sorted(ranks, reverse=True)

    globex = graph.pagerank("globex")
    assert [e for e, _ in globex] == ["g", "h"]  # equal ranks: ordered by entity_id
    assert globex[0][1] == pytest.approx(globex[1][1]) == pytest.approx(0.5, abs=1e-6)
    assert graph.pagerank("initech") == []
    with pytest.raises(ValueError, match="malformed scope"):
        graph.pagerank("acme\"' OR true")


def test_pagerank_on_a_random_graph_matches_the_reference(tmp_path) -> None:
    graph = KuzuGraphStore(tmp_path / "graph")
    ents, rels = random_graph(seed=5)
    graph.rebuild(ents, rels)
    for scope in ("acme", "globex"):
        nodes = [r["entity_id"] for r in ents.to_pylist() if r["scope"] == scope]
        edges = [(r["src"], r["dst"]) for r in rels.to_pylist() if r["scope"] == scope]
        ref = reference_pagerank(nodes, edges)
        got = dict(graph.pagerank(scope))
        assert set(got) == set(nodes)
        assert max(abs(got[v] - ref[v]) for v in nodes) < 1e-5
    graph.close()


def test_two_rebuilds_give_identical_pagerank(tmp_path) -> None:
    ents, rels = random_graph(seed=9)
    one = KuzuGraphStore(tmp_path / "one")
    two = KuzuGraphStore(tmp_path / "two")
    one.rebuild(ents, rels)
    two.rebuild(shuffled(ents, 1), shuffled(rels, 2))  # same content, other order
    for scope in ("acme", "globex"):
        first = one.pagerank(scope)
        assert first == one.pagerank(scope), "repeat on one store"
        assert first == two.pagerank(scope), "exactly equal across rebuilds, order included"
    one.rebuild(ents, rels)  # rebuild in place of itself
    assert one.pagerank("acme") == two.pagerank("acme")
    assert one.info()["graph_version"] == two.info()["graph_version"]
    one.close()
    two.close()


def test_neighbours(graph) -> None:
    graph.rebuild(SMALL_E, SMALL_I)
    one = graph.neighbours(["a"])
    assert [(n["entity_id"], n["distance"]) for n in one] == [("x", 1), ("b", 1), ("c", 1), ("g", 1)]
    x = one[0]
    assert x["via"] == ["a"] and x["edge_evidence"] == ["e_a_x"] and x["edge_weight"] == 5
    assert x["name"] == "Xavier" and x["evidence"] == ["e_x"] and x["scope"] == "acme"

    two = graph.neighbours(["a"], depth=2)
    assert {n["entity_id"]: n["distance"] for n in two} == {"x": 1, "b": 1, "c": 1, "g": 1, "h": 2}

    scoped = graph.neighbours(["a"], depth=2, scope="acme")
    assert {n["entity_id"] for n in scoped} == {"x", "b", "c"}

    # c is visible to carla only: hidden from others and not walked through.
    hidden = graph.neighbours(["b"], depth=2, principals=["ana"])
    assert {n["entity_id"] for n in hidden} == {"a", "x", "g"}
    assert {n["entity_id"] for n in graph.neighbours(["b"], depth=1, principals=["carla"])} == {"a", "c"}

    assert graph.neighbours(["nobody"]) == [] and graph.neighbours([]) == []
    with pytest.raises(ValueError):
        graph.neighbours(["a"], depth=0)
    with pytest.raises(ValueError, match="malformed principal"):
        graph.neighbours(["a"], principals=["x' OR true"])


def test_a_scoped_walk_follows_only_that_scopes_edges(graph) -> None:
    # "lonely" (acme) is tied to Ana only by an edge another scope recorded: a walk kept to acme
    # does not take it, whatever the scope of the entities at its ends.
    graph.rebuild(SMALL_E, interactions([("a", "b", "acme", 3), ("a", "lonely", "globex", 9), ("g", "h", "globex", 1)]))
    assert {n["entity_id"] for n in graph.neighbours(["a"], scope="acme")} == {"b"}
    assert {n["entity_id"] for n in graph.neighbours(["a"])} == {"b", "lonely"}
    assert {n["entity_id"] for n in graph.neighbours(["a"], scope="globex")} == set()


def test_keep_open_false_releases_the_file_between_calls(tmp_path) -> None:
    shared = KuzuGraphStore(tmp_path / "graph", keep_open=False)
    shared.rebuild(SMALL_E, SMALL_I)
    assert shared.node_count() == 7 and shared._conn is None
    assert [e for e, _ in shared.pagerank("globex")] == ["g", "h"] and shared._conn is None
    # Another handle can open the file read-write now (Kùzu allows one at a time).
    other = KuzuGraphStore(tmp_path / "graph")
    assert other.edge_count() == 7
    other.close()


def test_rebuild_accepts_mart_shaped_input(graph) -> None:
    """dbt/DuckDB marts: extra columns, naive UTC timestamps, int32 weights, large strings."""
    ents = SMALL_E.append_column("extra", pa.array(["x"] * SMALL_E.num_rows))
    ents = ents.set_column(0, "entity_id", ents.column("entity_id").cast(pa.large_string()))
    rels = SMALL_I.set_column(3, "weight", SMALL_I.column("weight").cast(pa.int32()))
    for i, name in ((4, "first_at"), (5, "last_at")):
        rels = rels.set_column(i, name, rels.column(name).cast(pa.timestamp("us")))
    res = graph.rebuild(ents, rels)
    assert (res["nodes"], res["edges"]) == (7, 7)
    assert [e for e, _ in graph.pagerank("globex")] == ["g", "h"]


def test_symmetric_interactions_rank_both_speakers_alike(graph) -> None:
    from views.graph_tables import both_directions

    ents = entities([("p", "s", "Pia"), ("q", "s", "Quinn"), ("r", "s", "Rae")])
    # one pair stored once (lesser id first), as the interactions mart does
    rels = interactions([("p", "q", "s"), ("q", "r", "s")])
    graph.rebuild(ents, both_directions(rels))
    ranks = dict(graph.pagerank("s"))
    assert graph.edge_count() == 4
    assert ranks["p"] == pytest.approx(ranks["r"])
    assert ranks["q"] > ranks["p"], "the speaker who talks with both ranks highest"


# -- the evidence layer: entries, sessions, mentions, relations ---------------------------------------


def evidence_layer():
    from views.graph_tables import ENTRY_SCHEMA, MENTION_SCHEMA, RELATION_SCHEMA, SESSION_SCHEMA

    entries = pa.Table.from_pylist(
        [
            {"entry_id": f"e{i}", "seq": i, "scope": "acme", "kind": "message", "session_key": "ses_1" if i < 3 else None,
             "actor": "Ana", "source_ref": f"t{i}", "valid_at": T0, "recorded_at": T0, "visibility": ["public"]}
            for i in range(4)
        ],
        schema=ENTRY_SCHEMA,
    )
    sessions = pa.Table.from_pylist(
        [{"session_key": "ses_1", "scope": "acme", "session_id": "s1", "entry_count": 3, "first_at": T0, "last_at": T0, "visibility": ["public"]}],
        schema=SESSION_SCHEMA,
    )
    mentions = pa.Table.from_pylist(
        [{"entry_id": "e0", "entity_id": "a", "scope": "acme"}, {"entry_id": "e1", "entity_id": "b", "scope": "acme"}, {"entry_id": "e3", "entity_id": "a", "scope": "acme"}],
        schema=MENTION_SCHEMA,
    )
    relations = pa.Table.from_pylist(
        [
            {"src": "x", "dst": "lonely", "scope": "acme", "predicate": "has_relative", "object": "Lonely", "valid_from": T0, "recorded_at": T0,
             "claim_id": "c1", "weight": 1, "evidence": ["e3"], "visibility": ["public"]},
            {"src": "lonely", "dst": "h", "scope": "acme", "predicate": "works_with", "object": "H", "valid_from": T0, "recorded_at": T0,
             "claim_id": "c2", "weight": 1, "evidence": ["e2"], "visibility": ["carla"]},
        ],
        schema=RELATION_SCHEMA,
    )
    return dict(entries=entries, sessions=sessions, mentions=mentions, relations=relations)


def test_evidence_layer_counts_and_lineage(graph) -> None:
    layer = evidence_layer()
    res = graph.rebuild(SMALL_E, SMALL_I, **layer)
    assert res["tables"] == {"Entity": 7, "Session": 1, "Entry": 4, "INTERACTS": 7, "RELATES": 2, "MENTIONS": 3, "IN_SESSION": 3}
    assert res["nodes"] == 12 and res["edges"] == 15
    assert graph.counts() == res["tables"]
    if on_disk(graph):
        assert graph.info()["tables"] == res["tables"]
    ev = graph.node_evidence()
    assert ev["Session"] == {"ses_1": ["e0", "e1", "e2"]} and ev["Entry"]["e3"] == ["e3"] and ev["Entity"]["x"] == ["e_x"]
    # the evidence layer is part of the content version
    assert res["graph_version"] != MemoryGraphStore().rebuild(SMALL_E, SMALL_I)["graph_version"]
    # pagerank still ranks people over interactions only
    assert [e for e, _ in graph.pagerank("globex")] == ["g", "h"]


def test_neighbours_follow_relations_the_asker_may_see(graph) -> None:
    graph.rebuild(SMALL_E, SMALL_I, **evidence_layer())
    two = {n["entity_id"]: n for n in graph.neighbours(["x"], depth=2)}
    assert two["lonely"]["distance"] == 1 and two["lonely"]["relations"] == ["has_relative"]
    assert two["a"]["relations"] == []
    # lonely -> h is a claim only carla may see: others do not walk it
    assert "h" not in {n["entity_id"] for n in graph.neighbours(["lonely"], depth=1, principals=["ana"])}
    assert "h" in {n["entity_id"] for n in graph.neighbours(["lonely"], depth=1, principals=["carla"])}


def test_evidence_layer_is_validated(graph) -> None:
    layer = evidence_layer()
    bad = dict(layer, mentions=pa.concat_tables([layer["mentions"], pa.Table.from_pylist([{"entry_id": "e_gone", "entity_id": "a", "scope": "acme"}], schema=layer["mentions"].schema)]))
    with pytest.raises(ValueError, match="mentions: entry_id names unknown entries"):
        graph.rebuild(SMALL_E, SMALL_I, **bad)
    bad = dict(layer, sessions=layer["sessions"].slice(0, 0))
    with pytest.raises(ValueError, match="unknown sessions"):
        graph.rebuild(SMALL_E, SMALL_I, **bad)
    assert graph.counts() == {}


@pytest.mark.parametrize("kind", ["kuzu", "memory"])
def test_communities_are_named_by_members_and_stable_across_rebuilds(tmp_path, kind) -> None:
    ents, rels = random_graph(seed=9)
    one, two = new_store(kind, tmp_path / "one"), new_store(kind, tmp_path / "two")
    one.rebuild(ents, rels)
    two.rebuild(shuffled(ents, 3), shuffled(rels, 4))
    for scope in ("acme", "globex"):
        got = one.communities(scope)
        assert got == two.communities(scope) == one.communities(scope)
        members = {r["entity_id"] for r in ents.to_pylist() if r["scope"] == scope}
        assert {e for e, _ in got} == members
        for e, label in got:
            assert label in members and label <= e  # named by the smallest member
    one.close()
    two.close()
    with pytest.raises(ValueError, match="malformed scope"):
        new_store(kind, tmp_path / "one").communities("x' OR 1")


def test_the_twin_answers_as_kuzu_does(tmp_path) -> None:
    """On a graph stored both ways with no isolated node (what the interactions mart gives) the two
    engines reach the same PageRank fixpoint; walks and counts agree on any input."""
    from views.graph_tables import both_directions

    ents, rels = random_graph(seed=11)
    kuzu_store, twin = KuzuGraphStore(tmp_path / "graph"), MemoryGraphStore()
    for store in (kuzu_store, twin):
        store.rebuild(ents, both_directions(rels))
    assert twin.counts() == kuzu_store.counts() and twin.node_evidence() == kuzu_store.node_evidence()
    for scope in ("acme", "globex"):
        want, got = dict(kuzu_store.pagerank(scope)), dict(twin.pagerank(scope))
        assert set(got) == set(want) and max(abs(got[e] - want[e]) for e in want) < 1e-5
    seeds = ["n001", "n002", "n005"]
    for kw in ({}, {"depth": 2}, {"depth": 3, "scope": "acme"}, {"depth": 2, "principals": ["ana"]}):
        assert twin.neighbours(seeds, **kw) == kuzu_store.neighbours(seeds, **kw), kw
    kuzu_store.close()


def test_a_rebuild_sizes_its_buffer_pool_by_its_input(tmp_path) -> None:
    """A bulk load needs about its input's size in Kùzu's buffer pool: 100k entries with their
    sessions and mentions (30 MB of Arrow) fail in a 32 MB pool, which is why the rebuild opens its
    fresh database with a pool sized by the input (the 1M-entry bench home's graph failed in the
    store's fixed 256 MB). The store's own, smaller pool still serves its queries afterwards."""
    from views.graph import load_pool_size
    from views.graph_tables import ENTRY_SCHEMA, MENTION_SCHEMA, SESSION_SCHEMA

    n, people = 100_000, 2_000
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    ids = [f"ent_{i:024d}" for i in range(people)]
    entries = pa.Table.from_pylist([{"entry_id": f"e_{i:030d}", "seq": i, "scope": "s", "kind": "message", "session_key": f"s/{i // 20}",
                                     "actor": f"P{i % people}", "source_ref": f"r{i}", "valid_at": t0, "recorded_at": t0,
                                     "visibility": ["public"]} for i in range(n)], schema=ENTRY_SCHEMA)  # fmt: skip
    sessions = pa.Table.from_pylist([{"session_key": f"s/{j}", "scope": "s", "session_id": str(j), "entry_count": 20, "first_at": t0,
                                      "last_at": t0, "visibility": ["public"]} for j in range(n // 20)], schema=SESSION_SCHEMA)  # fmt: skip
    mentions = pa.Table.from_pylist([{"entry_id": f"e_{i:030d}", "entity_id": ids[(7 * i + k) % people], "scope": "s"}
                                     for i in range(n) for k in range(2)], schema=MENTION_SCHEMA)  # fmt: skip
    entities = pa.Table.from_pylist([{"entity_id": e, "scope": "s", "name": f"P{j}", "entity_type": "person", "visibility": ["public"],
                                      "evidence": [f"e_{i:030d}" for i in range(j, n, people)]} for j, e in enumerate(ids)], schema=ENTITY_SCHEMA)  # fmt: skip
    small = 32 * 1024**2
    inputs = {"entities": entities, "entries": entries, "sessions": sessions, "mentions": mentions}
    assert load_pool_size(inputs, small) > 2 * sum(t.nbytes for t in inputs.values()) > small

    store = KuzuGraphStore(tmp_path / "g", buffer_pool_size=small)
    stats = store.rebuild(entities, INTERACTION_SCHEMA.empty_table(), entries=entries, sessions=sessions, mentions=mentions)
    assert stats["nodes"] == people + n + n // 20 and stats["tables"]["MENTIONS"] == 2 * n
    assert store.node_count("s") == people and len(store.pagerank("s")) == people
    store.close()


def test_the_graph_version_names_content_not_chunks() -> None:
    # graph_tables.graph_version hashes each table as Parquet bytes: the same values carried in
    # other chunks (as a mart read in row groups brings them) give the same version; one value
    # changed gives another; an empty evidence layer leaves it as it was.
    layer = evidence_layer()
    tables = prepare_graph(SMALL_E, SMALL_I, **layer)
    version = prepared_version(tables)
    rechunked = {name: pa.concat_tables([t.slice(0, t.num_rows // 2), t.slice(t.num_rows // 2)]) for name, t in tables.items()}
    assert prepared_version(rechunked) == version
    entries = layer["entries"]
    other = entries.set_column(entries.schema.get_field_index("scope"), "scope", pa.array(["elsewhere"] * entries.num_rows))
    assert prepared_version(prepare_graph(SMALL_E, SMALL_I, **{**layer, "entries": other})) != version
    names = SMALL_E.column("name").to_pylist()
    renamed = SMALL_E.set_column(SMALL_E.schema.get_field_index("name"), "name", pa.array([names[0] + "a", *names[1:]]))
    plain = prepare_graph(SMALL_E, SMALL_I)
    assert prepared_version(prepare_graph(renamed, SMALL_I)) != prepared_version(plain)
    assert prepared_version(plain) == graph_version(plain["Entity"], plain["INTERACTS"])


def test_graph_trace_problems_are_listed_by_table_then_node() -> None:
    from views.audit import graph_traces_to_ledger

    evidence = {"Session": {"s2": [], "s1": ["e_gone"]}, "Entity": {"b": ["e_1", "e_gone"], "a": ["e_1"], "c": []}}
    audit = graph_traces_to_ledger(evidence, {"e_1"})
    assert audit.problems == [
        "Entity b names unknown entries ['e_gone']",
        "Entity c traces to no ledger entry",
        "Session s1 names unknown entries ['e_gone']",
        "Session s2 traces to no ledger entry",
    ]


def test_a_large_load_keeps_the_prepared_order(tmp_path) -> None:
    # Kùzu scans an Arrow table in parallel morsels, which loaded the 100k bench home's entries
    # out of order; the rebuild loads on one thread so that node and edge offsets follow
    # prepare_graph's order (which PageRank's sums follow). Large enough for several morsels.
    from views.graph_tables import ENTRY_SCHEMA, MENTION_SCHEMA

    ents, rels = random_graph(seed=3, n=3000, m=40_000)
    rng = random.Random(5)
    ids = [f"e{rng.getrandbits(64):016x}" for _ in range(30_000)]
    entries = pa.Table.from_pylist(
        [{"entry_id": e, "seq": i, "scope": "acme", "kind": "message", "session_key": None, "actor": "Ana", "source_ref": None,
          "valid_at": T0, "recorded_at": T0, "visibility": ["public"]} for i, e in enumerate(ids)],
        schema=ENTRY_SCHEMA,
    )  # fmt: skip
    names = ents.column("entity_id").to_pylist()
    mentions = pa.Table.from_pylist([{"entry_id": e, "entity_id": names[i % len(names)], "scope": "acme"} for i, e in enumerate(ids)], schema=MENTION_SCHEMA)
    store = KuzuGraphStore(tmp_path / "g")
    store.rebuild(shuffled(ents, 1), shuffled(rels, 2), entries=shuffled(entries, 3), mentions=shuffled(mentions, 4))
    prepared = prepare_graph(ents, rels, entries=entries, mentions=mentions)
    with store._session() as conn:
        for table, key in (("Entity", "entity_id"), ("Entry", "entry_id")):
            loaded = store._table(conn, f"MATCH (n:{table}) RETURN offset(id(n)) AS o, n.{key} AS k ORDER BY o")
            assert loaded["k"] == prepared[table].column(key).to_pylist(), table
        for table, keys in (("INTERACTS", ("src", "dst")), ("MENTIONS", ("entry_id", "entity_id"))):
            a, b = ("entity_id", "entity_id") if table == "INTERACTS" else ("entry_id", "entity_id")
            loaded = store._table(conn, f"MATCH (x)-[r:{table}]->(y) RETURN offset(id(r)) AS o, x.{a} AS s, y.{b} AS d ORDER BY o")
            want = list(zip(*(prepared[table].column(k).to_pylist() for k in keys)))
            assert sorted(zip(loaded["s"], loaded["d"])) == sorted(want) and list(zip(loaded["s"], loaded["d"])) != [], table
    store.close()

"""The context compiler's graph route (evidence about entities one typed relation away from those
the question names) and its near-duplicate step, on real LanceDB and Kùzu views."""

from __future__ import annotations

from datetime import timedelta

import pytest

from claims.extract import CURRENT_RULES
from claims.store import extractor_dir
from ledger import Ledger, NewEntry
from memc.ids import entity_id
from memc.watermark import write_watermark
from query import compile_context
from query.entities import related_entities as _related_entities
from views_home import T0, make_home, write_claims, write_marts
from views.build import build_evidence_index, build_graph


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    from views.embedder import Embedder

    h = make_home(tmp_path_factory.mktemp("routes") / "home", n=60)
    ledger = Ledger(h.ledger)
    # Carla (Ana's relative, see views_home) says where she works; a forwarded copy of a note and
    # the note itself say the same words from two sources.
    ledger.append(
        [
            NewEntry(kind="message", scope="team", session_id="s9001", actor="Carla", source_ref="carla:1",
                     content="These days I work at the Quarry Bakery on the harbour.", valid_at=T0 + timedelta(days=30)),
            NewEntry(kind="document", scope="team", actor="Bruno", source_ref="note:1",
                     content="Reminder: the Falcon launch checklist is due on Friday.", valid_at=T0 + timedelta(days=31)),
            NewEntry(kind="message", scope="team", session_id="s9002", actor="Dev", source_ref="fwd:1",
                     content="Fwd from Bruno -- Reminder: the Falcon launch checklist is due on Friday. Thanks!",
                     valid_at=T0 + timedelta(days=32)),
        ]
    )
    write_marts(h)
    build_evidence_index(h, Embedder())
    build_graph(h)
    # views_home writes the marts without running extraction: mark the claims view as built too
    write_watermark(extractor_dir(h.claims, CURRENT_RULES.key), "claims", ledger.head())
    write_watermark(h.graph, "entity_graph", ledger.head())
    return h


def test_related_entities_walk_typed_relations_only(home):
    ana, carla = entity_id("team", "Ana"), entity_id("team", "Carla")
    assert _related_entities(home, {ana: "Ana"}, "dev", "team") == [carla]
    # Carla's entity is derived from private evidence too (views_home): who may not see all of
    # it does not walk to her
    assert _related_entities(home, {ana: "Ana"}, "ana", "team") == []
    # the walk is scoped, and a name nobody has adds nothing
    assert _related_entities(home, {ana: "Ana"}, "dev", "ops") == []
    assert _related_entities(home, {entity_id("team", "Where"): "Where"}, "dev", "team") == []


def test_the_graph_route_walks_what_the_graph_view_walks_without_opening_it(home, monkeypatch):
    """The compiler walks the relations held in memory (query/entities.py held_relations), loaded
    from the marts the graph view is loaded from: the same entities as the Kùzu view's own walk,
    for each asker and scope, and no Kùzu database opened by a compile."""
    from query.entities import NOT_WALKED
    from views.build import graph_store
    from views.graph import KuzuGraphStore

    ana = entity_id("team", "Ana")
    for asker, scope in (("dev", "team"), ("ana", "team"), ("dev", "ops"), ("dev", None)):
        with graph_store(home, keep_open=False) as graph:
            walked = graph.neighbours([ana], depth=1, scope=scope, principals=[asker])
        assert _related_entities(home, {ana: "Ana"}, asker, scope) == sorted(n["entity_id"] for n in walked if set(n["relations"]) - NOT_WALKED)

    def refuse(*a, **k):
        raise AssertionError("the compile opened the Kùzu database")

    monkeypatch.setattr(KuzuGraphStore, "_open_db", refuse)
    ctx = compile_context("Where does Ana's relative work?", "dev", home=home, scope="team")
    assert any(it.source_ref == "carla:1" and "graph" in it.routes for it in ctx.items)


def test_the_graph_route_finds_the_relatives_evidence(home):
    ctx = compile_context("Where does Ana's relative work?", "dev", home=home, scope="team")
    hit = next((it for it in ctx.items if it.source_ref == "carla:1"), None)
    assert hit is not None and "graph" in hit.routes, [(it.source_ref, it.routes) for it in ctx.items]
    assert ctx.items.index(hit) < 3


def test_near_duplicates_take_one_slot_and_name_the_other_source(home):
    ctx = compile_context("When is the Falcon launch checklist due?", "dev", home=home, scope="team")
    shown = [it for it in ctx.items if it.source_ref in ("note:1", "fwd:1")]
    assert len(shown) == 1, [(it.source_ref, it.text) for it in ctx.items]
    other = {"note:1": "fwd:1", "fwd:1": "note:1"}[shown[0].source_ref]
    ledger = Ledger(home.ledger)
    other_id = next(r["entry_id"] for r in ledger.iter_entries() if r["source_ref"] == other)
    assert shown[0].duplicates == [other_id] or other_id in shown[0].entry_ids


def test_a_stopped_first_index_build_resumed_after_an_erasure_keeps_no_erased_byte(tmp_path, monkeypatch):
    """A first build of the evidence index that stopped keeps its commits (views/vectors.py) and
    has no watermark; if an erasure lands before it is resumed, the resume rebuilds into a fresh
    table (reusing the vectors by hash), since deleting the erased rows would leave their bytes."""
    import secrets

    from memc.home import MemcHome
    from views.embedder import Embedder
    from views.vectors import LanceVectorStore

    home = MemcHome.resolve(tmp_path / "home").ensure()
    ledger = Ledger(home.ledger)
    canary = f"zq{secrets.token_hex(6)}"
    ledger.append([NewEntry(kind="message", scope="team", session_id="s1", actor="Ana", source_ref="m:0",
                            content=f"My locker code is {canary}, keep it to yourself.", valid_at=T0)])
    ledger.append([NewEntry(kind="message", scope="team", session_id="s1", actor="Bo", source_ref=f"m:{i}",
                            content=f"Note {i}: the standup moves to room {i}.", valid_at=T0 + timedelta(minutes=i)) for i in range(1, 6)])
    secret_id = next(e["entry_id"] for e in ledger.iter_entries() if canary in e["content"])
    real = Embedder()

    class StopsAfterTheSecretsCommit:
        model_name, model_version, dim = real.model_name, real.model_version, real.dim
        secret_embedded = False

        def encode(self, texts):
            if type(self).secret_embedded:
                raise RuntimeError("the build stopped here")
            type(self).secret_embedded = any(canary in t for t in texts)
            return real.encode(texts)

    # One row a commit; the build stops at the commit after the secret's row (rows come in id
    # order, so where that is varies). Had the secret's row been last, the sync ends with no
    # watermark written (the asset writes it): to the next build, the same as a stop.
    monkeypatch.setenv("MEMC_SYNC_COMMIT_ROWS", "1")
    try:
        build_evidence_index(home, StopsAfterTheSecretsCommit())
    except RuntimeError as exc:
        assert "stopped here" in str(exc)
    vectors = home.root / "vectors"
    held = lambda: any(canary.encode() in p.read_bytes() for p in vectors.rglob("*") if p.is_file())  # noqa: E731
    assert LanceVectorStore(vectors).count() >= 1 and held()

    tomb = ledger.append([NewEntry(kind="erasure", scope="team", actor="admin", content="erasure of 1 entry",
                                   valid_at=T0 + timedelta(days=1), attributes={"entry_ids": [secret_id]})])
    ledger.purge({secret_id: tomb.entry_ids[0]})
    stats = build_evidence_index(home, real, previous_watermark=0)
    assert stats["mode"] == "rebuild" and not held()
    assert stats["newly_embedded"] == stats["rows"] - stats["reused"]  # the commit's vectors were reused, by hash


def test_expected_rows_are_made_once_per_version_of_their_inputs(tmp_path, monkeypatch):
    """The evidence index and its check ask for the same expected rows in one build: made once,
    and again whenever a ledger file, a claims file or the entities mart changes."""
    import views.build as vb

    home = make_home(tmp_path / "home", n=40)
    made = []
    real = vb.read_inputs
    monkeypatch.setattr(vb, "read_inputs", lambda h, w: made.append(w) or real(h, w))
    ledger = Ledger(home.ledger)
    head = ledger.head()
    first = vb.expected_rows(home, head)
    assert vb.expected_rows(home, head) is first and made == [head]
    ledger.append([NewEntry(kind="message", scope="team", actor="Ana", session_id="s9", content="A new turn.", valid_at=T0)])
    assert vb.expected_rows(home, head).equals(first) and made == [head, head]  # a new ledger file
    write_marts(home)  # the entities mart written again
    vb.expected_rows(home, head)
    assert made == [head, head, head]
    write_claims(home)  # the claims file written again
    vb.expected_rows(home, head)
    assert made == [head, head, head, head]
    assert vb.expected_rows(home, head + 1).num_rows == first.num_rows + 1 and made[-1] == head + 1

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
from views_home import T0, make_home, write_marts
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

"""End to end: sample corpus -> ledger -> every asset through a real Dagster run -> ask.

Then the one invariant: delete every view, rebuild, and get the same state and retrieval."""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest

from ledger import Ledger
from query import compile_context
from views.marts import STATE_CURRENT, mart_path

QUESTION = "Where does Elena live now?"
EXPECTED_ASSETS = {"claims", "stg_memc__ledger_entries", "stg_memc__claims", "state_current", "entities", "interactions", "evidence_index", "memory_units", "entity_graph", "centrality"}


def _entry(ledger: Ledger, entry_id: str) -> dict:
    rows = [r for r in ledger.iter_entries() if r["entry_id"] == entry_id]
    assert len(rows) == 1, entry_id
    return rows[0]


def test_build_materializes_every_asset_and_passes_every_check(built_home):
    home, report = built_home
    assert EXPECTED_ASSETS <= set(report.materialized)
    assert report.checks, "no asset checks ran"
    assert all(report.checks.values()), {k: v for k, v in report.checks.items() if not v}
    assert any(k.startswith("ledger:") for k in report.checks), "ledger_integrity did not run"


def test_ask_answers_with_provenance_and_respects_visibility(built_home):
    home, _ = built_home
    ledger = Ledger(home.ledger)

    ctx = compile_context(QUESTION, "tomasz", home=home, scope="team")
    lives = [f for f in ctx.state if f.subject == "Elena" and f.predicate == "lives_in"]
    assert [f.object for f in lives] == ["Berlin"], "the public move to Berlin is what tomasz may know"
    src = _entry(ledger, lives[0].source_entry_id)
    assert src["source_ref"] == lives[0].source_ref == "ET2:1"
    assert lives[0].quote in src["content"]

    assert ctx.items, "no evidence retrieved"
    refs = [it.source_ref for it in ctx.items]
    assert "ET2:1" in refs[:5]
    for it in ctx.items:
        entry = _entry(ledger, it.entry_id)
        assert entry["source_ref"] == it.source_ref
        assert it.valid_at.startswith(entry["valid_at"].isoformat()[:10])
        assert it.routes and it.score > 0
        assert "public" in entry["visibility"], f"tomasz was shown a private entry {it.source_ref}"
    assert not any(r.startswith("EP") for r in refs)
    assert ctx.ledger_head == ledger.head()
    assert all(w == ctx.ledger_head for w in ctx.watermarks.values()), ctx.watermarks

    # Elena may see her private conversation, where she says she now lives in Potsdam.
    mine = compile_context(QUESTION, "elena", home=home, scope="team")
    assert [f.object for f in mine.state if f.subject == "Elena" and f.predicate == "lives_in"] == ["Potsdam"]


def test_dreaming_writes_derived_claims_with_lineage_once(built_home):
    home, _ = built_home
    ledger = Ledger(home.ledger)
    derived = [r for r in ledger.iter_entries() if r["kind"] == "derived_claim"]
    assert derived, "dreaming wrote nothing"
    ids = {r["entry_id"] for r in ledger.iter_entries()}
    for r in derived:
        assert r["producer"] == "dreaming" and r["producer_version"]
        assert 0 < r["watermark"] <= ledger.head()
        assert r["derived_from"] and set(r["derived_from"]) <= ids
        assert "centrality =" in r["content"] or "community =" in r["content"]
        # The interaction graph includes the private conversation: only its two participants
        # may see everything the ranking was computed from.
        assert r["visibility"] == ["elena", "priya"]
    assert len({r["source_ref"] for r in derived}) == len(derived)


def test_rebuild_from_the_ledger_alone_gives_the_same_views(built_home):
    from orchestration.runner import build

    home, _ = built_home
    ledger = Ledger(home.ledger)
    head = ledger.head()

    def snapshot():
        state = pq.read_table(mart_path(home, STATE_CURRENT)).to_pylist()
        state = sorted((r["claim_id"], r["object"], r["source_entry_id"]) for r in state)
        asks = {
            asker: [(it.entry_id, it.routes, it.score) for it in compile_context(QUESTION, asker, home=home, scope="team").items]
            for asker in ("tomasz", "elena")
        }
        centrality = sorted(r["content"] for r in ledger.iter_entries() if r["kind"] == "derived_claim")
        return state, asks, centrality

    before = snapshot()
    for path in home.view_dirs().values():
        shutil.rmtree(path)
    report = build(home)
    assert report.success, report.failed_steps
    assert Ledger(home.ledger).head() == head, "a rebuild at the same inputs must not append derived claims again"
    assert snapshot() == before


@pytest.mark.parametrize("asker", ["nobody", "tomasz"])
def test_unknown_or_outside_principal_sees_no_private_text(built_home, asker):
    home, _ = built_home
    ctx = compile_context("What is Elena thinking about her job at Helio Labs? Potsdam?", asker, home=home, scope="team")
    text = " ".join(it.text for it in ctx.items) + " ".join(f.object for f in ctx.state)
    assert "Potsdam" not in text and "leaving Helio" not in text


def test_file_names_and_addresses_are_not_entities(built_home):
    """The sample note (team-notes.md, no author) and the e-mail from priya@helio.example made
    entities of their own, graph nodes that dreaming ranked (issue 20). Now the address is
    Priya's alias (its local part is her name), the note only an entry that mentions her, and
    neither is an entity, a node or a subject of derived analytics. No build of its own."""
    import re

    from views.marts import ENTITIES, ENTITY_ANALYTICS, GRAPH_MENTIONS, TIMELINE, read_mart

    home, _ = built_home
    not_names = re.compile(r"(^[^\s@]+@[^\s@]+$)|(\.md$)")
    entities = read_mart(mart_path(home, ENTITIES)).to_pylist()
    assert not [e["name"] for e in entities if not_names.search(e["name"])], [e["name"] for e in entities]
    priya = [e for e in entities if e["name"] == "Priya"]
    assert len(priya) == 1 and "priya@helio.example" in priya[0]["aliases"] and "email-local-part" in priya[0]["alias_rules"]
    note = next(r["entry_id"] for r in Ledger(home.ledger).iter_entries() if r["source_ref"] == "team-notes.md")
    mentioned = {m["entity_id"] for m in read_mart(mart_path(home, GRAPH_MENTIONS)).to_pylist() if m["entry_id"] == note}
    assert priya[0]["entity_id"] in mentioned, "the note still mentions Priya in the graph"
    ranked = [r["subject"] for r in read_mart(mart_path(home, ENTITY_ANALYTICS)).to_pylist()]
    assert ranked and not [s for s in ranked if not_names.search(s)], ranked
    timelines = {r["entity_name"] for r in read_mart(mart_path(home, TIMELINE)).to_pylist()}
    assert "Priya" in timelines and not [n for n in timelines if not_names.search(n)], timelines


def test_dbt_models_and_dossiers_report_typed_column_tables(built_home):
    """Dagster's column tables showed '?' for every dbt column (issue 20): each model's
    materialization carries the types its relation has in the warehouse, with the yml's column
    descriptions. Reads the session's built home (no build of its own: well under a second)."""
    import json

    import dagster as dg

    from catalog.dbt_project import MANIFEST

    home, _ = built_home
    instance = dg.DagsterInstance.from_config(str(home.dagster))
    models = [n["name"] for n in json.loads(MANIFEST.read_text())["nodes"].values() if n["resource_type"] == "model"]
    assert len(models) > 20
    untyped = {}
    for name in models:
        records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey(name)), limit=1).records
        assert records, f"{name} was not materialized"
        schema = records[0].asset_materialization.metadata["dagster/column_schema"].value
        bad = [c.name for c in schema.columns if not c.type or c.type == "?"]
        if bad or not schema.columns:
            untyped[name] = bad
    assert not untyped, untyped
    ledger_rows = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey("stg_memc__ledger_entries")), limit=1).records
    columns = {c.name: c for c in ledger_rows[0].asset_materialization.metadata["dagster/column_schema"].value.columns}
    assert columns["seq"].type == "BIGINT" and columns["visibility"].type == "VARCHAR[]"
    assert columns["seq"].description  # the yml's text is kept beside the type
    dossiers = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey("entity_dossiers")), limit=1).records
    schema = dossiers[0].asset_materialization.metadata["dagster/column_schema"].value
    assert {"entity_id", "facts"} <= {c.name for c in schema.columns} and all(c.type for c in schema.columns)

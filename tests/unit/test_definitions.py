"""The Dagster definitions load, and their lineage is what the design says."""

from __future__ import annotations

import dagster as dg

from catalog import keys
from orchestration.definitions import build_definitions


def test_definitions_load_with_lineage_from_ledger_to_every_view():
    defs = build_definitions()
    graph = defs.resolve_asset_graph()
    all_keys = set(graph.get_all_asset_keys())
    for key in (keys.LEDGER, keys.CLAIMS, keys.STATE_CURRENT, keys.ENTITIES, keys.INTERACTIONS, keys.EVIDENCE_INDEX, keys.MEMORY_UNITS, keys.ENTITY_GRAPH, keys.CENTRALITY):
        assert key in all_keys, key
    # The ledger is a source asset; the dbt source for it maps onto the same key, so the dbt
    # staging model depends on it with no hand-written deps.
    assert graph.get(keys.LEDGER).is_observable
    assert keys.LEDGER in graph.get(dg.AssetKey("stg_memc__ledger_entries")).parent_keys
    assert keys.CLAIMS in graph.get(dg.AssetKey("stg_memc__claims_all_versions")).parent_keys
    assert keys.CLAIMS in graph.get(dg.AssetKey("stg_memc__claims_days")).parent_keys  # its depends_on hint
    assert dg.AssetKey("stg_memc__claims_all_versions") in graph.get(dg.AssetKey("stg_memc__claims")).parent_keys
    assert {keys.ENTITIES, keys.INTERACTIONS} <= graph.get(keys.ENTITY_GRAPH).parent_keys
    assert keys.ENTITY_GRAPH in graph.get(keys.CENTRALITY).parent_keys
    assert graph.get(keys.MEMORY_UNITS).parent_keys == {keys.EVIDENCE_INDEX}
    assert graph.get(keys.SKILLS).parent_keys == {keys.LEDGER}  # mined from the trajectories alone
    assert (keys.SKILLS, "skills_sound") in {(k.asset_key, k.name) for k in graph.asset_check_keys}
    # every materializable asset is downstream of the ledger
    assert not _materializable_outside_ledger_lineage(defs)


def _materializable_outside_ledger_lineage(defs: dg.Definitions) -> set[dg.AssetKey]:
    """Materializable assets that do not descend from the ledger. The selection API is Dagster
    1.13's (AssetGraph has no get_descendants any more: a hasattr guard on it made this check
    silently never run)."""
    graph = defs.resolve_asset_graph()
    materializable = set(graph.materializable_asset_keys)
    assert len(materializable) > 20, materializable  # the dbt models and the Python views, not an empty graph
    below = dg.AssetSelection.assets(keys.LEDGER).downstream().resolve(graph) - {keys.LEDGER}
    return materializable - below


def test_the_lineage_check_finds_an_asset_the_ledger_does_not_feed():
    """The check above can fail: an asset with no path from the ledger is named by it."""

    @dg.asset
    def orphan_view() -> None: ...

    defs = dg.Definitions.merge(build_definitions(), dg.Definitions(assets=[orphan_view]))
    assert _materializable_outside_ledger_lineage(defs) == {dg.AssetKey("orphan_view")}


def test_checks_sensor_schedule_and_jobs_are_registered():
    defs = build_definitions()
    graph = defs.resolve_asset_graph()
    check_keys = {(k.asset_key, k.name) for k in graph.asset_check_keys}
    assert (keys.LEDGER, "ledger_integrity") in check_keys
    assert (keys.CLAIMS, "claims_provenance") in check_keys
    # dbt tests surface as asset checks
    assert any(k.asset_key == keys.STATE_CURRENT for k in graph.asset_check_keys)
    assert defs.resolve_sensor_def("inbox_sensor")
    assert defs.resolve_schedule_def("nightly_dreaming")
    assert defs.resolve_job_def("ingest_inbox") and defs.resolve_job_def("observe_ledger")


def test_code_versions_name_the_extractor_and_the_embedding_model():
    from claims.extract import RULES
    from views.embedder import EMBEDDING_MODEL_VERSION

    graph = build_definitions().resolve_asset_graph()
    assert graph.get(keys.CLAIMS).code_version == RULES.key
    assert graph.get(keys.EVIDENCE_INDEX).code_version == EMBEDDING_MODEL_VERSION


def test_entity_analytics_is_its_own_dbt_asset_with_catalog_text():
    """Dreaming's derived analytics have their own mart (issue 20): a dbt asset beside
    state_current, fed by the same fold, whose description (the catalog text) says its grain."""
    graph = build_definitions().resolve_asset_graph()
    analytics = graph.get(dg.AssetKey("entity_analytics"))
    assert dg.AssetKey("int_claim_closings_paired") in analytics.parent_keys
    assert "centrality" in analytics.description and "Grain" in analytics.description
    assert "entity_analytics" in graph.get(keys.STATE_CURRENT).description  # where the analytics went

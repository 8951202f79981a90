"""The Dagster definitions load, and their lineage is what the design says."""

from __future__ import annotations

import os

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
    from claims.extract import CURRENT_RULES
    from views.embedder import EMBEDDING_MODEL_VERSION

    graph = build_definitions().resolve_asset_graph()
    assert graph.get(keys.CLAIMS).code_version == CURRENT_RULES.key
    assert graph.get(keys.EVIDENCE_INDEX).code_version == f"{EMBEDDING_MODEL_VERSION}+evidence-rows-3+parts-claim"


def test_entity_analytics_is_its_own_dbt_asset_with_catalog_text():
    """Dreaming's derived analytics have their own mart (issue 20): a dbt asset beside
    state_current, fed by the same fold, whose description (the catalog text) says its grain."""
    graph = build_definitions().resolve_asset_graph()
    analytics = graph.get(dg.AssetKey("entity_analytics"))
    assert dg.AssetKey("int_claim_closings_paired") in analytics.parent_keys
    assert "centrality" in analytics.description and "Grain" in analytics.description
    assert "entity_analytics" in graph.get(keys.STATE_CURRENT).description  # where the analytics went


# The Python views whose files are tables: each declares its column table (definition metadata,
# from the Arrow schema it writes with). entity_dossiers' columns carry the state marts', so its
# table comes with each materialization instead; the graph and centrality are no tables.
TABLE_ASSETS = (keys.LEDGER, keys.CLAIMS, keys.ENTITY_ALIASES, keys.EVIDENCE_INDEX, keys.MEMORY_UNITS, keys.SKILLS, keys.QUERY_PROFILE)


def test_every_asset_and_check_has_catalog_text():
    """The catalog (issue 20): the ledger's description was None (an observable source asset
    ignores its docstring) and every dbt test's check had an empty one."""
    defs = build_definitions()
    graph = defs.resolve_asset_graph()
    undescribed = [k.to_user_string() for k in graph.get_all_asset_keys() if not (graph.get(k).description or "").strip()]
    assert not undescribed, undescribed
    check_specs = [spec for a in defs.assets for spec in getattr(a, "check_specs", [])] + [
        spec for c in defs.asset_checks or [] for spec in c.check_specs
    ]
    assert {(s.asset_key, s.name) for s in check_specs} == {(k.asset_key, k.name) for k in graph.asset_check_keys}
    blank = [f"{s.asset_key.to_user_string()}:{s.name}" for s in check_specs if not (s.description or "").strip()]
    assert not blank, blank
    text = {f"{s.asset_key.to_user_string()}:{s.name}": s.description for s in check_specs}
    # made from the generic test and its arguments, or from the project's own test's yml
    assert text["state_current:columns_hold_state_current"] == (
        "`scope`, `subject_id`, `claim_id` and `source_entry_id` are never null; `claim_id` is unique."
    )
    assert "`reason` is one of 'superseded', 'corrected', 'retracted', 'outranked'" in text[
        "int_claim_closings_paired:columns_hold_int_claim_closings_paired"
    ]
    assert "int_claims_joined_to_entries" in text[
        "int_claim_closings_paired:relationships_int_claim_closings_paired_claim_id__claim_id__ref_int_claims_joined_to_entries_"
    ]
    assert "no two rows share (`claim_id`, `version`)" in text["state_history:columns_hold_state_history"]
    assert "names what it closed" in text["memory_actions:names_what_it_closes_memory_actions_closes"]


def test_dbt_test_description_prefers_the_tests_own_text_and_reads_a_singular_tests_comment():
    from catalog.dbt_build import dbt_test_description

    generic = {"name": "not_null_x_a", "description": "", "test_metadata": {"name": "not_null", "kwargs": {"column_name": "a"}}}
    assert dbt_test_description({}, generic) == "`a` is never null."
    assert dbt_test_description({}, {**generic, "description": "A is  always set."}) == "A is always set."
    assert dbt_test_description({}, {**generic, "config": {"where": "kind = 'message'"}}) == "`a` is never null, where kind = 'message'."
    singular = {"name": "assert_one_city", "description": "", "raw_code": "-- At most one current city\n-- per person.\nselect 1"}
    assert dbt_test_description({}, singular) == "At most one current city per person."
    assert dbt_test_description({}, {**singular, "raw_code": "/* No orphan\n closings */ select 1"}) == "No orphan closings"
    rules = {"name": "columns_hold_m", "description": "", "test_metadata": {"name": "columns_hold", "kwargs": {
        "not_null": ["a"], "unique": ["a", "b", ["c", "d"]], "accepted_values": {"e": ["x", "y"]}}}}
    assert dbt_test_description({}, rules) == (
        "`a` is never null; `a` and `b` are each unique; no two rows share (`c`, `d`); `e` is one of 'x', 'y'."
    )


def test_a_build_is_seeded_only_with_a_parse_of_the_same_project_files(tmp_path):
    """A build's dbt gets the home's last parse only if that parse was made from the same dbt
    project files (catalog/dbt_build.py seed_partial_parse): after an upgrade dbt parses anew."""
    from catalog.dbt_build import PARSED_PROJECT, PARTIAL_PARSE, seed_partial_parse

    root = tmp_path / "dbt"
    for name, project, parse in (("older", "p1", b"older p1"), ("newer", "p2", b"newer p2"), ("unmarked", None, b"no mark")):
        (root / name).mkdir(parents=True)
        (root / name / PARTIAL_PARSE).write_bytes(parse)
        if project:
            (root / name / PARSED_PROJECT).write_text(project)
    os.utime(root / "older" / PARTIAL_PARSE, (1, 1))  # the oldest of the three
    assert seed_partial_parse(root / "run1", "p1")
    assert (root / "run1" / PARTIAL_PARSE).read_bytes() == b"older p1"  # not the newer parse of other files
    assert (root / "run1" / PARSED_PROJECT).read_text() == "p1"
    assert not seed_partial_parse(root / "run2", "p3")  # files no parse was made from: dbt parses them whole
    assert not (root / "run2" / PARTIAL_PARSE).exists() and (root / "run2" / PARSED_PROJECT).read_text() == "p3"


def test_table_assets_have_typed_column_tables():
    """Dagster's column tables showed no types (issue 20): every table asset declares each of its
    columns with the type its file holds, from the schema it is written with."""
    from ledger.schema import LEDGER_SCHEMA

    graph = build_definitions().resolve_asset_graph()
    for key in TABLE_ASSETS:
        schema = graph.get(key).metadata.get("dagster/column_schema")
        assert isinstance(schema, dg.TableSchema), key
        assert schema.columns, key
        untyped = [c.name for c in schema.columns if not c.type or c.type == "?"]
        assert not untyped, (key, untyped)
    ledger = graph.get(keys.LEDGER).metadata["dagster/column_schema"]
    assert [c.name for c in ledger.columns] == LEDGER_SCHEMA.names  # derived, in order
    by_name = {c.name: c for c in ledger.columns}
    assert by_name["visibility"].type == "list<string>" and by_name["recorded_at"].type == "timestamp[us, tz=UTC]"
    assert by_name["seq"].constraints.nullable is False and by_name["session_id"].constraints.nullable is True
    assert "principal" in by_name["ingested_by"].description  # the schema module's comment


def test_catalog_text_says_what_runs_centrality_and_how_claims_are_partitioned():
    """centrality's text said it ran by the schedule nightly_dreaming, which is stopped on purpose
    (issue 20); it runs by its automation condition. claims' text names its dynamic partitions."""
    from catalog.partitions import LEDGER_DAYS

    defs = build_definitions()
    graph = defs.resolve_asset_graph()
    centrality = graph.get(keys.CENTRALITY)
    assert defs.resolve_schedule_def("nightly_dreaming").default_status == dg.DefaultScheduleStatus.STOPPED
    assert centrality.automation_condition is not None
    assert "by its automation condition on the" in centrality.description
    assert "Runs nightly (schedule nightly_dreaming)" not in centrality.description
    assert "stopped on" in centrality.description
    claims = graph.get(keys.CLAIMS)
    assert claims.partitions_def == LEDGER_DAYS and f"`{LEDGER_DAYS.name}`" in claims.description

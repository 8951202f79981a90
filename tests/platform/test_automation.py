"""Declarative automation, evaluated tick by tick against an instance (no daemon): the views
refresh once, in one run, after each extraction pass; the ledger-head sensor turns any writer's
append into an observation; dreaming and compaction are scheduled."""

from __future__ import annotations

import dagster as dg
import pytest

from catalog.keys import ENTITY_ALIASES
from orchestration.definitions import build_definitions
from catalog.keys import CENTRALITY, CLAIMS, EVIDENCE_INDEX, LEDGER, STATE_CURRENT
from catalog.partitions import LEDGER_DAYS


@pytest.fixture(scope="module")
def defs():
    return build_definitions()


def _requested(defs, result) -> dict[str, int]:
    keys = defs.resolve_asset_graph().materializable_asset_keys
    return {k.to_user_string(): result.get_num_requested(k) for k in keys if result.get_num_requested(k)}


def test_views_refresh_once_after_the_extraction_pass(defs):
    instance = dg.DagsterInstance.ephemeral()
    graph = defs.resolve_asset_graph()
    views = {k.to_user_string() for k in graph.materializable_asset_keys} - {"entity_aliases", "claims", "centrality"}

    def tick(cursor):
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
        return result, result.cursor

    r, cursor = tick(None)
    assert _requested(defs, r) == {}
    # the ledger grew (what the inbox job and the ledger-head sensor record)
    instance.report_runless_asset_event(dg.AssetObservation(LEDGER, tags={"dagster/data_version": "15"}))
    r, cursor = tick(cursor)
    assert _requested(defs, r) == {"entity_aliases": 1}, "only the aliases on the tick the ledger grew"
    instance.report_runless_asset_event(dg.AssetMaterialization(ENTITY_ALIASES))
    r, cursor = tick(cursor)
    today = LEDGER_DAYS.get_last_partition_key()
    assert _requested(defs, r) == {"claims": 1}, "then the latest ledger day's claims, and no view yet"
    assert r.get_requested_partitions(CLAIMS) == {today}
    instance.report_runless_asset_event(dg.AssetMaterialization(CLAIMS, partition=today))
    r, cursor = tick(cursor)
    requested = _requested(defs, r)
    # every view below the claims at once (one run: all unpartitioned), dreaming left to its cron
    assert set(requested) == views and "centrality" not in requested, sorted(set(requested) ^ views)
    for key in (STATE_CURRENT, EVIDENCE_INDEX, dg.AssetKey("entity_graph")):
        assert key.to_user_string() in requested
    r, cursor = tick(cursor)
    assert _requested(defs, r) == {}, "nothing more until the ledger grows again"


def test_no_view_builds_over_a_view_never_built(defs):
    """On a fresh home the claims run may not have started on the tick after entity_aliases
    finished (CI saw it): the views below the aliases must not build then, over staging views
    that do not exist yet."""
    instance = dg.DagsterInstance.ephemeral()
    cursor = None
    instance.report_runless_asset_event(dg.AssetObservation(LEDGER, tags={"dagster/data_version": "15"}))
    cursor = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor).cursor
    instance.report_runless_asset_event(dg.AssetMaterialization(ENTITY_ALIASES))
    r = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    assert _requested(defs, r) == {"claims": 1}
    # the next tick, the claims run not yet in progress (no run exists in this instance)
    r = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=r.cursor)
    requested = set(_requested(defs, r))
    graph = defs.resolve_asset_graph()
    for key in requested:
        deps = graph.get(dg.AssetKey.from_user_string(key)).parent_keys - {LEDGER, CLAIMS, ENTITY_ALIASES}
        assert not deps, f"{key} requested over {sorted(d.to_user_string() for d in deps)}, never built"
    assert not requested & {"entities", "state_current", "evidence_index", "entity_graph"}, requested


def test_plain_eager_would_never_fire_below_the_partitioned_claims(defs):
    """Pitfall P6, the reason for the views' own condition: plain eager() waits for ~900
    missing ledger days."""
    graph = defs.resolve_asset_graph()
    plain = dg.Definitions(
        assets=[
            dg.AssetSpec(LEDGER),
            dg.AssetSpec(CLAIMS, deps=[LEDGER], partitions_def=LEDGER_DAYS, automation_condition=dg.AutomationCondition.eager()),
            dg.AssetSpec(STATE_CURRENT, deps=[CLAIMS], automation_condition=dg.AutomationCondition.eager()),
        ]
    )
    instance = dg.DagsterInstance.ephemeral()
    cursor = dg.evaluate_automation_conditions(defs=plain, instance=instance).cursor
    instance.report_runless_asset_event(dg.AssetMaterialization(CLAIMS, partition=LEDGER_DAYS.get_last_partition_key()))
    r = dg.evaluate_automation_conditions(defs=plain, instance=instance, cursor=cursor)
    assert r.get_num_requested(STATE_CURRENT) == 0
    assert graph.get(STATE_CURRENT).automation_condition.get_label() == "eager, after the extraction pass"


def test_ledger_head_sensor_observes_every_append(tmp_path, defs):
    from ingestion import ingest_paths
    from ledger import Ledger
    from memc.home import MemcHome
    from catalog.resources import MemcResource

    from conftest import SAMPLES

    home = MemcHome.resolve(tmp_path / "home").ensure()
    sensor = defs.resolve_sensor_def("ledger_head_sensor")
    resources = {"memc": MemcResource(home_dir=str(home.root))}
    first = sensor(dg.build_sensor_context(resources=resources))
    assert first.cursor == "0"
    assert isinstance(sensor(dg.build_sensor_context(cursor="0", resources=resources)), dg.SkipReason)
    ingest_paths(Ledger(home.ledger), [SAMPLES / "team" / "orders.jsonl"], scope="team")  # `memc ingest`, not the inbox
    head = Ledger(home.ledger).head()
    grown = sensor(dg.build_sensor_context(cursor="0", resources=resources))
    assert isinstance(grown, dg.SensorResult) and grown.cursor == str(head)
    (obs,) = grown.asset_events
    assert obs.asset_key == LEDGER and obs.tags["dagster/data_version"] == str(head)


def test_sensors_and_schedules_run_by_default(defs):
    running = dg.DefaultSensorStatus.RUNNING
    for name in ("inbox_sensor", "ledger_head_sensor", "memc_automation"):
        assert defs.resolve_sensor_def(name).default_status == running, name
    automation = defs.resolve_sensor_def("memc_automation")
    assert isinstance(automation, dg.AutomationConditionSensorDefinition)
    assert defs.resolve_schedule_def("view_compaction").default_status == dg.DefaultScheduleStatus.RUNNING
    assert defs.resolve_job_def("compact_views")
    assert defs.resolve_schedule_def("ledger_compaction").default_status == dg.DefaultScheduleStatus.RUNNING
    assert defs.resolve_job_def("compact_ledger")
    dreaming = defs.resolve_asset_graph().get(CENTRALITY).automation_condition
    assert dreaming.get_label() == "nightly (0 3 * * *)"


def test_view_compaction_drops_old_lance_versions(tmp_path):
    from datetime import timedelta

    import pyarrow as pa

    from memc.home import MemcHome
    from orchestration.maintenance import compact_views
    from views.vectors import DEFAULT_TABLE, LanceVectorStore

    home = MemcHome.resolve(tmp_path / "home").ensure()
    assert compact_views(home) == {"compacted": False, "reason": "no evidence table yet"}
    store = LanceVectorStore(str(home.vectors))
    db = store.db
    rows = [{"id": f"r{i}", "text": f"row {i}"} for i in range(3)]
    table = db.create_table(DEFAULT_TABLE, data=pa.Table.from_pylist(rows[:1]))
    for r in rows[1:]:
        table.add(pa.Table.from_pylist([r]))  # one version (and one fragment) per write
    assert len(table.list_versions()) >= 3
    stats = compact_views(home, keep=timedelta(0))
    assert stats["compacted"] and stats["after"]["rows"] == stats["before"]["rows"] == 3
    assert stats["after"]["versions"] < stats["before"]["versions"]


def test_ledger_compaction_job_merges_small_batches(tmp_path):
    """The maintenance job, run by Dagster in process on a home of 40 one-entry appends: one file
    after, every entry read as before, the observation on the ledger asset."""
    from datetime import datetime, timezone

    from catalog.resources import MemcResource
    from ledger import Ledger, NewEntry
    from memc.home import MemcHome
    from orchestration.schedules import compact_ledger

    home = MemcHome.resolve(tmp_path / "home").ensure()
    ledger = Ledger(home.ledger)
    for i in range(40):
        ledger.append([NewEntry(kind="event", content=f"e{i}", valid_at=datetime(2024, 1, 1, tzinfo=timezone.utc))])
    before = ledger.read()
    result = compact_ledger.execute_in_process(resources={"memc": MemcResource(home_dir=str(home.root))})
    assert result.success
    (obs,) = [e.event_specific_data.asset_observation for e in result.all_events if e.event_type_value == "ASSET_OBSERVATION"]
    assert obs.asset_key == LEDGER
    assert (obs.metadata["compaction/files_before"].value, obs.metadata["compaction/files_after"].value) == (40, 1)
    fresh = Ledger(home.ledger)
    assert fresh.verify().ok and fresh.read().equals(before)
    assert len(list(home.ledger.glob("*.parquet"))) == 1

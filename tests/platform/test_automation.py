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

    # two ledger days, built (what the ledger-head sensor and a build leave)
    instance.add_dynamic_partitions(LEDGER_DAYS.name, ["2024-06-01", "2024-06-02"])
    for day in ("2024-06-01", "2024-06-02"):
        instance.report_runless_asset_event(dg.AssetMaterialization(CLAIMS, partition=day))
    r, cursor = tick(None)
    assert _requested(defs, r) == {}
    # the ledger grew (what the inbox job and the ledger-head sensor record)
    instance.report_runless_asset_event(dg.AssetObservation(LEDGER, tags={"dagster/data_version": "15"}))
    r, cursor = tick(cursor)
    assert _requested(defs, r) == {"entity_aliases": 1}, "only the aliases on the tick the ledger grew"
    instance.report_runless_asset_event(dg.AssetMaterialization(ENTITY_ALIASES))
    r, cursor = tick(cursor)
    latest = "2024-06-02"
    assert _requested(defs, r) == {"claims": 1}, "then the latest ledger day's claims, and no view yet"
    assert r.get_requested_partitions(CLAIMS) == {latest}, "not every day: only the latest can have grown"
    instance.report_runless_asset_event(dg.AssetMaterialization(CLAIMS, partition=latest))
    r, cursor = tick(cursor)
    requested = _requested(defs, r)
    # every view below the claims at once (one run: all unpartitioned), dreaming left to its cron
    assert set(requested) == views and "centrality" not in requested, sorted(set(requested) ^ views)
    for key in (STATE_CURRENT, EVIDENCE_INDEX, dg.AssetKey("entity_graph")):
        assert key.to_user_string() in requested
    r, cursor = tick(cursor)
    assert _requested(defs, r) == {}, "nothing more until the ledger grows again"
    for key in views:
        instance.report_runless_asset_event(dg.AssetMaterialization(dg.AssetKey.from_user_string(key)))
    r, cursor = tick(cursor)

    # A new ledger day: its partition is added with the ledger's growth (the ledger-head sensor
    # does both), and its claims run once the aliases are done; the older days are not redone.
    instance.add_dynamic_partitions(LEDGER_DAYS.name, ["2024-06-03"])
    instance.report_runless_asset_event(dg.AssetObservation(LEDGER, tags={"dagster/data_version": "20"}))
    r, cursor = tick(cursor)
    assert _requested(defs, r) == {"entity_aliases": 1}
    instance.report_runless_asset_event(dg.AssetMaterialization(ENTITY_ALIASES))
    r, cursor = tick(cursor)
    assert r.get_requested_partitions(CLAIMS) == {"2024-06-03"}


def test_unbuilt_ledger_days_are_extracted_on_the_first_tick(defs):
    """A daemon started on a home whose days were never extracted: every missing day, not only
    the latest (a day that is "Missing" in the UI is a real day with entries and no claims)."""
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(LEDGER_DAYS.name, ["2024-06-01", "2024-06-02", "2024-06-04"])
    instance.report_runless_asset_event(dg.AssetObservation(LEDGER, tags={"dagster/data_version": "5"}))
    instance.report_runless_asset_event(dg.AssetMaterialization(ENTITY_ALIASES))
    r = dg.evaluate_automation_conditions(defs=defs, instance=instance)
    assert r.get_requested_partitions(CLAIMS) == {"2024-06-01", "2024-06-02", "2024-06-04"}


def test_no_view_builds_over_a_view_never_built(defs):
    """On a fresh home the claims run may not have started on the tick after entity_aliases
    finished (CI saw it): the views below the aliases must not build then, over staging views
    that do not exist yet."""
    instance = dg.DagsterInstance.ephemeral()
    cursor = None
    # the ledger-head sensor adds the first ledger day's partition with its observation
    instance.add_dynamic_partitions(LEDGER_DAYS.name, ["2024-06-01"])
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
    """Pitfall P6, the reason for the views' own condition: plain eager() waits while any
    ledger day is missing."""
    graph = defs.resolve_asset_graph()
    plain = dg.Definitions(
        assets=[
            dg.AssetSpec(LEDGER),
            dg.AssetSpec(CLAIMS, deps=[LEDGER], partitions_def=LEDGER_DAYS, automation_condition=dg.AutomationCondition.eager()),
            dg.AssetSpec(STATE_CURRENT, deps=[CLAIMS], automation_condition=dg.AutomationCondition.eager()),
        ]
    )
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(LEDGER_DAYS.name, ["2024-06-01", "2024-06-02"])
    cursor = dg.evaluate_automation_conditions(defs=plain, instance=instance).cursor
    instance.report_runless_asset_event(dg.AssetMaterialization(CLAIMS, partition="2024-06-02"))
    r = dg.evaluate_automation_conditions(defs=plain, instance=instance, cursor=cursor)
    assert r.get_num_requested(STATE_CURRENT) == 0
    assert graph.get(STATE_CURRENT).automation_condition.get_label() == "eager, after the extraction pass"


def test_ledger_head_sensor_observes_every_append_and_adds_its_days(tmp_path, defs):
    from datetime import datetime, timezone

    from ingestion import ingest_paths
    from ledger import Ledger, NewEntry
    from memc.home import MemcHome
    from catalog.resources import MemcResource

    from conftest import SAMPLES

    home = MemcHome.resolve(tmp_path / "home").ensure()
    sensor = defs.resolve_sensor_def("ledger_head_sensor")
    instance = dg.DagsterInstance.ephemeral()
    resources = {"memc": MemcResource(home_dir=str(home.root))}

    def evaluate(cursor):
        return sensor(dg.build_sensor_context(cursor=cursor, resources=resources, instance=instance))

    def apply(result):  # what the daemon does with a sensor's partition requests
        for request in result.dynamic_partitions_requests or []:
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))

    first = evaluate(None)
    assert first.cursor == "0" and not first.dynamic_partitions_requests, "an empty ledger has no day"
    assert isinstance(evaluate("0"), dg.SkipReason)
    ledger = Ledger(home.ledger)
    for day in ("2024-06-01", "2024-06-03"):
        at = datetime.fromisoformat(f"{day}T12:00:00+00:00")
        ledger.append([NewEntry(kind="document", content=f"on {day}", valid_at=at)], recorded_at=at)
    head = ledger.head()
    grown = evaluate("0")
    assert isinstance(grown, dg.SensorResult) and grown.cursor == str(head)
    (obs,) = grown.asset_events
    assert obs.asset_key == LEDGER and obs.tags["dagster/data_version"] == str(head)
    (request,) = grown.dynamic_partitions_requests
    assert request.partitions_def_name == LEDGER_DAYS.name and list(request.partition_keys) == ["2024-06-01", "2024-06-03"]
    apply(grown)
    assert instance.get_dynamic_partitions(LEDGER_DAYS.name) == ["2024-06-01", "2024-06-03"], "no day without entries"

    # `memc ingest` (not the inbox) today: the head moves, and today becomes a partition.
    ingest_paths(Ledger(home.ledger), [SAMPLES / "team" / "orders.jsonl"], scope="team")
    today = datetime.now(timezone.utc).date().isoformat()
    again = evaluate(grown.cursor)
    assert again.cursor == str(Ledger(home.ledger).head())
    assert [list(r.partition_keys) for r in again.dynamic_partitions_requests] == [[today]]
    apply(again)
    # the same head again: nothing to observe, no partition to add
    assert isinstance(evaluate(again.cursor), dg.SkipReason)

    # A daemon whose cursor holds the head from before the days were partitions: added once.
    fresh = dg.DagsterInstance.ephemeral()
    upgraded = sensor(dg.build_sensor_context(cursor=again.cursor, resources=resources, instance=fresh))
    assert not upgraded.asset_events, "the head did not move: no observation"
    assert [list(r.partition_keys) for r in upgraded.dynamic_partitions_requests] == [["2024-06-01", "2024-06-03", today]]


def test_a_view_holding_the_ledger_head_stays_fresh_and_a_late_one_fails(tmp_path, defs):
    """Freshness of an event-driven view is its lag behind the ledger: built from the head a day
    ago (far past the 5-minute target that used to fail it), with no ledger change, it passes; a
    view lacking entries for longer than its target fails with an error, a view lacking only
    younger entries warns. The view_lag_sensor records each verdict when it changes."""
    from datetime import datetime, timedelta, timezone

    from catalog.resources import MemcResource
    from checks.lag import view_lag
    from checks.quality import lag_evaluation
    from claims.extract import active_extractor_key
    from claims.store import extractor_dir
    from ledger import Ledger, NewEntry
    from memc.home import MemcHome
    from memc.watermark import write_watermark

    home = MemcHome.resolve(tmp_path / "home").ensure()
    ledger = Ledger(home.ledger)
    built = datetime.now(timezone.utc) - timedelta(days=1)
    ledger.append([NewEntry(kind="document", content="Elena lives in Berlin.", valid_at=built)], recorded_at=built)
    head = ledger.head()
    write_watermark(extractor_dir(home.claims, active_extractor_key()), "claims", head)  # claims built from the head

    a_day_later = built + timedelta(days=1)
    passed, _, meta = lag_evaluation(view_lag(home, "claims", now=a_day_later), 5)
    assert passed and meta["state"] == "current", "a view holding the head is fresh however old its build"
    passed, severity, meta = lag_evaluation(view_lag(home, "evidence_index", now=a_day_later), 15)
    assert not passed and severity == dg.AssetCheckSeverity.ERROR and meta["state"] == "late", meta

    sensor = defs.resolve_sensor_def("view_lag_sensor")
    instance = dg.DagsterInstance.ephemeral()
    resources = {"memc": MemcResource(home_dir=str(home.root))}

    def evaluate(cursor):
        result = sensor(dg.build_sensor_context(cursor=cursor, resources=resources, instance=instance))
        if isinstance(result, dg.SkipReason):
            return result, cursor, {}
        return result, result.cursor, {e.asset_key.to_user_string(): e for e in result.asset_events}

    _, cursor, verdicts = evaluate(None)
    assert verdicts["claims"].check_name == "claims_watermark_lag" and verdicts["claims"].passed
    for late in ("state_current", "evidence_index", "entity_graph"):  # never built, lacking a day-old entry
        assert not verdicts[late].passed and verdicts[late].severity == dg.AssetCheckSeverity.ERROR, late
    skipped, cursor, _ = evaluate(cursor)
    assert isinstance(skipped, dg.SkipReason), "nothing changed: nothing recorded again"

    # A new entry: the claims lack it, younger than their target: a warning, not a failure.
    ledger.append([NewEntry(kind="document", content="Elena moved to Potsdam.", valid_at=datetime.now(timezone.utc))])
    # ... judged once no run is under way (a run's own checks judge the views it builds)
    for status in (dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTED):  # planned, under way
        instance.add_run(dg.DagsterRun(job_name="__ASSET_JOB", run_id="a-build", status=status))
        busy, cursor, _ = evaluate(cursor)
        assert isinstance(busy, dg.SkipReason) and "a-build" in busy.skip_message
        instance.delete_run("a-build")
    _, cursor, verdicts = evaluate(cursor)
    claims = verdicts["claims"]
    assert not claims.passed and claims.severity == dg.AssetCheckSeverity.WARN
    assert claims.metadata["entries_behind"].value == 1 and claims.metadata["state"].value == "catching up"
    # ... and an error once the entry it lacks is older than the target
    passed, severity, meta = lag_evaluation(view_lag(home, "claims", now=datetime.now(timezone.utc) + timedelta(minutes=6)), 5)
    assert not passed and severity == dg.AssetCheckSeverity.ERROR and meta["state"] == "late"


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
    # The head as its data version: Dagster reads the ledger's from its latest observation, and
    # one without read as "INITIAL", every view then stale after a compaction that changed nothing.
    assert obs.tags["dagster/data_version"] == str(ledger.head()) == "40"
    assert (obs.metadata["compaction/files_before"].value, obs.metadata["compaction/files_after"].value) == (40, 1)
    fresh = Ledger(home.ledger)
    assert fresh.verify().ok and fresh.read().equals(before)
    assert len(list(home.ledger.glob("*.parquet"))) == 1

"""Run the asset graph in-process against one memory home (what `memc build` and the tests use).

The Dagster instance lives in ``<home>/dagster`` so that `memc ui` shows every build's runs,
lineage and check results. In-process execution: one partition plus everything downstream took
33-43 s in-process against 61-95 s with the multiprocess executor on 2 cores (docs/stack-notes.md).

Partitioned assets (claims, by ledger day) run over a range of days in the same single run as
everything below them, through the partition-range tags: that works in-process because every
partitioned asset has ``BackfillPolicy.single_run()`` and returns ``MaterializeResult``. The
ledger days are dynamic partitions: every entry point registers the ledger's days first
(``register_ledger_days``), so a range from the first to the last day holds exactly them.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import dagster as dg

from assets.ledger import report_observation
from assets.state import state_models
from catalog.dbt_child import start_zygote
from catalog.dbt_project import ensure_manifest, project_fingerprint
from catalog.keys import CENTRALITY, CLAIMS, ENTITY_ALIASES, ENTITY_DOSSIERS, LEDGER, QUERY_PROFILE
from catalog.partitions import range_tags, register_ledger_days
from claims.extract import active_extractor
from claims.ledger_days import contiguous, day_range, ledger_days
from claims.run import days_to_extract, days_without_claims
from claims.store import days as stored_days
from forgetting import resume
from ledger import open_ledger
from memc.home import MemcHome
from memc.locks import HomeBusy, exclusive
from memc.processes import pid_alive
from memc.watermark import read_watermark
from orchestration.definitions import build_definitions
from orchestration.execution import instance_concurrency_yaml
from orchestration.notices import silence as silence_dagster_notices
from orchestration.settings import Execution, load_settings
from query.compile import view_marks
from views.profile import query_log_size

DAGSTER_YAML_HEADER = "# memc's local Dagster instance (runs, event logs, schedules) for this memory home."


def dagster_yaml(execution: Execution) -> str:
    """The instance's configuration memc writes for a home: telemetry off, the event log's
    storage, the run queue and the pools from the ``[execution]`` settings
    (orchestration/execution.py)."""
    return f"""\
{DAGSTER_YAML_HEADER}
telemetry:
  enabled: false
# The UI's "Join the Dagster community" sign-up form on first open: an e-mail form for a local tool.
nux:
  enabled: false
# Dagster's SQLite event log, its engines kept open (orchestration/eventlog.py): same files, same
# place ($DAGSTER_HOME/history/runs), an event stored without creating and dropping an engine.
event_log_storage:
  module: orchestration.eventlog
  class: PooledSqliteEventLogStorage
{instance_concurrency_yaml(execution)}"""


def prepare_environment(home: MemcHome) -> None:
    """Point Dagster, dbt and Hugging Face at this home and keep all of them offline."""
    silence_dagster_notices()  # for this process's own runs too (pytest resets filters per test)
    home.ensure()
    home.dagster.mkdir(parents=True, exist_ok=True)
    cfg = home.dagster / "dagster.yaml"
    wanted = dagster_yaml(load_settings(home.root).execution)
    # Rewritten while memc wrote it (an older memc's version, or changed [execution] settings); a
    # user's own is kept.
    if not cfg.exists() or (cfg.read_text().startswith(DAGSTER_YAML_HEADER) and cfg.read_text() != wanted):
        cfg.write_text(wanted)
    os.environ["DAGSTER_HOME"] = str(home.dagster)
    os.environ["MEMC_HOME"] = str(home.root)
    os.environ["DAGSTER_DISABLE_TELEMETRY"] = "1"
    os.environ["DO_NOT_TRACK"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"


@dataclass
class BuildReport:
    runs: list[str] = field(default_factory=list)
    success: bool = True
    materialized: list[str] = field(default_factory=list)
    failed_steps: list[str] = field(default_factory=list)
    checks: dict[str, bool] = field(default_factory=dict)
    ledger_head: int = 0
    erasures_finished: list[str] = field(default_factory=list)  # interrupted erasures completed first
    up_to_date: bool = False  # nothing to build: no run was launched (``pending``)


# Progress is shown by the caller; Dagster's own console log would drown it.
_QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}

ProgressCallback = Callable[[str, str | None], None]


# Where the instances a locked call opened are kept until it returns (``one_build_at_a_time``).
_OPENED: contextvars.ContextVar[contextlib.ExitStack | None] = contextvars.ContextVar("memc_opened_instances", default=None)


def one_build_at_a_time(what: str):
    """Runs of the asset graph on one home take turns: DuckDB (dbt) and Kùzu allow one writer,
    and two builds at once failed deep inside them ("Could not set lock", six tracebacks).
    A second build is refused at once with one line naming the running one (HomeBusy); the erasure
    cascade's rebuild takes the lock again in its own process (re-entrant). Holding the lock, no
    in-process run of this home is alive, so runs a killed build left STARTED are marked failed.

    The Dagster instance the call opens (``_definitions``, when it is given none) is disposed of
    when it returns: its event log keeps database files open (orchestration/eventlog.py), which a
    long-lived process (a server's keeper, a test session) would otherwise hold until the garbage
    collector found the instance."""

    def wrap(fn):
        @functools.wraps(fn)
        def locked(home: MemcHome, *args, **kwargs):
            with exclusive(home.build_lock, what, wait=False), contextlib.ExitStack() as opened:
                token = _OPENED.set(opened)
                try:
                    return fn(home, *args, **kwargs)
                finally:
                    _OPENED.reset(token)

        return locked

    return wrap


# The run tag naming the process that runs an in-process build: a run still STARTED whose process
# is gone was killed with it (kill -9, OOM), and nothing else will ever end it.
PID_TAG = "memc/pid"


def fail_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark failed the in-process runs of this home that are still STARTED (or STARTING) while
    the process that ran them is gone; returns their ids. Runs the daemon launched carry no pid
    tag and are its own to monitor."""
    alive = (dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.NOT_STARTED)
    dead = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=list(alive))):
        pid = run.tags.get(PID_TAG)
        if pid and pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            instance.report_run_failed(run, message=f"the process that ran it (pid {pid}) is gone: the build was killed")
            # Its pool slot (dbt's, the graph's) would otherwise wait for the daemon's monitoring.
            if instance.event_log_storage.supports_global_concurrency_limits:
                instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
            dead.append(run.run_id)
    return dead


def _definitions(home: MemcHome, instance: dg.DagsterInstance | None) -> tuple[dg.Definitions, dg.DagsterInstance]:
    """The definitions bound to this home and its Dagster instance; the dbt manifest is parsed
    first if a model changed (the definitions cannot load without it)."""

    ensure_manifest()
    if instance is None:
        instance = dg.DagsterInstance.get()
        if (opened := _OPENED.get()) is not None:
            opened.enter_context(instance)  # disposed of when the locked call returns
    fail_dead_runs(instance)  # every entry point calls this once, holding the build lock
    return build_definitions(str(home.root)), instance


@one_build_at_a_time("memc build")
def build(
    home: MemcHome,
    *,
    selection: Sequence[dg.AssetKey] | None = None,
    on_event: ProgressCallback | None = None,
    instance: dg.DagsterInstance | None = None,
    finish_erasures: bool = True,
    force: bool = False,
) -> BuildReport:
    """Observe the ledger, then materialize every view (or ``selection``) in one in-process run.

    A build of every view when nothing is pending (``pending``: every view at the ledger head,
    built by the current code) launches no run and returns ``up_to_date``, as `make` or
    Dagster's "materialize stale and missing" would; when only the query log grew (asks since),
    it compiles the profile and the dossiers alone; ``force`` builds everything anyway.

    An erasure interrupted before its purge and view drop were done is finished first (purged,
    its views dropped; this build then compiles them again), so that no build compiles erased
    text into a view. ``finish_erasures=False`` is for the erasure cascade itself, which holds
    the erasure lock while it builds.

    Dreaming appends derived claims to the ledger; when it did, the views below the ledger are
    compiled once more so that they reflect them (dreaming itself is then a no-op). A build of new
    entries onto a state never built runs dbt's data tests (the state models' asset checks) in its
    last run only, on the state it leaves."""
    report = BuildReport()
    if finish_erasures:
        report.erasures_finished = resume(home).resumed  # this build compiles the views again
    prepare_environment(home)
    defs, instance = _definitions(home, instance)
    head_before = _head(home)
    if selection is None and not force and not report.erasures_finished:
        due = pending(home, defs, instance, head_before)
        if not due:
            report.up_to_date, report.ledger_head = True, head_before
            return report
        if due == [PROFILE_BEHIND]:  # asks since the last build, nothing new in the ledger
            selection = [QUERY_PROFILE, ENTITY_DOSSIERS]
    if selection is None or any(key in state_models().keys for key in selection):
        start_zygote()  # dbt's imports, on the other core while the steps before the state models run

    job = defs.resolve_implicit_global_asset_job_def()
    # A state folded from nothing (a first build): dreaming then appends derived claims (every
    # entity is new to the graph) and the second run below replaces the first run's state, so
    # dbt's data tests (75 of its 102 nodes) run once, on the state the build leaves, or on their
    # own when dreaming added nothing. New entries onto a built state run them in the first run:
    # dreaming appends only what changed (views/dreaming.py: one new message on the sample corpus
    # changes no rank and no community): the one-message build of benchmarks/bench_build.py is one
    # run, 11.5-13 s -> 8.8-9.4 s with dreaming's change. When dreaming does append, the second run
    # tests again. With nothing new, one run as before.
    graph = defs.resolve_asset_graph()
    dbt_tests = set(state_models().check_keys)
    tests_last = selection is None and read_watermark(home.warehouse) is None
    everything = list(graph.materializable_asset_keys)
    if selection is None:
        keys, tags = _extracting_only_what_is_due(defs, home, instance, everything)
        checks = None
        if tests_last:
            left_out = set(everything) - set(keys)  # the claims, when no day is due
            checks = {c for c in graph.asset_check_keys if c.asset_key not in left_out} - dbt_tests
        _observed_run(home, job, graph, instance, keys, on_event, report, tags, checks)
    else:
        _observed_run(home, job, graph, instance, selection, on_event, report, _all_days_tags(defs, home, instance, selection))
    if report.success and selection is None and _head(home) > head_before:
        again, tags = _extracting_only_what_is_due(defs, home, instance, [k for k in everything if k not in (CENTRALITY,)])
        _observed_run(home, job, graph, instance, again, on_event, report, tags)
    elif report.success and tests_last and dbt_tests:
        _run(job.get_subset(asset_check_selection=dbt_tests), instance, None, on_event, report)
    report.ledger_head = _head(home)
    return report


def rebuild_views(home: MemcHome) -> list[str]:
    """The rebuild an erasure runs once its purge is done (``forgetting.forget(rebuild=...)``):
    every view, through Dagster. It does not finish interrupted erasures first, because the
    erasure calling it holds the erasure lock and has just done that itself. Returns the failed
    steps (none: every view was compiled again)."""
    result = build(home, finish_erasures=False, force=True)
    return [] if result.success else list(result.failed_steps) or ["(build failed)"]


def pending(home: MemcHome, defs: dg.Definitions, instance: dg.DagsterInstance, head: int | None = None) -> list[str]:
    """Why a build of every view has work to do, one line each; empty when it has none:

    - a view's watermark is not the ledger head (new entries, a view never built, dropped by an
      erasure, or a build killed half-way), or a ledger day has no claims;
    - a view was last materialized by another code version than the definitions' (an embedding
      model or graph builder upgrade, a dbt model's SQL: ``out_of_date_views``), or never; the
      claims are the active extractor's by their folder, whose watermark is checked above;
    - the state was built by other dbt project files (a macro: dbt models' code versions are
      their own SQL only);
    - the query log grew since the profile was compiled from it.

    Costs a read of seven small JSON files and one event-log query per asset (0.13-0.2 s on the
    sample home), against 16-25 s for a build of every view that finds nothing new."""
    head = _head(home) if head is None else head
    reasons = []
    marks = view_marks(home)  # every view that keeps a watermark
    for view, mark in marks.items():
        if mark is None:
            reasons.append(f"{view}: never built")
        elif int(mark["watermark"]) != head:
            reasons.append(f"{view}: built at ledger seq {mark['watermark']}, the ledger is at {head}")
    missing = days_without_claims(home, open_ledger(home.ledger, write=False), active_extractor().key)
    if missing:  # a day's folder removed by hand under a current watermark
        reasons.append(f"claims: {len(missing)} ledger day(s) without claims, the first {missing[0]}")
    if marks["state"] is not None and marks["state"].get("project") != project_fingerprint():
        reasons.append("state: the dbt project changed since it was built")
    for key in out_of_date_views(defs, instance):
        reasons.append(f"{key.to_user_string()}: never materialized, or by another code version")
    rec = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=QUERY_PROFILE), limit=1).records
    meta = rec[0].asset_materialization.metadata if rec and rec[0].asset_materialization else {}
    seen = tuple(getattr(meta.get(k), "value", None) for k in ("log_files", "log_bytes"))
    if seen != query_log_size(home):
        reasons.append(PROFILE_BEHIND)
    return reasons


# The one reason a build then compiles only the profile and the dossiers built from it.
PROFILE_BEHIND = "query_profile: the query log changed since it was compiled"


def _partitioned(defs: dg.Definitions, selection: Sequence[dg.AssetKey] | None) -> bool:
    graph = defs.resolve_asset_graph()
    keys = selection if selection is not None else graph.materializable_asset_keys
    return any(graph.get(k).partitions_def is not None for k in keys)


def _extracting_only_what_is_due(defs: dg.Definitions, home: MemcHome, instance: dg.DagsterInstance, keys: list[dg.AssetKey]) -> tuple[list[dg.AssetKey], dict[str, str]]:
    """``keys`` and the run's tags, with the claims over the days that need extracting
    (``claims.run.days_to_extract``: usually the newest day) instead of every ledger day, and
    left out when none does."""
    ledger = open_ledger(home.ledger, write=False)
    every_day = ledger_days(ledger)
    if CLAIMS not in keys or not every_day:  # an empty ledger: today's (empty) claims, as before
        return keys, _all_days_tags(defs, home, instance, keys)
    days = days_to_extract(home, ledger, active_extractor().key, every_day)
    if not days:
        rest = [k for k in keys if k != CLAIMS]
        return rest, _all_days_tags(defs, home, instance, rest)
    register_ledger_days(instance, every_day)
    return keys, range_tags(days[0], days[-1])


def _all_days_tags(defs: dg.Definitions, home: MemcHome, instance: dg.DagsterInstance, selection: Sequence[dg.AssetKey] | None) -> dict[str, str]:
    """Range tags over every ledger day (registered as partitions first), if the selection holds
    a partitioned asset. An empty ledger has no day yet: today is registered, the day its first
    entries will most likely be recorded on, so that the claims (empty) exist for the views."""
    if not _partitioned(defs, selection):
        return {}
    days = ledger_days(open_ledger(home.ledger, write=False)) or [datetime.now(timezone.utc).date().isoformat()]
    register_ledger_days(instance, days)
    return range_tags(days[0], days[-1])


@dataclass
class BackfillReport(BuildReport):
    extractor: str = ""
    days_with_entries: list[str] = field(default_factory=list)
    out_of_date: list[str] = field(default_factory=list)
    ranges: list[tuple[str, str]] = field(default_factory=list)


def partition_code_versions(instance: dg.DagsterInstance, asset_key: dg.AssetKey, days: Sequence[str]) -> dict[str, str | None]:
    """The code version of each day's latest materialization (None: never materialized)."""
    out: dict[str, str | None] = {}
    for day in days:
        res = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=asset_key, asset_partitions=[day]), limit=1)
        rec = res.records[0] if res.records else None
        out[day] = (rec.asset_materialization.tags or {}).get("dagster/code_version") if rec and rec.asset_materialization else None
    return out


@one_build_at_a_time("memc backfill")
def backfill(
    home: MemcHome,
    start: str,
    end: str,
    *,
    extractor: str | None = None,
    views: bool = True,
    on_event: ProgressCallback | None = None,
    instance: dg.DagsterInstance | None = None,
) -> BackfillReport:
    """Re-extract the ledger days from ``start`` to ``end`` (inclusive) that are out of date.

    A day is out of date when its latest claims materialization in the Dagster instance has
    another code version than the active extractor's key (or none), or when its files are
    missing from the memory home (a deleted view). Each run of consecutive out-of-date days
    is one single run over that range; then, with ``views``, the views below the claims
    (dbt state, the graph; not dreaming) are compiled once. Other extractor versions' files
    are never touched. ``extractor`` (a name or key: "rules", "rules-0.2.0", "llm") overrides
    ``$MEMC_EXTRACTOR``."""

    wanted = day_range(start, end)  # ValueError on bad input, before anything runs
    if extractor:
        os.environ["MEMC_EXTRACTOR"] = extractor
    active = active_extractor()  # ExtractorError on a bad name or configuration
    prepare_environment(home)

    defs, instance = _definitions(home, instance)
    report = BackfillReport(extractor=active.key)
    present = set(ledger_days(open_ledger(home.ledger, write=False)))
    report.days_with_entries = [d for d in wanted if d in present]
    register_ledger_days(instance, sorted(present))
    versions = partition_code_versions(instance, CLAIMS, report.days_with_entries)
    on_disk = set(stored_days(home.claims, active.key))
    report.out_of_date = [d for d in report.days_with_entries if versions[d] != active.key or d not in on_disk]
    report.ranges = contiguous(report.out_of_date, among=sorted(present))
    report.ledger_head = _head(home)
    if not report.ranges:
        return report
    job = defs.resolve_implicit_global_asset_job_def()
    for i, (first, last) in enumerate(report.ranges):
        tags = {**range_tags(first, last), "memc/trigger": "memc backfill"}
        if i == 0:
            _observed_run(home, job, defs.resolve_asset_graph(), instance, [ENTITY_ALIASES, CLAIMS], on_event, report, tags)
        else:
            _run(job, instance, [CLAIMS], on_event, report, tags)
        if not report.success:
            return report
    if views:
        graph = defs.resolve_asset_graph()
        below = dg.AssetSelection.assets(CLAIMS).downstream(include_self=False).resolve(graph)
        below = [k for k in below if k != CENTRALITY and graph.get(k).partitions_def is None]
        if below:
            _run(job, instance, below, on_event, report, {"memc/trigger": "memc backfill"})
    report.ledger_head = _head(home)
    return report


def out_of_date_views(defs: dg.Definitions, instance: dg.DagsterInstance) -> list[dg.AssetKey]:
    """Unpartitioned views whose latest materialization ran another code version than the
    current definitions' (an embedding-model upgrade, a graph builder or dbt model change),
    or that were never materialized. Dreaming is left to its schedule and `memc dream`."""
    graph = defs.resolve_asset_graph()
    out = []
    for key in sorted(graph.materializable_asset_keys, key=lambda k: k.to_user_string()):
        node = graph.get(key)
        if node.partitions_def is not None or key == CENTRALITY:
            continue
        rec = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=1).records
        mat = rec[0].asset_materialization if rec else None
        last = (mat.tags or {}).get("dagster/code_version") if mat else None
        if mat is None or (node.code_version is not None and last != node.code_version):
            out.append(key)
    return out


@one_build_at_a_time("memc backfill-views")
def backfill_views(
    home: MemcHome,
    *,
    dry_run: bool = False,
    on_event: ProgressCallback | None = None,
    instance: dg.DagsterInstance | None = None,
) -> BackfillReport:
    """Re-materialize exactly the unpartitioned views that are out of date by code version
    (``out_of_date_views``), in one in-process run. The claims partitions have ``backfill``.

    The evidence index is unpartitioned on purpose (assets/retrieval.py): after an embedding
    model upgrade its code version changes, and this re-embeds every row into a fresh table
    that is swapped in whole; nothing else is touched."""
    prepare_environment(home)
    defs, instance = _definitions(home, instance)
    report = BackfillReport()
    stale = out_of_date_views(defs, instance)
    report.out_of_date = [k.to_user_string() for k in stale]
    report.ledger_head = _head(home)
    if not stale or dry_run:
        return report
    job = defs.resolve_implicit_global_asset_job_def()
    _observed_run(home, job, defs.resolve_asset_graph(), instance, stale, on_event, report, {"memc/trigger": "memc backfill-views"})
    return report


@one_build_at_a_time("memc dream")
def dream(
    home: MemcHome,
    *,
    recompile: bool = True,
    on_event: ProgressCallback | None = None,
    instance: dg.DagsterInstance | None = None,
) -> BuildReport:
    """Run dreaming now (the centrality asset), in-process. The entity graph must exist
    (`memc build` first). When dreaming appended derived claims and ``recompile`` is set, the
    views below the ledger are compiled once more so that they hold them (as `memc build` does)."""
    prepare_environment(home)
    if not (home.graph.exists() and any(home.graph.iterdir())):
        raise FileNotFoundError(f"no entity graph in {home.graph}: run `memc build` first")
    defs, instance = _definitions(home, instance)
    job = defs.resolve_implicit_global_asset_job_def()
    graph = defs.resolve_asset_graph()
    report = BuildReport()
    before = _head(home)
    _observed_run(home, job, graph, instance, [CENTRALITY], on_event, report, {"memc/trigger": "memc dream"})
    if report.success and recompile and _head(home) > before:
        everything = [k for k in graph.materializable_asset_keys if k != CENTRALITY]
        _observed_run(home, job, graph, instance, everything, on_event, report, {**_all_days_tags(defs, home, instance, everything), "memc/trigger": "memc dream"})
    report.ledger_head = _head(home)
    return report


def _head(home: MemcHome) -> int:
    return open_ledger(home.ledger, write=False).head()


def _observed_run(
    home: MemcHome,
    job: dg.JobDefinition,
    graph,
    instance: dg.DagsterInstance,
    keys: Sequence[dg.AssetKey],
    on_event: ProgressCallback | None,
    report: BuildReport,
    tags: dict[str, str] | None = None,
    checks: set[dg.AssetCheckKey] | None = None,
) -> None:
    """Record the ledger's observation (without a run: ``assets.ledger.report_observation``),
    then run ``keys`` with their checks (or ``checks``) and the ledger's own. The ledger's checks
    (its files' checksums and seqs, its Great Expectations suite) are blocking: when one fails,
    Dagster runs nothing below the ledger in that run, so no view is compiled from a ledger that
    failed them. They ran in a run of the ``observe_ledger`` job before each build's run, 0.4-0.5 s
    of a one-message build with that run's own start (docs/benchmarks.md)."""
    report_observation(instance, open_ledger(home.ledger, write=False))
    wanted = set(keys)
    if checks is None:
        checks = {c for c in graph.asset_check_keys if c.asset_key in wanted}
    checks = set(checks) | {c for c in graph.asset_check_keys if c.asset_key == LEDGER}
    _run(job.get_subset(asset_selection=wanted, asset_check_selection=checks), instance, None, on_event, report, tags)


def _run(job, instance, selection, on_event, report: BuildReport, tags: dict[str, str] | None = None) -> None:
    run_id = str(uuid.uuid4())

    def listener(entry) -> None:
        ev = entry.dagster_event
        if ev is None:
            return
        kind = ev.event_type_value
        if kind == "ASSET_MATERIALIZATION":
            report.materialized.append(ev.asset_key.to_user_string())
        elif kind == "ASSET_CHECK_EVALUATION":
            data = ev.event_specific_data
            report.checks[f"{data.asset_key.to_user_string()}:{data.check_name}"] = data.passed
        elif kind == "STEP_FAILURE":
            report.failed_steps.append(entry.step_key)
        if on_event:
            on_event(kind, entry.step_key)

    instance.add_event_listener(run_id, listener)
    if on_event:
        on_event("RUN_START", run_id)
    # dagster-dbt echoes dbt's log to stdout; keep it beside the run instead of on the terminal.
    log_dir = Path(os.environ["DAGSTER_HOME"]) / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / f"{run_id}.stdout.log", "w") as out, contextlib.redirect_stdout(out):
        result = job.execute_in_process(
            instance=instance,
            run_id=run_id,
            asset_selection=list(selection) if selection else None,
            raise_on_error=False,
            run_config=_QUIET,
            tags={"memc/trigger": "memc build", **(tags or {}), PID_TAG: str(os.getpid())},
        )
    report.runs.append(run_id)
    report.success = report.success and result.success


__all__ = ["BackfillReport", "BuildReport", "HomeBusy", "backfill", "backfill_views", "build", "dream", "out_of_date_views", "partition_code_versions", "pending", "prepare_environment", "LEDGER"]

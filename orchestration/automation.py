"""How the platform runs itself: declarative automation conditions and freshness policies,
applied once to every asset spec by the composition root (``apply_policies``).

The chain is ledger (observed source) -> entity_aliases -> claims (a partition per ledger day)
-> the unpartitioned views (dbt state, evidence index, entity graph) -> centrality (dreaming).

* entity_aliases: eager, on every ledger growth.
* claims (one dynamic partition per ledger day that has entries, added by the ledger-head
  sensor): the latest ledger day when the aliases were updated (a growing ledger only ever adds
  entries to its newest day: ``recorded_at`` is the commit time), and every day still missing
  (a new day; every unbuilt day on a daemon's first tick). Never on the very tick the ledger
  grew: entity_aliases is being requested then, in another run (different partitioning), and
  claims resolve names through it. The trigger is remembered; claims run once the aliases are
  done.
* the views below claims: refreshed when claims (or any non-ledger dependency) were updated,
  never while the extraction pass is pending. Plain ``eager()`` never fires below a
  partitioned asset (its "any dependency missing" clause is true while any day is missing:
  pitfall P6, seen with the ~900 calendar days of the former daily partitions), and eager on
  the ledger itself would compile the views once from stale claims and once more from fresh
  ones. So one refresh of all views, in one run, after each extraction.
* centrality: nightly, on the dreaming cron; its write-back grows the ledger, which refreshes
  the views again (the ledger-head sensor observes every writer).
* query_profile: daily (PROFILE_CRON), because the query log it reads grows with every compile
  outside Dagster (an external asset nothing observes), and with the views after each
  extraction pass (a new entity can be named by past questions). entity_dossiers: with the
  views (a dossier is only used while it holds the state build the marts hold, so it must follow
  every state build) and after each profile.

Freshness. An event-driven view is fresh while it holds the ledger head, however long ago it
was built, and late once it lacks an entry older than its target: that is its watermark-lag
check (checks/quality.py; state 5 min, embeddings 15, graph 60 by default, memc.toml
``[freshness]``), a warning while it catches up and an error beyond the target, evaluated after
each build and between builds by the ``view_lag_sensor`` whenever the head, the view's watermark
or the verdict changes. These views get no ``dg.FreshnessPolicy``: Dagster 1.13's time window
counts from the last materialization only (observations do not count), so a view holding the
head showed red "Failed" minutes after its build as soon as the ledger stopped growing. The
scheduled assets keep cron policies, evaluated by the daemon's FRESHNESS_DAEMON: centrality
must run within ``dreaming`` minutes after the dreaming cron, query_profile within
PROFILE_FRESHNESS_MINUTES after PROFILE_CRON.
"""

from __future__ import annotations

from datetime import timedelta

import dagster as dg

from catalog.keys import ENTITY_ALIASES
from catalog.keys import (
    CENTRALITY,
    CLAIMS,
    CLAIMS_GROUP,
    ENTITY_DOSSIERS,
    ENTITY_GRAPH,
    EVIDENCE_INDEX,
    LEDGER,
    MEMORY_UNITS,
    QUERY_LOG,
    QUERY_PROFILE,
    SKILLS,
    STATE_GROUP,
)
from checks.lag import TIERS
from checks.quality import LAG_ASSETS
from orchestration.settings import Settings

AC = dg.AutomationCondition

_LEDGER_GREW = AC.asset_matches(LEDGER, AC.newly_updated())

ALIASES_EAGER = AC.eager()


class LatestLedgerDay(dg.AutomationCondition):
    """True for the newest ledger-day partition only (a growing ledger only adds entries to its
    latest day: ``recorded_at`` is the commit time). What ``in_latest_time_window()`` is to a
    daily calendar, for the dynamic ledger-day partitions, on which that condition is true for
    every day: with it, each append would re-extract every day. Plain Python, so the automation
    sensor runs in the code server (``use_user_code_server``)."""

    @property
    def name(self) -> str:
        return "latest_ledger_day"

    @property
    def description(self) -> str:
        return "the latest ledger day"

    @property
    def requires_cursor(self) -> bool:
        return False

    def evaluate(self, context: dg.AutomationContext) -> dg.AutomationResult:
        keys = context.asset_graph_view.get_full_subset(key=context.key).expensively_compute_partition_keys()
        # ISO dates: the greatest string is the newest day.
        latest = {max(keys)} if keys else set()
        return dg.AutomationResult(context, context.candidate_subset.compute_intersection_with_partition_keys(latest))


# eager() without its in_latest_time_window(): the latest day when a dependency was updated
# (the ledger grew, so the aliases did; remembered until entity_aliases are done), and every
# day that is missing, a new day's as soon as its partition is added and every unbuilt day on
# a daemon's first tick; not a day whose extraction failed (`memc backfill` retries it), or it
# would be retried every tick.
CLAIMS_EAGER = (
    ((LatestLedgerDay() & AC.any_deps_updated()).since_last_handled() | (AC.missing() & ~AC.execution_failed()))
    & ~AC.any_deps_missing()
    & ~AC.any_deps_in_progress()
    & ~AC.in_progress()
    & ~_LEDGER_GREW
).with_label("eager on the latest and missing ledger days, after entity_aliases")

_EXTRACTION_PENDING = (
    _LEDGER_GREW
    | AC.asset_matches(ENTITY_ALIASES, AC.in_progress() | AC.newly_updated())
    | AC.asset_matches(CLAIMS, AC.in_progress())
).with_label("extraction pass pending")

# A view never builds over a view that was never built (and is not being requested with it):
# on a fresh home, entity_aliases finishing before claims start let a run select only the marts
# below it, and dbt failed on the never-built staging view of the ledger (seen in CI). The
# ledger is an observed source, claims are partitioned by ledger day (pitfall P6) and the query log is
# external: none of them is ever "materialized" as a whole.
_UPSTREAM_NEVER_BUILT = (
    AC.any_deps_match(AC.missing() & ~AC.will_be_requested())
    .ignore(dg.AssetSelection.assets(LEDGER, CLAIMS, QUERY_LOG))
    .with_label("an upstream view was never built")
)

VIEWS_AFTER_CLAIMS = (
    (
        AC.any_deps_updated().ignore(dg.AssetSelection.assets(LEDGER))
        | AC.asset_matches(CLAIMS, AC.newly_updated())
    ).since_last_handled()
    & ~AC.any_deps_in_progress()
    & ~AC.in_progress()
    & ~_EXTRACTION_PENDING
    & ~_UPSTREAM_NEVER_BUILT
).with_label("eager, after the extraction pass")


def nightly(cron: str) -> dg.AutomationCondition:
    """Once per cron tick, when the inputs exist and nothing upstream is running."""
    return (
        AC.cron_tick_passed(cron).since_last_handled()
        & ~AC.any_deps_missing()
        & ~AC.any_deps_in_progress()
        & ~AC.in_progress()
    ).with_label(f"nightly ({cron})")


# The query profile: daily, before dreaming (03:00), so that a night's dossiers follow the day's asks.
PROFILE_CRON = "30 2 * * *"
PROFILE_FRESHNESS_MINUTES = 60  # after PROFILE_CRON; memc.toml [freshness] query_profile = N overrides

PROFILE_DAILY_OR_AFTER_CLAIMS = (
    VIEWS_AFTER_CLAIMS
    | (AC.cron_tick_passed(PROFILE_CRON).since_last_handled() & ~AC.any_deps_in_progress() & ~AC.in_progress())
).with_label(f"daily ({PROFILE_CRON}) and after the extraction pass")


def _deadline_cron(cron: str, minutes: float) -> str | None:
    """'M H * * *' plus ``minutes`` (under a day), or None for any other cron shape."""
    parts = cron.split()
    if len(parts) != 5 or parts[2:] != ["*", "*", "*"] or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    total = (int(parts[1]) * 60 + int(parts[0]) + int(minutes)) % (24 * 60)
    return f"{total % 60} {total // 60} * * *"


def tier_of(spec: dg.AssetSpec) -> str | None:
    """The freshness tier of an asset, which names its target in the settings (None: not
    automated here; the ledger is a source asset). Only "dreaming" and "profile" become Dagster
    freshness policies; the views' targets hold their lag (``lag_targets``)."""
    if spec.key == CENTRALITY:
        return "dreaming"
    if spec.key in (EVIDENCE_INDEX, MEMORY_UNITS):
        return "embeddings"  # the units are regrouped from each index build
    if spec.key == ENTITY_GRAPH:
        return "graph"
    if spec.key == QUERY_PROFILE:
        return "profile"
    if spec.key == ENTITY_DOSSIERS:
        return "state"  # compiled with the state build it copies
    if spec.key == SKILLS:
        return "state"  # mined from the ledger alone, in under a second: as fresh as the state
    if spec.group_name in (STATE_GROUP, CLAIMS_GROUP):
        return "state"
    return None


def freshness_policy(spec: dg.AssetSpec, settings: Settings) -> dg.FreshnessPolicy | None:
    """Cron freshness for the scheduled assets only (dreaming, the query profile). An
    event-driven view gets none: Dagster's time window counts from the last materialization,
    which made a view that holds the ledger head "Failed" once the ledger stopped growing; its
    freshness is its lag behind the ledger (``lag_targets``, checks/quality.py)."""
    tier = tier_of(spec)
    if tier == "profile":
        # Daily: "fresh" means compiled in the `minutes` after the last PROFILE_CRON tick.
        minutes = settings.freshness_minutes.get(spec.key.to_user_string(), PROFILE_FRESHNESS_MINUTES)
        return dg.FreshnessPolicy.cron(deadline_cron=_deadline_cron(PROFILE_CRON, minutes), lower_bound_delta=timedelta(minutes=minutes))
    if tier == "dreaming":
        # Dreaming runs on a cron: "fresh" means it ran in the `minutes` after the last tick.
        minutes = settings.freshness_for(spec.key.to_user_string(), tier)
        deadline = _deadline_cron(settings.dreaming_cron, minutes)
        if deadline:
            return dg.FreshnessPolicy.cron(deadline_cron=deadline, lower_bound_delta=timedelta(minutes=minutes))
        return dg.FreshnessPolicy.time_window(fail_window=timedelta(days=1, minutes=minutes))
    return None


def lag_targets(settings: Settings) -> dict[str, float]:
    """Minutes each view with a watermark may lack a ledger entry before its lag check fails
    (error): its asset's own target if memc.toml or the environment sets one, else its tier's."""
    return {view: settings.freshness_for(LAG_ASSETS[view].to_user_string(), tier) for view, tier in TIERS.items()}


def automation_condition(spec: dg.AssetSpec, settings: Settings) -> dg.AutomationCondition | None:
    if spec.key == ENTITY_ALIASES:
        return ALIASES_EAGER
    if spec.key == CLAIMS:
        return CLAIMS_EAGER
    if spec.key == CENTRALITY:
        return nightly(settings.dreaming_cron)
    if spec.key == QUERY_PROFILE:
        return PROFILE_DAILY_OR_AFTER_CLAIMS
    if tier_of(spec) is not None:
        return VIEWS_AFTER_CLAIMS
    return None


def apply_policies(assets: list, settings: Settings) -> list:
    """Every materializable asset with its automation condition and freshness policy."""

    def apply(spec: dg.AssetSpec) -> dg.AssetSpec:
        return spec.replace_attributes(
            automation_condition=automation_condition(spec, settings),
            freshness_policy=freshness_policy(spec, settings),
        )

    return dg.map_asset_specs(apply, assets)


def automation_sensor(settings: Settings) -> dg.AutomationConditionSensorDefinition:
    # The implicit default automation sensor starts STOPPED in OSS (pitfall P7).
    return dg.AutomationConditionSensorDefinition(
        "memc_automation",
        target=dg.AssetSelection.all(),
        # LatestLedgerDay is Python of ours: the daemon's own evaluator only runs Dagster's
        # serializable built-in conditions. The code server evaluates ~38 entities a tick. (The
        # parameter's BetaWarning is silenced with the others by orchestration/notices.py.)
        use_user_code_server=True,
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=settings.sensor_interval_seconds,
        description="Evaluates every asset's automation condition: views refresh when the ledger grows, dreaming runs nightly.",
    )

"""Platform settings: freshness targets, the dreaming and compaction crons, sensor intervals, and
how runs execute (the executor, concurrency).

Plain module (no Dagster import): the definitions read it when they are built, i.e. when a
code location loads, never at import. Sources, later ones winning:

1. the defaults below;
2. ``<home>/memc.toml`` (``[freshness]``, ``[automation]``, ``[execution]``), for the memory
   home in use;
3. environment variables ``MEMC_FRESHNESS_<NAME>_MINUTES`` (NAME a tier or an asset, upper
   case) and ``MEMC_DREAMING_CRON``, ``MEMC_COMPACTION_CRON``, ``MEMC_SENSOR_INTERVAL_SECONDS``;
   for ``[execution]``, ``MEMC_EXECUTOR``, ``MEMC_MAX_CONCURRENT``, ``MEMC_MAX_CONCURRENT_RUNS``,
   ``MEMC_DAYS_PER_RUN``, ``MEMC_CELERY_BROKER``, ``MEMC_CELERY_BACKEND``, ``MEMC_K8S_NAMESPACE``.

Example ``memc.toml``::

    [freshness]          # minutes; a tier, or one asset by name (the asset wins)
    state = 5
    embeddings = 15
    graph = 60
    dreaming = 60        # minutes after the dreaming cron by which dreaming must have run
    state_current = 2

    [automation]
    dreaming_cron = "0 3 * * *"
    compaction_cron = "30 4 * * 0"
    sensor_interval_seconds = 30

    [execution]          # runs the daemon and the UI launch (`memc up`); `memc build` is in-process
    executor = "in_process"     # or "multiprocess", "celery", "k8s" (docs/scale.md)
    max_concurrent = 2          # multiprocess: steps at once in one run
    max_concurrent_runs = 1     # the run queue's limit
    days_per_run = 0            # claims: ledger days per run (0: a range of days is one run)
    broker = "redis://127.0.0.1:6379/0"    # celery
    backend = "redis://127.0.0.1:6379/1"   # celery
    namespace = "memc"          # k8s: where the step jobs run
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from memc.toml import read_toml

CONFIG_FILE = "memc.toml"

# Freshness tiers, in minutes (the targets): how long a view may lack a ledger entry
# before its watermark-lag check fails. "state" holds the claims and state_current; "embeddings"
# the evidence index; "graph" the entity graph; "dreaming" is measured from the nightly dreaming
# tick, a cron freshness policy (see orchestration/automation.py).
DEFAULT_FRESHNESS_MINUTES = {"state": 5, "embeddings": 15, "graph": 60, "dreaming": 60}
DEFAULT_DREAMING_CRON = "0 3 * * *"
# Weekly: LanceDB keeps one version per write, so a week of eager refreshes is a few hundred
# small versions; compacting them takes seconds on the sample corpus.
DEFAULT_COMPACTION_CRON = "30 4 * * 0"
DEFAULT_SENSOR_INTERVAL = 30

# What runs the steps of a run the daemon or the UI launched (`memc build` always runs in-process:
# 33-43 s against 61-95 s multiprocess for a whole build on 2 cores, docs/stack-notes.md).
EXECUTORS = ("auto", "in_process", "multiprocess", "celery", "k8s")

# "auto" (the default) is Dagster's multiprocess executor on a node of this many usable cores or
# more, and in-process below it. Multiprocess runs each step in a process of its own, so a native
# crash in one step (Kùzu, LanceDB) fails that step, not the run worker, and independent steps
# overlap; on two cores it made a run of every view 2.2x slower (265 s against 121 s: each step a
# process that loads the code location, 11 s median even from a forkserver; docs/scale.md).
MULTIPROCESS_MIN_CORES = 4


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. a container's cpuset)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Execution:
    """How launched runs execute (orchestration/execution.py turns this into Dagster's executor,
    instance concurrency and the claims' backfill policy)."""

    # "auto": multiprocess from MULTIPROCESS_MIN_CORES usable cores, in-process below (above).
    executor: str = "auto"
    # Two step processes on the two-core machines this runs on; each imports the code location
    # (~0.5 GB with torch once the evidence index loads the model).
    max_concurrent: int = 2
    # One run at a time, as before the pools: a run peaks near 1 GB on a 2-core box. The pools make
    # more safe (dbt and Kùzu still take turns); raise it on a bigger node or with Celery/k8s.
    max_concurrent_runs: int = 1
    # Ledger days per claims run when the daemon or a UI backfill requests several days: 0 keeps a
    # range in one run (one extraction step); N > 0 fans out into runs of N days each, which run
    # side by side up to max_concurrent_runs, so workers share the extraction.
    days_per_run: int = 0
    broker: str = "redis://127.0.0.1:6379/0"
    backend: str = "redis://127.0.0.1:6379/1"
    namespace: str = "memc"

    def chosen_executor(self) -> str:
        """The executor launched runs use: the setting, with "auto" decided by this node's cores."""
        if self.executor != "auto":
            return self.executor
        return "multiprocess" if usable_cores() >= MULTIPROCESS_MIN_CORES else "in_process"

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ValueError(f"[execution] executor must be one of {', '.join(EXECUTORS)}, not {self.executor!r}")
        for name in ("max_concurrent", "max_concurrent_runs"):
            if getattr(self, name) < 1:
                raise ValueError(f"[execution] {name} must be at least 1, not {getattr(self, name)}")
        if self.days_per_run < 0:
            raise ValueError(f"[execution] days_per_run must be 0 (one run) or more, not {self.days_per_run}")


@dataclass(frozen=True)
class Settings:
    freshness_minutes: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_FRESHNESS_MINUTES))
    dreaming_cron: str = DEFAULT_DREAMING_CRON
    compaction_cron: str = DEFAULT_COMPACTION_CRON
    sensor_interval_seconds: int = DEFAULT_SENSOR_INTERVAL
    execution: Execution = field(default_factory=Execution)

    def freshness_for(self, asset: str, tier: str) -> float:
        """Minutes: the asset's own target if one is set, else its tier's."""
        return self.freshness_minutes.get(asset, self.freshness_minutes[tier])


def load_settings(home_root: str | os.PathLike[str] | None = None) -> Settings:
    fresh: dict[str, float] = dict(DEFAULT_FRESHNESS_MINUTES)
    auto: dict[str, object] = {}
    execution: dict[str, object] = {}
    if home_root is not None:
        path = Path(home_root) / CONFIG_FILE
        if path.exists():
            data = read_toml(path)  # a malformed file: TomlError naming the file and line
            fresh.update({str(k): float(v) for k, v in data.get("freshness", {}).items()})
            auto.update(data.get("automation", {}))
            execution.update(data.get("execution", {}))
    prefix, suffix = "MEMC_FRESHNESS_", "_MINUTES"
    for name, value in os.environ.items():
        if name.startswith(prefix) and name.endswith(suffix) and value:
            fresh[name[len(prefix) : -len(suffix)].lower()] = float(value)
    for key, env in (("dreaming_cron", "MEMC_DREAMING_CRON"), ("compaction_cron", "MEMC_COMPACTION_CRON"),
                     ("sensor_interval_seconds", "MEMC_SENSOR_INTERVAL_SECONDS")):  # fmt: skip
        if os.environ.get(env):
            auto[key] = os.environ[env]
    for key, env in _EXECUTION_ENV.items():
        if os.environ.get(env):
            execution[key] = os.environ[env]
    bad = {k: v for k, v in fresh.items() if v < 1}
    if bad:
        # Dagster refuses windows under a minute ("system constraints"); say so at load time.
        raise ValueError(f"freshness targets must be at least 1 minute: {bad}")
    return Settings(
        freshness_minutes=fresh,
        dreaming_cron=str(auto.get("dreaming_cron", DEFAULT_DREAMING_CRON)),
        compaction_cron=str(auto.get("compaction_cron", DEFAULT_COMPACTION_CRON)),
        sensor_interval_seconds=int(auto.get("sensor_interval_seconds", DEFAULT_SENSOR_INTERVAL)),
        execution=_execution(execution),
    )


_EXECUTION_ENV = {
    "executor": "MEMC_EXECUTOR",
    "max_concurrent": "MEMC_MAX_CONCURRENT",
    "max_concurrent_runs": "MEMC_MAX_CONCURRENT_RUNS",
    "days_per_run": "MEMC_DAYS_PER_RUN",
    "broker": "MEMC_CELERY_BROKER",
    "backend": "MEMC_CELERY_BACKEND",
    "namespace": "MEMC_K8S_NAMESPACE",
}


def _execution(values: dict[str, object]) -> Execution:
    unknown = sorted(set(values) - set(_EXECUTION_ENV))
    if unknown:
        raise ValueError(f"[execution] has no setting {', '.join(unknown)} (known: {', '.join(_EXECUTION_ENV)})")
    ints = {"max_concurrent", "max_concurrent_runs", "days_per_run"}
    return Execution(**{k: int(v) if k in ints else str(v).replace("-", "_") if k == "executor" else str(v) for k, v in values.items()})  # type: ignore[arg-type]

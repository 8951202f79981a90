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

The tables are pydantic models: an unknown key or a bad value is refused when the settings load,
naming the file or the variable it came from, the table and the key.

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
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

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


class Execution(BaseModel):
    """How launched runs execute (orchestration/execution.py turns this into Dagster's executor,
    instance concurrency and the claims' backfill policy)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # "auto": multiprocess from MULTIPROCESS_MIN_CORES usable cores, in-process below (above).
    executor: Literal["auto", "in_process", "multiprocess", "celery", "k8s"] = "auto"
    # Two step processes on the two-core machines this runs on; each imports the code location
    # (~0.5 GB with torch once the evidence index loads the model).
    max_concurrent: int = Field(2, ge=1)
    # One run at a time, as before the pools: a run peaks near 1 GB on a 2-core box. The pools make
    # more safe (dbt and Kùzu still take turns); raise it on a bigger node or with Celery/k8s.
    max_concurrent_runs: int = Field(1, ge=1)
    # Ledger days per claims run when the daemon or a UI backfill requests several days: 0 keeps a
    # range in one run (one extraction step); N > 0 fans out into runs of N days each, which run
    # side by side up to max_concurrent_runs, so workers share the extraction.
    days_per_run: int = Field(0, ge=0)
    broker: str = "redis://127.0.0.1:6379/0"
    backend: str = "redis://127.0.0.1:6379/1"
    namespace: str = "memc"

    @field_validator("executor", mode="before")
    @classmethod
    def _either_spelling(cls, value: Any) -> Any:
        return value.replace("-", "_") if isinstance(value, str) else value  # "in-process" too

    def chosen_executor(self) -> str:
        """The executor launched runs use: the setting, with "auto" decided by this node's cores."""
        if self.executor != "auto":
            return self.executor
        return "multiprocess" if usable_cores() >= MULTIPROCESS_MIN_CORES else "in_process"


class Automation(BaseModel):
    """``[automation]``: the crons and the sensors' interval."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dreaming_cron: str = DEFAULT_DREAMING_CRON
    compaction_cron: str = DEFAULT_COMPACTION_CRON
    sensor_interval_seconds: int = Field(DEFAULT_SENSOR_INTERVAL, ge=1)


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True)

    # Minutes, by tier or asset name. Dagster refuses windows under a minute ("system constraints").
    freshness_minutes: dict[str, Annotated[float, Field(ge=1)]] = Field(default_factory=lambda: dict(DEFAULT_FRESHNESS_MINUTES))
    dreaming_cron: str = DEFAULT_DREAMING_CRON
    compaction_cron: str = DEFAULT_COMPACTION_CRON
    sensor_interval_seconds: int = DEFAULT_SENSOR_INTERVAL
    execution: Execution = Field(default_factory=Execution)

    def freshness_for(self, asset: str, tier: str) -> float:
        """Minutes: the asset's own target if one is set, else its tier's."""
        return self.freshness_minutes.get(asset, self.freshness_minutes[tier])


_AUTOMATION_ENV = {
    "dreaming_cron": "MEMC_DREAMING_CRON",
    "compaction_cron": "MEMC_COMPACTION_CRON",
    "sensor_interval_seconds": "MEMC_SENSOR_INTERVAL_SECONDS",
}

_EXECUTION_ENV = {
    "executor": "MEMC_EXECUTOR",
    "max_concurrent": "MEMC_MAX_CONCURRENT",
    "max_concurrent_runs": "MEMC_MAX_CONCURRENT_RUNS",
    "days_per_run": "MEMC_DAYS_PER_RUN",
    "broker": "MEMC_CELERY_BROKER",
    "backend": "MEMC_CELERY_BACKEND",
    "namespace": "MEMC_K8S_NAMESPACE",
}


def load_settings(home_root: str | os.PathLike[str] | None = None) -> Settings:
    """The settings of the home at ``home_root`` (sources in the module docstring). A bad value is
    a ValueError naming where it came from (the file or the environment variable), the table and
    the key, and what is wanted."""
    # (table, key) -> (value, where it came from); later sources win.
    given: dict[tuple[str, str], tuple[Any, str]] = {}
    if home_root is not None:
        path = Path(home_root) / CONFIG_FILE
        if path.exists():
            data = read_toml(path)  # a malformed file: TomlError naming the file and line
            for table in ("freshness", "automation", "execution"):
                section = data.get(table, {})
                if not isinstance(section, dict):
                    raise ValueError(f"{path}: [{table}] must be a table")
                given.update({(table, str(k)): (v, str(path)) for k, v in section.items()})
    prefix, suffix = "MEMC_FRESHNESS_", "_MINUTES"
    for name, value in os.environ.items():
        if name.startswith(prefix) and name.endswith(suffix) and value:
            given[("freshness", name[len(prefix) : -len(suffix)].lower())] = (value, f"${name}")
    for table, env in (("automation", _AUTOMATION_ENV), ("execution", _EXECUTION_ENV)):
        for key, name in env.items():
            if os.environ.get(name):
                given[(table, key)] = (os.environ[name], f"${name}")

    def values(table: str) -> dict[str, Any]:
        return {key: value for (t, key), (value, _) in given.items() if t == table}

    freshness = {**DEFAULT_FRESHNESS_MINUTES, **values("freshness")}
    try:
        automation = Automation.model_validate(values("automation"))
        execution = Execution.model_validate(values("execution"))
        return Settings(freshness_minutes=freshness, execution=execution, **automation.model_dump())
    except ValidationError as exc:
        raise ValueError(_problem(exc, given)) from None


def _problem(exc: ValidationError, given: dict[tuple[str, str], tuple[Any, str]]) -> str:
    """A settings ValidationError's first problem: where the value came from, its table and key,
    and what is wanted ("$MEMC_MAX_CONCURRENT_RUNS: [execution] max_concurrent_runs must be at
    least 1, not 0")."""
    error = exc.errors(include_url=False)[0]
    loc = [str(part) for part in error.get("loc") or ()]
    table = {"Execution": "execution", "Automation": "automation"}.get(exc.title)
    if table is None:  # Settings: only its freshness targets are validated there
        table = "freshness" if loc and loc.pop(0) == "freshness_minutes" else ""
    key = loc[0] if loc else ""
    origin = given.get((table, key), (None, "memc's default"))[1]
    value = error.get("input")
    kind = str(error.get("type"))
    if kind == "extra_forbidden":
        known = ", ".join({"execution": _EXECUTION_ENV, "automation": _AUTOMATION_ENV}[table])
        wanted = f"[{table}] has no setting {key} (known: {known})"
    elif kind == "literal_error":
        wanted = f"[{table}] {key} must be one of {', '.join(EXECUTORS)}, not {value!r}"
    elif kind == "greater_than_equal":
        limit = error.get("ctx", {}).get("ge")
        unit = " minute (Dagster's shortest window)" if table == "freshness" else ""
        wanted = f"[{table}] {key} must be at least {limit:g}{unit}, not {value}"
    else:
        wanted = f"[{table}] {key}: {error.get('msg')}, not {value!r}"
    return f"{origin}: {wanted}"

"""Run the asset graph in-process against one memory home (what `memc build` and the tests use).

The Dagster instance lives in ``<home>/dagster`` so that `memc ui` shows every build's runs,
lineage and check results. In-process execution: one partition plus everything downstream took
33-43 s in-process against 61-95 s with the multiprocess executor on 2 cores (FINDINGS.md).
"""

from __future__ import annotations

import contextlib
import os
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import dagster as dg

from memc.home import MemcHome
from orchestration.keys import CENTRALITY, LEDGER

DAGSTER_YAML = """\
# memc's local Dagster instance (runs, event logs, schedules) for this memory home.
telemetry:
  enabled: false
"""


def prepare_environment(home: MemcHome) -> None:
    """Point Dagster, dbt and Hugging Face at this home and keep all of them offline."""
    # Beta/preview notices about Dagster's own APIs are for us, not for someone running a build.
    for category in (dg.BetaWarning, dg.PreviewWarning, dg.SupersessionWarning):
        warnings.filterwarnings("ignore", category=category)
    home.ensure()
    home.dagster.mkdir(parents=True, exist_ok=True)
    cfg = home.dagster / "dagster.yaml"
    if not cfg.exists():
        cfg.write_text(DAGSTER_YAML)
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


# Progress is shown by the caller; Dagster's own console log would drown it.
_QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}

ProgressCallback = Callable[[str, str | None], None]


def build(
    home: MemcHome,
    *,
    selection: Sequence[dg.AssetKey] | None = None,
    on_event: ProgressCallback | None = None,
    instance: dg.DagsterInstance | None = None,
) -> BuildReport:
    """Observe the ledger, then materialize every view (or ``selection``) in one in-process run.

    Dreaming appends derived claims to the ledger; when it did, the views below the ledger are
    compiled once more so that they reflect them (dreaming itself is then a no-op)."""
    prepare_environment(home)
    from orchestration.dbt_project import ensure_manifest

    ensure_manifest()
    from orchestration.definitions import build_definitions

    defs = build_definitions(str(home.root))
    instance = instance or dg.DagsterInstance.get()
    observe = defs.resolve_job_def("observe_ledger")
    observe.execute_in_process(instance=instance, run_config=_QUIET)

    job = defs.resolve_implicit_global_asset_job_def()
    report = BuildReport()
    head_before = _head(home)
    _run(job, instance, selection, on_event, report)
    if report.success and selection is None and _head(home) > head_before:
        observe.execute_in_process(instance=instance, run_config=_QUIET)
        everything = [k for k in defs.resolve_asset_graph().materializable_asset_keys if k not in (CENTRALITY,)]
        _run(job, instance, everything, on_event, report)
    report.ledger_head = _head(home)
    return report


def _head(home: MemcHome) -> int:
    from ledger import Ledger

    return Ledger(home.ledger).head()


def _run(job, instance, selection, on_event, report: BuildReport) -> None:
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
            tags={"memc/trigger": "memc build"},
        )
    report.runs.append(run_id)
    report.success = report.success and result.success


__all__ = ["BuildReport", "build", "prepare_environment", "LEDGER"]

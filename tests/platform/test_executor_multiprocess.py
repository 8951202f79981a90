"""Dagster's multiprocess executor, `auto`'s choice for `memc up` on a node of 4 cores or more
(issue 19; orchestration/settings.py): a launched run of every unpartitioned view of a built home,
each step in a process of its own forked from memc's forkserver, materializes every asset it
selects and passes every check, with no step in the launching process.

Real components: ``dagster asset materialize`` on the memc code location, the sample corpus's
home. Measured: about 50-70 s on two cores (a process per step, 2 at once), against the same run
in-process in docs/scale.md.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg

from conftest import relocate_warehouse


def test_a_launched_multiprocess_run_materializes_every_view_in_step_processes(built_home, tmp_path):
    from memc.home import MemcHome
    from orchestration.definitions import build_definitions
    from orchestration.platform import CODE_ROOT, environment
    from orchestration.runner import prepare_environment

    src, _ = built_home
    shutil.copytree(src.root, tmp_path / "home", symlinks=True)
    relocate_warehouse(tmp_path / "home", src.root)
    home = MemcHome.resolve(tmp_path / "home")
    (home.root / "memc.toml").write_text('[execution]\nexecutor = "multiprocess"\n')
    prepare_environment(home)
    graph = build_definitions(str(home.root)).resolve_asset_graph()
    views = sorted(k.to_user_string() for k in graph.materializable_asset_keys if graph.get(k).partitions_def is None)
    launcher = subprocess.Popen(
        [str(Path(sys.executable).with_name("dagster")), "asset", "materialize", "-m", "orchestration.definitions", "--select", ",".join(views)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environment(home), cwd=str(CODE_ROOT), text=True,
    )  # fmt: skip
    out, _ = launcher.communicate(timeout=900)
    assert launcher.returncode == 0, out[-4000:]
    assert "Multiprocess executor: parent process exiting" in out

    with dg.DagsterInstance.from_config(str(home.dagster)) as instance:
        (run,) = instance.get_runs(limit=1)
        assert run.status == dg.DagsterRunStatus.SUCCESS
        events = [e.dagster_event for e in instance.all_logs(run.run_id) if e.dagster_event is not None]
    started = [(e.step_key, e.pid) for e in events if e.event_type_value == "STEP_START"]
    pids = {pid for _, pid in started}
    assert launcher.pid not in pids and len(pids) == len(started) > 1, started  # a process per step
    materialized = {e.asset_key.to_user_string() for e in events if e.event_type_value == "ASSET_MATERIALIZATION"}
    assert set(views) - materialized == set(), sorted(set(views) - materialized)
    checks = [e.event_specific_data for e in events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert checks and all(c.passed for c in checks), [(c.check_name, c.passed) for c in checks if not c.passed]

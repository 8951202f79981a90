"""Dagster's Celery executor with a real Redis (issue 19): memc.toml's ``[execution] executor =
"celery"`` sends every step of a launched run to a Celery worker through a ``redis-server`` on
127.0.0.1, and the worker, not the launching process, runs them.

Real components: Debian's redis-server 7.0 (a free port, a temp dir, no persistence), a Celery
worker started as docs/scale.md says (``dagster-celery worker start -A dagster_celery.app``, solo
pool), and ``dagster asset materialize`` on the memc code location over a tiny home (the sample
corpus): the ledger's observation with its two checks, entity_aliases and skills with theirs.
Measured here: about 45 s (the worker imports the code location on its first task, ~10 s).
`.ci/run` installs redis-server; without it the test is skipped, which fails CI.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ingest_sample_corpus

pytestmark = pytest.mark.distributed

START_TIMEOUT = 120  # seconds: bounds on waiting for redis and the worker, not assertions


def _redis(tmp: Path, port: int) -> subprocess.Popen:
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (.ci/run installs Debian's redis-server)")
    proc = subprocess.Popen(
        [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(tmp), "--save", "", "--appendonly", "no",
         "--daemonize", "no", "--logfile", str(tmp / "redis.log")],
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    import redis

    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if redis.Redis(host="127.0.0.1", port=port, socket_timeout=1).ping():
                return proc
        except redis.exceptions.ConnectionError:
            time.sleep(0.1)
    proc.kill()
    pytest.fail(f"redis-server did not answer on 127.0.0.1:{port}:\n{(tmp / 'redis.log').read_text(errors='replace')[-2000:]}")


def _worker(home, config: Path, log: Path, env: dict) -> subprocess.Popen:
    from orchestration.platform import CODE_ROOT

    exe = Path(sys.executable).with_name("dagster-celery")
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(exe), "worker", "start", "-A", "dagster_celery.app", "-y", str(config), "-n", "memc-test", "--", "--pool=solo"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=str(CODE_ROOT),
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None:
        if b" ready." in log.read_bytes():
            return proc
        time.sleep(0.2)
    _stop(proc)
    pytest.fail(f"the Celery worker did not come up:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group (the worker's warm shutdown), then SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def test_a_run_with_the_celery_executor_runs_its_steps_in_the_worker(tmp_path):
    import dagster as dg

    from catalog.dbt_project import ensure_manifest
    from catalog.keys import ENTITY_ALIASES, LEDGER, SKILLS
    from claims.store import aliases_path
    from ledger import open_ledger
    from memc.home import MemcHome
    from memc.processes import free_port
    from orchestration.platform import CODE_ROOT, environment, group_members
    from orchestration.runner import prepare_environment

    home = MemcHome.resolve(tmp_path / "home").ensure()
    ingest_sample_corpus(home)
    port = free_port()
    broker, backend = f"redis://127.0.0.1:{port}/0", f"redis://127.0.0.1:{port}/1"
    (home.root / "memc.toml").write_text(f'[execution]\nexecutor = "celery"\nbroker = "{broker}"\nbackend = "{backend}"\n')
    prepare_environment(home)  # the home's dagster.yaml (run queue, pools)
    ensure_manifest()
    # The worker's configuration is the executor's config block (docs/scale.md).
    config = tmp_path / "celery.yaml"
    config.write_text(f"execution:\n  config:\n    broker: {broker}\n    backend: {backend}\n")
    env = environment(home)
    # `dagster-celery worker start` runs `celery` by name: the venv's scripts must be on PATH
    # (make runs .venv/bin/python without activating the venv; CI failed on it).
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"

    redis_server = _redis(tmp_path, port)
    worker = None
    try:
        worker = _worker(home, config, tmp_path / "worker.log", env)
        workers = set(group_members(worker.pid))  # dagster-celery and the celery process it started
        launcher = subprocess.Popen(
            [str(Path(sys.executable).with_name("dagster")), "asset", "materialize", "-m", "orchestration.definitions",
             "--select", f"{LEDGER.to_user_string()},{ENTITY_ALIASES.to_user_string()},{SKILLS.to_user_string()}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=str(CODE_ROOT), text=True,
        )  # fmt: skip
        out, _ = launcher.communicate(timeout=300)
        assert launcher.returncode == 0, out[-4000:]
        assert 'Submitting celery task for step "entity_aliases"' in out  # the launcher only submitted it
    finally:
        if worker is not None:
            _stop(worker)
        _stop(redis_server)

    with dg.DagsterInstance.from_config(str(home.dagster)) as instance:
        [run] = instance.get_runs(limit=1)
        assert run.status == dg.DagsterRunStatus.SUCCESS
        events = [e.dagster_event for e in instance.all_logs(run.run_id) if e.dagster_event is not None]
        started = {e.step_key: e.pid for e in events if e.event_type_value == "STEP_START"}
        assert {"ledger", "entity_aliases", "skills"} <= set(started), started
        assert len(started) >= 5, started  # the three assets and their checks, each its own step
        assert set(started.values()) <= workers, f"steps ran outside the worker {workers}: {started}"
        assert launcher.pid not in started.values()
        materialized = {e.asset_key for e in events if e.event_type_value == "ASSET_MATERIALIZATION"}
        assert materialized == {ENTITY_ALIASES, SKILLS}
        observed = [e for e in events if e.event_type_value == "ASSET_OBSERVATION"]
        assert [e.asset_key for e in observed] == [LEDGER]
        head = open_ledger(home.ledger).head()
        assert head > 0 and observed[0].event_specific_data.asset_observation.data_version == str(head)
        checks = [e.event_specific_data for e in events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
        assert len(checks) >= 4 and all(c.passed for c in checks), [(c.check_name, c.passed) for c in checks]
    # What the worker wrote is in the home.
    import pyarrow.parquet as pq

    assert pq.read_table(aliases_path(home.claims)).num_rows > 0

"""Dagster's Celery executor with a real Redis over a home whose ledger is on object storage (issue
19): memc.toml's ``[execution] executor = "celery"`` sends every step of a launched run to a
Celery worker through a ``redis-server`` on 127.0.0.1, the ledger is on a real Ceph RGW
(MEMC_STORAGE, tests/ceph_rgw.py), and three launched runs materialize every asset of the
definitions: the worker, not the launching process, runs each step, in a home directory of its
own, as on another machine: the views it builds reach the launcher's home only through the object
store (views/published.py).

Real components: Debian's redis-server 7.0 (a free port, a temp dir, no persistence), Ceph RGW
16.2 on loopback, a Celery worker started as docs/scale.md says (``dagster-celery worker start -A
dagster_celery.app``, solo pool), and ``dagster asset materialize`` on the memc code location over
the sample corpus. Measured: the three runs 68 s on an idle two-core machine (the worker loads the
code location on its first task, ~10 s), Ceph's start 14-31 s unless another S3 test of the same
pytest worker started it. `.ci/run` installs redis-server and Ceph; without them the test is
skipped or fails, which fails CI.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from conftest import SAMPLES

pytestmark = [pytest.mark.distributed, pytest.mark.s3]

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


def test_celery_runs_over_an_s3_home_materialize_every_asset_in_the_worker(ceph_rgw, tmp_path, monkeypatch):
    import dagster as dg
    import pyarrow.parquet as pq

    from catalog.dbt_project import ensure_manifest
    from catalog.keys import LEDGER
    from catalog.partitions import register_ledger_days
    from claims.ledger_days import ledger_days
    from claims.store import aliases_path
    from ingestion import ingest_paths
    from ledger import open_ledger
    from ledger.s3 import S3Ledger
    from memc.home import MemcHome
    from memc.processes import free_port
    from orchestration.definitions import build_definitions
    from orchestration.platform import CODE_ROOT, environment, group_members
    from orchestration.runner import prepare_environment
    from views import published
    from views.build import graph_store

    # The ledger on the RGW for this process and, through environment() below, the worker's.
    for k, v in {**ceph_rgw.env(), "MEMC_STORAGE": f"s3://{ceph_rgw.bucket}/{uuid.uuid4().hex}"}.items():
        monkeypatch.setenv(k, v)
    home = MemcHome.resolve(tmp_path / "home").ensure()
    ledger = open_ledger(home.ledger)
    assert isinstance(ledger, S3Ledger), type(ledger)
    ingest_paths(ledger, [SAMPLES / "team"], scope="team", visibility=("public",))
    ingested = ledger.head()
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
    # The worker stands for another machine: a home directory of its own (its settings copied),
    # sharing with the launcher only the Dagster instance and the object store. Every view it
    # builds reaches the launcher's home through MEMC_STORAGE (views/published.py), not the disk.
    worker_home = MemcHome.resolve(tmp_path / "worker-home").ensure()
    shutil.copy(home.root / "memc.toml", worker_home.root / "memc.toml")
    worker_env = {**env, "MEMC_HOME": str(worker_home.root)}
    days = ledger_days(ledger)
    with dg.DagsterInstance.from_config(str(home.dagster)) as instance:
        register_ledger_days(instance, days)
    graph = build_definitions(str(home.root)).resolve_asset_graph()
    every = set(graph.materializable_asset_keys)
    unpartitioned = sorted(k.to_user_string() for k in every if graph.get(k).partitions_def is None)
    # As a first build orders them: the ledger's observation and the aliases the extraction reads,
    # the claims of each ledger day, then everything downstream (dreaming appends to the S3 ledger).
    selections = [
        ["--select", f"{LEDGER.to_user_string()},entity_aliases"],
        *(["--select", "claims", "--partition", day] for day in days),
        ["--select", ",".join(k for k in unpartitioned if k != "entity_aliases")],
    ]

    redis_server = _redis(tmp_path, port)
    worker = None
    outputs = []
    try:
        worker = _worker(home, config, tmp_path / "worker.log", worker_env)
        workers = set(group_members(worker.pid))  # dagster-celery and the celery process it started
        launchers = set()
        for selection in selections:
            launcher = subprocess.Popen(
                [str(Path(sys.executable).with_name("dagster")), "asset", "materialize", "-m", "orchestration.definitions", *selection],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=str(CODE_ROOT), text=True,
            )  # fmt: skip
            out, _ = launcher.communicate(timeout=600)
            assert launcher.returncode == 0, (selection, out[-4000:])
            launchers.add(launcher.pid)
            outputs.append(out)
        assert 'Submitting celery task for step "entity_aliases"' in outputs[0]  # the launcher only submitted it
    finally:
        if worker is not None:
            _stop(worker)
        _stop(redis_server)

    with dg.DagsterInstance.from_config(str(home.dagster)) as instance:
        runs = instance.get_runs(limit=len(selections))
        assert len(runs) == len(selections) and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), [r.status for r in runs]
        events = [e.dagster_event for r in runs for e in instance.all_logs(r.run_id) if e.dagster_event is not None]
        started = [(e.step_key, e.pid) for e in events if e.event_type_value == "STEP_START"]
        assert len(started) >= len(every) // 2, started  # dbt's models share a step; each check is its own
        assert {pid for _, pid in started} <= workers, f"steps ran outside the worker {workers}: {started}"
        assert not launchers & {pid for _, pid in started}
        materialized = {e.asset_key for e in events if e.event_type_value == "ASSET_MATERIALIZATION"}
        observed = {e.asset_key for e in events if e.event_type_value == "ASSET_OBSERVATION"}
        assert every - materialized - observed == set(), sorted(k.to_user_string() for k in every - materialized - observed)
        checks = [e.event_specific_data for e in events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
        assert checks and all(c.passed for c in checks), [(c.check_name, c.passed) for c in checks if not c.passed]
    # What the worker wrote: the views in its own home and on S3, none in the launcher's until it
    # pulls them; dreaming's derived claims on S3; no ledger batch on any local disk.
    assert pq.read_table(aliases_path(worker_home.claims)).num_rows > 0
    assert not aliases_path(home.claims).exists() and not home.marts.exists()
    published.pull(home)
    assert pq.read_table(aliases_path(home.claims)).num_rows == pq.read_table(aliases_path(worker_home.claims)).num_rows
    for mart in ("state_current", "entities", "timeline"):
        assert pq.read_table(home.marts / f"{mart}.parquet").equals(pq.read_table(worker_home.marts / f"{mart}.parquet")), mart
    # The graph as each home reads it (its file's bytes are not compared: opening a Kùzu database
    # to read it, as dreaming and the dossiers did after the graph step published, may rewrite
    # its header and checkpoint in place).
    with graph_store(home) as pulled, graph_store(worker_home) as built:
        assert pulled.counts() == built.counts() and pulled.counts()["Entity"] > 0, (pulled.counts(), built.counts())
        assert pulled.node_evidence() == built.node_evidence()
    assert open_ledger(home.ledger).head() > ingested
    assert not list(home.ledger.glob("*.parquet")) and not list(worker_home.ledger.glob("*.parquet")), "a ledger batch was written to a local disk"

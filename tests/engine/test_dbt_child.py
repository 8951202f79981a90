"""dbt started warm (catalog/dbt_child.py): `memc-dbt` hands its run to the process's zygote, which
forks it with dbt already imported. Against a throwaway dbt project on DuckDB: the run's output,
files and exit code are plain dbt's (its DuckDB file checkpointed at the end, as plain dbt's exit
does); a memc-dbt killed with SIGKILL mid-run takes its run with it
(nothing left holding the DuckDB file); SIGTERM to memc-dbt reaches the run; a zygote that is
gone makes memc-dbt run dbt itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from catalog.dbt_child import ZYGOTE_ENV, start_zygote
from procfs import children, until  # tests/ is on sys.path

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfd, SCM_RIGHTS and PR_SET_PDEATHSIG")

MEMC_DBT = str(Path(sys.executable).with_name("memc-dbt"))
# A model that runs for minutes: a table of DuckDB's hash of a hundred billion numbers (a view
# would be created at once, and a count alone DuckDB answers from the range's size).
SLOW = "{{ config(materialized='table') }} select sum(hash(i)) as n from range(100000000000) as t(i)"


def _project(root: Path, sql: str) -> Path:
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text("name: warm\nversion: '1.0.0'\nconfig-version: 2\nprofile: warm\nmodel-paths: [models]\n")
    (root / "profiles.yml").write_text(f"warm:\n  target: dev\n  outputs:\n    dev:\n      type: duckdb\n      path: {root / 'warm.duckdb'}\n      threads: 1\n")
    (root / "models" / "answer.sql").write_text(sql)
    return root


def _dbt(project: Path, *args: str, zygote: str | None, **kw) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != ZYGOTE_ENV}
    env["DO_NOT_TRACK"] = "1"
    if zygote:
        env[ZYGOTE_ENV] = zygote
    cmd = [MEMC_DBT, *args, "--project-dir", str(project), "--profiles-dir", str(project), "--log-format", "json"]
    return subprocess.Popen(cmd, env=env, cwd=project if project.exists() else project.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _zygote_pid(socket_path: str) -> int:
    mine = children(os.getpid())
    return next(p for p in mine if f"--zygote\0{socket_path}".encode() in Path(f"/proc/{p}/cmdline").read_bytes())


def _run_of(zygote_pid: int) -> int | None:
    """The dbt run the zygote forked: the child of its handler (the zygote's child)."""
    for handler in children(zygote_pid):
        if runs := children(handler):
            return runs[0]
    return None


def _gone(pid: int) -> bool:
    """Reaped, not only a zombie: a process whose main thread has exited shows as a zombie while
    its other threads (DuckDB's) still end, and until they have, its file locks are held."""
    return not Path(f"/proc/{pid}").exists()


@pytest.fixture(scope="module")
def zygote() -> str:
    path = start_zygote()
    assert path is not None, "memc-dbt is installed beside this interpreter"
    return path


def test_a_warm_run_does_what_plain_dbt_does(zygote, tmp_path):
    results = {}
    for name, via in (("plain", None), ("warm", zygote)):
        project = _project(tmp_path / name, "select 42 as answer")
        proc = _dbt(project, "run", zygote=via)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:] + out[-2000:]
        events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert any(e["info"]["name"] == "LogModelResult" for e in events)  # dbt's JSON log, on memc-dbt's stdout
        # The run closed the database as plain dbt does at its exit, so DuckDB checkpointed: no
        # write-ahead log left for every later open of the warehouse to replay.
        assert not (project / "warm.duckdb.wal").exists()
        with duckdb.connect(str(project / "warm.duckdb"), read_only=True) as con:
            results[name] = con.execute("select answer from answer").fetchall()
        run = json.loads((project / "target" / "run_results.json").read_text())
        assert [r["status"] for r in run["results"]] == ["success"]
    assert results["plain"] == results["warm"] == [(42,)]

    # dbt's own exit code for a failing run (1) and for a bad invocation (2), warm as plain
    for via in (None, zygote):
        failing = _project(tmp_path / f"failing-{bool(via)}", "select * from no_such_table")
        assert _dbt(failing, "run", zygote=via).wait(300) == 1
        assert _dbt(tmp_path / "nowhere", "run", zygote=via).wait(300) == 2


def test_a_killed_memc_dbt_takes_its_run_with_it(zygote, tmp_path):
    project = _project(tmp_path / "slow", SLOW)
    client = _dbt(project, "run", zygote=zygote)
    zygote_pid = _zygote_pid(zygote)
    run = until(lambda: _run_of(zygote_pid), 120, "the run forked by the zygote")
    until(lambda: (project / "warm.duckdb").exists(), 120, "the run to open its DuckDB file")
    client.send_signal(signal.SIGKILL)
    client.wait(30)
    until(lambda: _gone(run), 20, f"the run (pid {run}) to end with its memc-dbt")
    with duckdb.connect(str(project / "warm.duckdb")) as con:  # the write lock is free again
        con.execute("select 1").fetchall()
    assert not _gone(zygote_pid), "the zygote serves the next run"


def test_sigterm_to_memc_dbt_reaches_its_run(zygote, tmp_path):
    project = _project(tmp_path / "slow", SLOW)
    client = _dbt(project, "run", zygote=zygote)
    until(lambda: (project / "warm.duckdb").exists(), 120, "the run to open its DuckDB file")
    client.send_signal(signal.SIGTERM)  # what a build's death sends it (PR_SET_PDEATHSIG)
    assert client.wait(30) == 128 + signal.SIGTERM
    with duckdb.connect(str(project / "warm.duckdb")) as con:
        con.execute("select 1").fetchall()


def test_without_its_zygote_memc_dbt_runs_dbt_itself(tmp_path):
    project = _project(tmp_path / "cold", "select 7 as answer")
    proc = _dbt(project, "run", zygote=str(tmp_path / "no-such.sock"))
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    with duckdb.connect(str(project / "warm.duckdb"), read_only=True) as con:
        assert con.execute("select answer from answer").fetchall() == [(7,)]

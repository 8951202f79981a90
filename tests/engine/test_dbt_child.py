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
from procfs import children, state, until  # tests/ is on sys.path

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
    results, logged = {}, {}
    for name, via in (("plain", None), ("warm", zygote)):
        project = _project(tmp_path / name, "select 42 as answer")
        proc = _dbt(project, "run", zygote=via)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:] + out[-2000:]
        events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert any(e["info"]["name"] == "LogModelResult" for e in events)  # dbt's JSON log, on memc-dbt's stdout
        logged[name] = sorted((e["info"]["name"], e["info"]["level"]) for e in events)
        # The run closed the database as plain dbt does at its exit, so DuckDB checkpointed: no
        # write-ahead log left for every later open of the warehouse to replay.
        assert not (project / "warm.duckdb.wal").exists()
        with duckdb.connect(str(project / "warm.duckdb"), read_only=True) as con:
            results[name] = con.execute("select answer from answer").fetchall()
        run = json.loads((project / "target" / "run_results.json").read_text())
        assert [r["status"] for r in run["results"]] == ["success"]
    assert results["plain"] == results["warm"] == [(42,)]
    assert logged["plain"] == logged["warm"]  # the same events at the same levels (lines_only_at_their_level)

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


# A parent that starts memc-dbt on a slow project, the zygote's socket named or not, prints its
# pid and is killed at once: while memc-dbt's interpreter is still starting, before it can ask
# the kernel to end it with its parent.
_KILLED_AT_ONCE = """
import os, signal, subprocess, sys
from catalog.dbt_child import PARENT_ENV
cmd, env = sys.argv[1:-1], dict(os.environ, **{PARENT_ENV: str(os.getpid())})
if sys.argv[-1]:
    env[%r] = sys.argv[-1]
child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(child.pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
""" % ZYGOTE_ENV


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_memc_dbt_whose_parent_died_while_it_started_runs_nothing(zygote, tmp_path, warm):
    # Its parent was already the reaper when it asked who its parent was: dbt started that way
    # ran to its end (9-15 s of a build's dbt on the sample home) holding the warehouse's lock.
    project = _project(tmp_path / "slow", SLOW)
    cmd = [MEMC_DBT, "run", "--project-dir", str(project), "--profiles-dir", str(project)]
    parent = subprocess.run([sys.executable, "-c", _KILLED_AT_ONCE, *cmd, zygote if warm else ""],
                            capture_output=True, text=True, cwd=project, timeout=60)
    assert parent.returncode == -signal.SIGKILL, parent.stderr
    child = int(parent.stdout)
    # An orphan is reaped by whatever the container's pid 1 is: a zombie has ended too.
    until(lambda: _gone(child) or state(child) == "Z", 30, f"memc-dbt (pid {child}) to end with the parent it never knew alive")
    if (project / "warm.duckdb").exists():
        with duckdb.connect(str(project / "warm.duckdb")) as con:  # the write lock is free
            con.execute("select 1").fetchall()


def test_a_zygote_whose_process_died_while_it_started_ends():
    # Left waiting on its socket for good before (two such zygotes were found five minutes on).
    script = ("import os, signal\nfrom catalog.dbt_child import _zygote, start_zygote\nstart_zygote()\n"
              "print(_zygote[os.getpid()][0].pid, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n")
    parent = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert parent.returncode == -signal.SIGKILL, parent.stderr
    zygote_pid = int(parent.stdout)
    until(lambda: _gone(zygote_pid) or state(zygote_pid) == "Z", 30, f"the zygote (pid {zygote_pid}) to end with its process")


# A zygote whose dbt records, in the file named by RECORD, what a warm-up saves a run: each JSON
# schema built, each (de)serialiser mashumaro compiles, each macro's template compiled (a miss of
# dbt's template cache); each event formatted as a JSON line (by its level); each run started,
# with the pid that did; and the warm-up's end.
_RECORDING_ZYGOTE = """
import os, sys
import dbt_common.clients.jinja as jinja
import dbt_common.dataclass_schema as schemas
import dbt_common.events.logger as logger
from dbt.cli.main import cli
from mashumaro.core.meta.code.builder import CodeBuilder
import catalog.dbt_child as child

RECORD = os.environ["RECORD"]  # a run takes its client's environment

def record(what):
    with open(RECORD, "a") as f:
        f.write(f"{os.getpid()} {what}\\n")

build = schemas.build_json_schema
def recorded_build(cls, *args, **kwargs):
    record("schema " + cls.__qualname__)
    return build(cls, *args, **kwargs)
schemas.build_json_schema = recorded_build

template = jinja.get_template
def recorded_template(string, ctx, node=None, *args, **kwargs):
    if str(getattr(node, "unique_id", "")).startswith("macro."):
        record("template " + node.unique_id)
    return template(string, ctx, node, *args, **kwargs)
jinja.get_template = recorded_template

for name in ("add_unpack_method", "add_pack_method"):
    def recorded_compile(self, _compile=getattr(CodeBuilder, name), _name=name):
        record(f"{_name} {self.cls.__qualname__} {self.format_name}")
        return _compile(self)
    setattr(CodeBuilder, name, recorded_compile)

json_line = logger._JsonLogger.create_line
def recorded_json_line(self, msg):
    record(f"json line {self.name} {msg.info.level}")
    return json_line(self, msg)
logger._JsonLogger.create_line = recorded_json_line

main = cli.main
def recorded_main(*args, **kwargs):
    record("run")
    return main(*args, **kwargs)
cli.main = recorded_main

warm_up = child.warm_up
def recorded_warm_up(parse):
    yield from warm_up(parse)
    record("warmed")
child.warm_up = recorded_warm_up

child.serve(sys.argv[1])
"""


def test_a_warm_run_compiles_nothing_its_zygote_compiled_and_formats_no_line_below_its_level(tmp_path):
    # dbt validates its project, profile, flags, hooks and results, and on a whole parse every
    # node, config, source, unit test and macro doc, against JSON schemas it builds once a
    # process: 0.33 s of a one-message build's dbt step (0.99 s parsing whole) when every run
    # forked from the zygote built them again. Reading its partial parse, a run compiles
    # mashumaro's (de)serialisers of the manifest's classes, and it compiles the templates of the
    # macros it calls: another 0.45 s. The zygote does all three once, from memc's own project
    # parse; this project has one of each thing, parsed whole, then read from its partial parse.
    record, socket_path = tmp_path / "record", str(tmp_path / "z.sock")
    zygote = subprocess.Popen([sys.executable, "-c", _RECORDING_ZYGOTE, socket_path], env={**os.environ, "RECORD": str(record)})
    try:
        until(lambda: record.exists() and f"{zygote.pid} warmed" in record.read_text(), 120, "the recording zygote's warm-up")
        project = _project(tmp_path / "schemas", "select 42 as answer")
        with open(project / "dbt_project.yml", "a") as f:
            f.write("on-run-start: ['select 1']\nmacro-paths: [macros]\n")
        (project / "models" / "answer.yml").write_text(
            "version: 2\n"
            "sources:\n  - name: raw\n    tables:\n      - name: events\n"
            "models:\n  - name: answer\n    columns:\n      - name: answer\n        data_tests: [not_null]\n"
            "unit_tests:\n  - name: answer_is_42\n    model: answer\n    given: []\n    expect:\n      rows: [{answer: 42}]\n")
        (project / "macros").mkdir()
        (project / "macros" / "twice.sql").write_text("{% macro twice(x) %}{{ x }} * 2{% endmacro %}")
        (project / "macros" / "twice.yml").write_text("version: 2\nmacros:\n  - name: twice\n    description: doubles\n")
        for _ in range(2):  # parsed whole, then from its partial parse
            proc = _dbt(project, "build", zygote=socket_path)
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-2000:] + out[-2000:]
    finally:
        zygote.terminate()
        zygote.wait(30)
    lines = [line.split(" ", 1) for line in record.read_text().splitlines()]
    runs = [pid for pid, what in lines if what == "run"]
    assert len(runs) == 2 and str(zygote.pid) not in runs  # dbt ran twice, forked from the zygote
    warmed = {what for pid, what in lines if pid == str(zygote.pid)}
    assert {"schema Project", "schema TestResultData", "schema Hook", "schema UnparsedUnitTest"} <= warmed
    assert {"add_unpack_method Manifest msgpack", "template macro.dbt.run_hooks", "template macro.dbt_duckdb.duckdb__create_table_as"} <= warmed
    done = {pid: [what for p, what in lines if p == pid and what != "run"] for pid in runs}
    assert [what for what in done[runs[0]] if what.startswith("schema")] == []
    # Read from its partial parse, the run compiles no serialiser of the manifest and no template
    # of dbt's or the adapter's macros: only those of this project's own macro, which memc's has not.
    assert not [what for what in done[runs[1]] if what.startswith("schema") or " Manifest " in what
                or what.startswith(("template macro.dbt.", "template macro.dbt_duckdb."))]
    # dbt formats every event for its JSON stdout before Python's logging drops those below the
    # level (info): the debug events of a run (each statement's SQL, its status, the connection)
    # were formatted and thrown away. None is now; the info lines are as before, and the file
    # log (dbt's default: debug, here as JSON too) still gets its debug lines.
    for pid in runs:
        formatted = {what for what in done[pid] if what.startswith("json line")}
        assert {"json line stdout_log info", "json line file_log debug"} <= formatted
        assert "json line stdout_log debug" not in formatted

"""One build at a time per home, and a killed build leaves nothing running or half-recorded:
real `memc build` processes on one home. While one builds, a second is refused at once with one
line naming the first; `kill -9` of the first ends its dbt child too (it ran on for ~10 s,
holding DuckDB's lock); the run it left STARTED is marked failed by the next build, which
succeeds."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from memc.home import MemcHome
from memc.locks import holder
from procfs import children, cmdline, state, until  # tests/ is on sys.path

MEMC = str(Path(sys.executable).with_name("memc"))


def _memc(home: MemcHome, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([MEMC, "--home", str(home.root), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _dbt_child(pid: int) -> int | None:
    for child in children(pid):
        cmd = cmdline(child)
        if any(part.endswith((b"/dbt", b"/memc-dbt")) for part in cmd) and b"build" in cmd:
            return child
    return None


def _gone(pid: int) -> bool:
    return state(pid) in (None, "Z")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and relies on PR_SET_PDEATHSIG")
def test_one_build_at_a_time_and_a_killed_build_leaves_nothing_behind(built_home, tmp_path, monkeypatch):
    # A copy of the built sample home and one new conversation on a new day: the builds are
    # incremental ones (a cold build of the corpus is ~90 s of this test's time spent on nothing
    # it checks), and each still reaches the dbt child the kill needs.
    shutil.copytree(built_home[0].root, tmp_path / "home", symlinks=True)
    home = MemcHome.resolve(tmp_path / "home")
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(
        json.dumps({"conversation_id": "elena-tomasz", "session_id": "elena-tomasz:S9", "session_index": 9, "turn_index": i,
                    "turn_id": f"ET9:{i + 1}", "speaker": who, "text": text, "timestamp": "2024-06-01T09:00:00"}) + "\n"
        for i, (who, text) in enumerate([("Tomasz", "I joined the rowing club in Gdynia last week."),
                                         ("Elena", "Nice! I started a pottery course in Berlin.")])))
    ingest = subprocess.run([MEMC, "--home", str(home.root), "ingest", str(chat), "--scope", "team"], capture_output=True, text=True)
    assert ingest.returncode == 0, ingest.stderr

    first = _memc(home, "build", "--quiet")
    try:
        until(lambda: (holder(home.build_lock) or {}).get("pid") == first.pid, 120, "the first build to take the lock")
        second = _memc(home, "build", "--quiet")
        _, err = second.communicate(timeout=120)
        assert second.returncode != 0
        refusal = [line for line in err.splitlines() if line.strip()]
        assert len(refusal) == 1 and f"memc build (pid {first.pid}" in refusal[0] and "running on this home" in refusal[0], err

        dbt = until(lambda: _dbt_child(first.pid), 240, "the first build's dbt child")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        until(lambda: _gone(dbt), 20, f"dbt (pid {dbt}) to end with its build")
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()

    # The killed build's run is still STARTED in the run storage; the next build fails it first.
    # (The pooled event log finds its folder by DAGSTER_HOME, as memc sets it: set here, not left
    # to an earlier test of the same worker.)
    monkeypatch.setenv("DAGSTER_HOME", str(home.dagster))
    instance = dg.DagsterInstance.from_config(str(home.dagster))
    started = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
    assert [r.tags.get("memc/pid") for r in started] == [str(first.pid)]
    third = _memc(home, "build", "--quiet")
    out, err = third.communicate(timeout=600)
    assert third.returncode == 0, err[-3000:]
    assert out.startswith("built:"), out
    killed = instance.get_run_by_id(started[0].run_id)
    assert killed.status == dg.DagsterRunStatus.FAILURE
    assert holder(home.build_lock) is None  # released, and no stale name left in the file

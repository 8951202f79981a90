"""`memc up` on a loaded machine (issue 20, "daemon health"): the code location is one standalone
code server that nobody's missed heartbeat can end, Dagster's beta notices stay out of the logs,
the UI does not open with its community sign-up form, and `memc down` leaves nothing running.

The starvation is reproduced, not hoped for: the daemon and the webserver are paused with
SIGSTOP for 25 s, longer than the 20 s a daemon-spawned code server waits for a heartbeat
(dagster/_daemon/controller.py). Before, that code server logged "No heartbeat received in 20
seconds, shutting down" and was relaunched. About 80 s (start ~45 s under load, the pause 25 s).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from api.process import free_port
from ui_graphql import graphql

PAUSE = 25  # seconds: past the daemon's 20 s heartbeat timeout


def _memc(home: Path, *args: str, timeout: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1"}
    return subprocess.run([sys.executable, "-m", "cli.main", "--home", str(home), *args], env=env, capture_output=True, text=True, timeout=timeout)


def grpc_servers(pgid: int) -> list[int]:
    """The `dagster api grpc` code servers in a process group."""
    from orchestration.platform import group_members

    return sorted(p for p in group_members(pgid) if b"api\x00grpc" in _cmdline(p))


def _cmdline(pid: int) -> bytes:
    """A process's command line; empty when it exited after the group was listed (a sensor's
    short-lived child can: a CI run read a pid that had gone by then)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def test_one_code_server_outlives_a_starved_daemon_and_the_logs_stay_quiet(tmp_path):
    from memc.home import MemcHome
    from orchestration.platform import group_members, read_pids

    root = tmp_path / "home"
    root.mkdir()
    (root / "memc.toml").write_text("[automation]\nsensor_interval_seconds = 5\n")
    port = free_port()
    up = _memc(root, "up", "--port", str(port), timeout=400)
    assert up.returncode == 0, up.stdout + up.stderr
    home = MemcHome.resolve(root)
    try:
        pids = read_pids(home)
        assert set(pids) == {"code_server", "webserver", "daemon"}, pids
        workspace = (home.dagster / "run" / "workspace.yaml").read_text()
        assert "grpc_server:" in workspace and "python_module" not in workspace, workspace
        # The proxy's one server (run workers the code server launches join its group too).
        code_servers = grpc_servers(pids["code_server"])
        assert len(code_servers) == 1, code_servers
        # Neither client started a code server of its own.
        assert grpc_servers(pids["webserver"]) == grpc_servers(pids["daemon"]) == []

        assert graphql(port, "{ shouldShowNux }")["shouldShowNux"] is False

        for name in ("daemon", "webserver"):
            os.kill(pids[name], signal.SIGSTOP)
        try:
            time.sleep(PAUSE)
        finally:
            for name in ("daemon", "webserver"):
                os.kill(pids[name], signal.SIGCONT)
        # The daemon ticks its sensors again and the UI answers, from the same code server.
        locations = graphql(port, "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus } } } }", timeout=60)
        entries = locations["workspaceOrError"]["locationEntries"]
        assert [(e["name"], e["loadStatus"]) for e in entries] == [("orchestration.definitions", "LOADED")], entries
        time.sleep(10)  # two sensor intervals
        assert grpc_servers(pids["code_server"]) == code_servers

        logs = {p.name: p.read_text(errors="replace") for p in (home.dagster / "logs").glob("*.log")}
        assert {"code_server.log", "webserver.log", "daemon.log"} <= set(logs), sorted(logs)
        for name, text in logs.items():
            assert "No heartbeat received" not in text, (name, text[-2000:])
            assert "BetaWarning" not in text and "PreviewWarning" not in text, (name, text[-2000:])
    finally:
        down = _memc(root, "down", timeout=120)
    assert down.returncode == 0, down.stderr
    assert all(not group_members(pid) for pid in pids.values()), {n: group_members(p) for n, p in pids.items()}

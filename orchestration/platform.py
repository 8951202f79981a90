"""Start and stop the Dagster code server, webserver and daemon for one memory home (`memc up` /
`memc down`).

No Dagster import at module level (the processes import it; `start` opens the instance once). Each process is started in its own
session, so it leads its own process group: stopping signals the whole group (the run workers
the code server starts with it), then waits, then kills what is left. Their pids and ports are
written under ``<home>/dagster/run/``; their logs go to ``<home>/dagster/logs/``.

One code server, started first and shared: ``dagster code-server start`` on a loopback port,
named in ``<home>/dagster/run/workspace.yaml`` as a ``grpc_server`` location. Left to
themselves, the webserver and the daemon each spawn a code server of their own and end it when
it misses a heartbeat for 20 s (the daemon's is fixed at 20 s, dagster/_daemon/controller.py):
on a loaded two-core machine the daemon's code server was relaunched 23 times in 28 minutes,
reloading the definitions (the dbt manifest, ~3 s of CPU) each time and failing the sensor
ticks in flight; pausing the daemon for 25 s reproduces it. A standalone server has no
heartbeat to miss, and one process holds the definitions instead of two (idle memory 0.74 GB
against 1.0 GB, docs/operations.md). The UI's "Reload" still reloads it.

The daemon runs the sensors (inbox, ledger head, automation), the schedules (compaction),
the run queue and the freshness evaluation; the webserver serves the UI and GraphQL on
127.0.0.1 only. Telemetry is off in all three (environment and dagster.yaml, docs/stack-notes.md): behind a
firewall that drops packets its upload has no timeout and shutdown hangs 60 s.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from catalog.dbt_project import ensure_manifest
from memc.home import MemcHome
from memc.processes import free_port, pid_alive
from orchestration.runner import prepare_environment

CODE_LOCATION = ["-m", "orchestration.definitions"]
LOCATION_NAME = "orchestration.definitions"  # what the UI and the run storage call it, as before
# The processes run from the code's root, never from the memory home: Dagster puts the working
# directory on sys.path, and a home's `ledger/` folder would shadow the `ledger` package.
CODE_ROOT = Path(__file__).resolve().parent.parent
PROCESSES = ("code_server", "webserver", "daemon")
# The webserver answers /server_info after 11-15 s here (about 30 s when the dbt manifest is
# stale and gets re-parsed); the bound leaves room for a cold page cache.
START_TIMEOUT = 180.0
STOP_TIMEOUT = 30.0
CHILD_HEARTBEAT_TTL = 120


def run_dir(home: MemcHome) -> Path:
    return home.dagster / "run"


def _tool(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    return str(exe) if exe.exists() else name


def commands(port: int, code_port: int, workspace: Path, host: str = "127.0.0.1") -> dict[str, list[str]]:
    """The three processes, in start order: the code server first, then its two clients."""
    return {
        "code_server": [
            _tool("dagster"), "code-server", "start", *CODE_LOCATION, "-h", "127.0.0.1", "-p", str(code_port),
            "--location-name", LOCATION_NAME, "--startup-timeout", str(int(START_TIMEOUT)),
            # The server proper is a child of this proxy, which heartbeats it; a starved child
            # (a sensor tick holding the GIL) outlives a 2-minute gap, not the default 30 s.
            "--heartbeat-ttl", str(CHILD_HEARTBEAT_TTL),
        ],
        "webserver": [_tool("dagster-webserver"), "-w", str(workspace), "-h", host, "-p", str(port)],
        "daemon": [_tool("dagster-daemon"), "run", "-w", str(workspace)],
    }  # fmt: skip


def write_workspace(home: MemcHome, code_port: int) -> Path:
    """The workspace both clients load: the one code server, by its port."""
    path = run_dir(home) / "workspace.yaml"
    path.write_text(
        "# Written by `memc up`: the webserver and the daemon load the code server it started.\n"
        f"load_from:\n  - grpc_server:\n      host: 127.0.0.1\n      port: {code_port}\n      location_name: {LOCATION_NAME}\n"
    )
    return path


def wait_for_code_server(code_port: int, pid: int, deadline: float) -> None:
    """Return once the code server has loaded the definitions; raise with Dagster's error when
    they failed to load, or when the server died or the deadline passed."""
    from dagster import deserialize_value  # lazy: see the module docstring
    from dagster._grpc.client import DagsterGrpcClient
    from dagster._utils.error import SerializableErrorInfo

    client = DagsterGrpcClient(port=code_port, host="127.0.0.1")
    while time.monotonic() < deadline and pid_alive(pid):
        try:
            loaded = deserialize_value(client.list_repositories())
        except Exception:  # noqa: BLE001 - not listening, or its child not up yet: Dagster raises its own errors
            time.sleep(0.5)
            continue
        if isinstance(loaded, SerializableErrorInfo):
            raise RuntimeError(f"the code location did not load:\n{loaded.to_string()}")
        return
    raise RuntimeError("the code server did not load the code location" + (" (it exited)" if not pid_alive(pid) else " in time"))


def environment(home: MemcHome) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DAGSTER_HOME=str(home.dagster),
        MEMC_HOME=str(home.root),
        DAGSTER_DISABLE_TELEMETRY="1",
        DO_NOT_TRACK="1",
        HF_HUB_OFFLINE="1",
    )
    return env


def _ours(pid: int) -> bool:
    """The pid still runs a Dagster process (not a recycled pid)."""
    try:
        return b"dagster" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return pid_alive(pid)


def read_pids(home: MemcHome) -> dict[str, int]:
    out = {}
    for name in PROCESSES:
        f = run_dir(home) / f"{name}.pid"
        if f.exists():
            try:
                out[name] = int(f.read_text().strip())
            except ValueError:
                pass
    return out


def running(home: MemcHome) -> dict[str, int]:
    return {n: p for n, p in read_pids(home).items() if pid_alive(p) and _ours(p)}


def ui_url(home: MemcHome) -> str | None:
    f = run_dir(home) / "port"
    return f"http://127.0.0.1:{f.read_text().strip()}" if f.exists() else None


def server_info(port: int, timeout: float = 2.0) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=timeout) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def _init_instance() -> None:
    """Create (or migrate) the instance's SQLite storage once, here: the webserver, the daemon
    and their code servers starting on a fresh home would otherwise run the schema migrations
    concurrently and leave "more than one head" in alembic_version (seen here)."""
    import dagster as dg  # lazy: see the module docstring

    with dg.DagsterInstance.get() as instance:
        instance.get_runs(limit=1)


@dataclass
class Started:
    url: str
    pids: dict[str, int]
    logs: dict[str, str]
    already_running: bool = False


def start(home: MemcHome, port: int = 3000, *, timeout: float = START_TIMEOUT) -> Started:
    """Start the webserver and the daemon; return once the UI answers (or raise, having
    stopped whatever was started)."""

    prepare_environment(home)  # dagster.yaml (telemetry off, run queue), env

    ensure_manifest()  # else every process would parse the dbt project on load
    _init_instance()
    live = running(home)
    if live:
        url = ui_url(home) or ""
        return Started(url=url, pids=live, logs={}, already_running=True)
    rd = run_dir(home)
    rd.mkdir(parents=True, exist_ok=True)
    logs_dir = home.dagster / "logs"
    logs_dir.mkdir(parents=True, exist_ok=True)
    env = environment(home)
    code_port = free_port()
    workspace = write_workspace(home, code_port)
    deadline = time.monotonic() + timeout
    pids: dict[str, int] = {}
    logs: dict[str, str] = {}
    for name, cmd in commands(port, code_port, workspace).items():
        log_path = logs_dir / f"{name}.log"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                cwd=str(CODE_ROOT), start_new_session=True,
            )  # fmt: skip
        pids[name] = proc.pid
        logs[name] = str(log_path)
        (rd / f"{name}.pid").write_text(str(proc.pid))
        if name == "code_server":  # the clients would show the location failed while it loads
            try:
                wait_for_code_server(code_port, proc.pid, deadline)
            except RuntimeError as exc:
                stop(home)
                raise RuntimeError(f"{exc}\n--- code_server log ---\n{log_path.read_text(errors='replace')[-3000:]}") from None
    (rd / "port").write_text(str(port))
    while time.monotonic() < deadline:
        if server_info(port):
            return Started(url=f"http://127.0.0.1:{port}", pids=pids, logs=logs)
        dead = [n for n, p in pids.items() if not pid_alive(p)]
        if dead:
            break
        time.sleep(0.5)
    stop(home)
    tail = "".join(f"\n--- {n} ({p}) ---\n" + Path(p).read_text(errors="replace")[-2000:] for n, p in logs.items())
    raise RuntimeError(f"the Dagster UI did not answer on 127.0.0.1:{port} within {timeout:.0f} s{tail}")


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of a process group, from /proc. A zombie counts as gone: in a
    container whose pid 1 does not reap, an orphaned webserver lingers as one."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def _group_alive(pgid: int) -> bool:
    if Path("/proc/self/stat").exists():
        return bool(group_members(pgid))
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def stop(home: MemcHome, *, timeout: float = STOP_TIMEOUT) -> dict[str, str]:
    """Stop the three processes by pid: SIGTERM to each process group (the run workers the code
    server started are in its), wait up to ``timeout`` for every group, then SIGKILL."""
    pids = read_pids(home)
    outcome: dict[str, str] = {}
    targets = {}
    for name, pid in pids.items():
        if not (pid_alive(pid) and _ours(pid)):
            outcome[name] = "not running"
            continue
        targets[name] = pid
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            outcome[name] = "not running"
    targets = {n: p for n, p in targets.items() if n not in outcome}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_group_alive(p) for p in targets.values()):
        time.sleep(0.2)
    for name, pid in targets.items():
        outcome[name] = "stopped"
        if _group_alive(pid):
            outcome[name] = "killed" if pid_alive(pid) else "stopped"  # the leader is what was asked to stop
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    # SIGKILL is asynchronous: give the kernel a moment (bounded) to take the processes down.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_group_alive(p) for p in targets.values()):
        time.sleep(0.1)
    for name in PROCESSES:
        (run_dir(home) / f"{name}.pid").unlink(missing_ok=True)
    (run_dir(home) / "port").unlink(missing_ok=True)
    (run_dir(home) / "workspace.yaml").unlink(missing_ok=True)
    return outcome

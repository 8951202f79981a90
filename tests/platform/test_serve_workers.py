"""`memc serve --workers 2`: two worker processes answer on one port (uvicorn's supervisor).

One real server over a scratch copy of the session's built home. The workers are found as the
server process's children (``/proc``); that both answer is shown by the CPU time each spends on a
burst of asks over fresh connections. Then what crosses processes: the operator's record (written
and removed by the parent, honoured by every worker), an ingest refreshed through one worker and
asked through both, a worker killed with SIGKILL and replaced while the other keeps answering.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from procfs import children, cmdline, cpu_ticks, until  # tests/ is on sys.path

ASK = {"question": "Where does Elena live now?", "scope": "team"}


def _workers(pid: int) -> list[int]:
    """The uvicorn workers of the server ``pid``: its spawned children (not the resource tracker).
    A child that ends between the listing and the read of its command line (the killed worker,
    reaped by the supervisor) is not a worker."""
    return [c for c in children(pid) if any(b"spawn_main" in part for part in cmdline(c))]


def _until_idle(pid: int, seconds: float = 120) -> None:
    """Wait until the process ``pid`` spends no CPU for a second."""
    last = [cpu_ticks(pid)]

    def quiet() -> bool:
        time.sleep(1.0)
        was, last[0] = last[0], cpu_ticks(pid)
        return last[0] == was

    until(quiet, seconds, f"process {pid} to go idle", pause=0)


def _asks(url: str, key: str, n: int, clients: int = 4, ask: dict = ASK) -> list[dict]:
    """``n`` asks from ``clients`` threads, each over a connection of its own (``Connection:
    close``): the kernel hands every connection to whichever worker accepts it first."""
    import httpx2 as httpx

    bodies: list[dict] = []
    lock = threading.Lock()
    todo = iter(range(n))

    def client() -> None:
        while True:
            with lock:
                if next(todo, None) is None:
                    return
            r = httpx.post(f"{url}/v1/ask", json=ask, headers={"Authorization": f"Bearer {key}", "Connection": "close"}, timeout=120)
            assert r.status_code == 200, r.text
            with lock:
                bodies.append(r.json())

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(bodies) == n
    return bodies


@pytest.fixture(scope="module")
def served(built_home, tmp_path_factory):
    """(home, the server, a key for tomasz, an admin key)."""
    from api.auth import KeyStore
    from api.process import ServerProcess
    from memc.home import MemcHome

    home = MemcHome.resolve(tmp_path_factory.mktemp("workers") / "home")
    shutil.copytree(built_home[0].root, home.root, ignore=shutil.ignore_patterns("config"))
    key = KeyStore(home).add("tomasz")[0]
    admin = KeyStore(home).add("ops", admin=True)[0]
    srv = ServerProcess(home.root, args=["--workers", "2"]).start().wait_ready()
    try:
        yield home, srv, key, admin
    finally:
        srv.stop()


def test_both_workers_answer_on_the_one_port(served):
    home, srv, key, _ = served
    workers = _workers(srv.proc.pid)
    assert len(workers) == 2, srv.log()
    # The supervisor never loads the app (api/workers.py): none of the engines' libraries is mapped.
    maps = Path(f"/proc/{srv.proc.pid}/maps").read_text()
    assert not [lib for lib in ("duckdb", "_lancedb", "onnxruntime") if lib in maps]
    _asks(srv.url, key, 4)  # first-touch costs (table opens) out of the measure
    before = {w: cpu_ticks(w) for w in workers}
    bodies = _asks(srv.url, key, 40)
    spent = {w: cpu_ticks(w) - before[w] for w in workers}
    # Each ask costs about 3 ticks (30 ms) of a worker; a worker that answered none spends ~0.
    assert all(ticks >= 5 for ticks in spent.values()), spent
    assert all("Elena lives_in Berlin" in b["rendered"] for b in bodies)
    assert len({b["rendered"].rsplit("query q_", 1)[0] for b in bodies}) == 1  # one context, whoever compiled it


def test_memc_ask_hands_its_question_to_the_workers_through_the_parents_record(served):
    from api import local

    home, srv, _, _ = served
    record = local.read_record(home)
    assert record is not None and record["pid"] == srv.proc.pid  # the parent's: it holds the socket and the record
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1"}
    for _ in range(4):  # both workers take the operator's token
        out = subprocess.run(
            [sys.executable, "-m", "cli.main", "--home", str(home.root), "ask", ASK["question"], "--as", "tomasz", "--scope", "team", "-v"],
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
        assert f"compiled by memc serve (pid {srv.proc.pid}, port {srv.port})" in out.stderr
        assert "Elena lives_in Berlin" in out.stdout


def test_evidence_refreshed_through_one_worker_is_asked_through_both(served):
    import httpx2 as httpx

    home, srv, key, _ = served
    entry = {"content": "Elena keeps a lemon tree on the balcony of her Berlin flat.", "valid_at": "2026-11-30T09:00:00Z", "kind": "observation"}
    r = httpx.post(
        f"{srv.url}/v1/ingest", json={"entries": [entry], "scope": "team", "visibility": ["tomasz"], "refresh": True},
        headers={"Authorization": f"Bearer {key}"}, timeout=300,
    )  # fmt: skip
    assert r.status_code == 200, r.text
    marks = r.json()["watermarks"]
    assert marks["behind"]["evidence_index"] == 0
    bodies = _asks(srv.url, key, 12, ask={"question": "What does Elena keep on her balcony?", "scope": "team"})
    assert all("lemon tree" in b["rendered"] for b in bodies)


def test_a_killed_worker_is_replaced_and_a_stopped_server_removes_its_record(served):
    from api import local

    home, srv, key, _ = served
    first, second = _workers(srv.proc.pid)
    os.kill(first, signal.SIGKILL)
    _asks(srv.url, key, 6)  # the other worker answers meanwhile

    def replaced() -> list[int] | None:  # the supervisor checks its workers every half second
        now = _workers(srv.proc.pid)
        return now if len(now) == 2 and first not in now else None

    workers = until(replaced, 120, "a worker in place of the killed one")
    assert second in workers, srv.log()
    replacement = next(w for w in workers if w != second)
    _until_idle(replacement)  # started: its imports and the model's load are done
    before = cpu_ticks(replacement)
    _asks(srv.url, key, 24)
    assert cpu_ticks(replacement) - before >= 3  # it answers too
    assert local.read_record(home)["pid"] == srv.proc.pid  # a worker's death is not the server's

    srv.stop()  # SIGTERM to the parent: it stops both workers, then removes the record
    assert not local.record_path(home).exists()
    for w in workers:
        assert not Path(f"/proc/{w}").exists()

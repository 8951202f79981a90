"""`memc ask` (and `memc build`) through a running `memc serve` on the same home, and without it (api/local.py).

One real server over the session's built home. The warm ask runs under ``-X importtime``: the
CLI process never imports the compiler, torch or LanceDB, so the context it printed was compiled
by the server (and ``-v`` names the server's pid). Its output, text and JSON, equals what
``--no-server`` compiles in the CLI process, apart from each compile's own query id and latency.
Then the fallbacks: a server that refuses the token, and one killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys

import pytest

from views.embedder_onnx import onnx_path

MEMC = [sys.executable, "-X", "importtime", "-m", "cli.main"]
ASK = ["ask", "Where does Elena live now?", "--as", "tomasz", "--scope", "team"]


def _memc(home, *args):
    """(stdout, stderr without the import-time lines, the modules imported, by full name)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1"}
    out = subprocess.run([*MEMC, "--home", str(home.root), *args], capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    imported = {m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", out.stderr, re.M)}
    stderr = "\n".join(l for l in out.stderr.splitlines() if not l.startswith("import time:"))
    return out.stdout, stderr, imported


def _packages(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def _context(stdout: str) -> str:
    """The printed context without its last line, the compile's own query id."""
    body, _, last = stdout.rstrip("\n").rpartition("\n")
    assert re.fullmatch(r"query q_\w+ \(memc replay q_\w+ QUESTION\)", last), last
    return body


def _same_json(a: str, b: str) -> bool:
    x, y = json.loads(a), json.loads(b)
    for d in (x, y):
        d.pop("query_id"), d.pop("latency_ms")
    return x == y


@pytest.fixture(scope="module")
def server(built_home):
    from api import local
    from api.process import ServerProcess

    home, _ = built_home
    srv = ServerProcess(home.root).start().wait_ready()
    try:
        yield home, srv
    finally:
        srv.stop()
        local.record_path(home).unlink(missing_ok=True)  # left behind only if a test killed it


def test_ask_goes_through_the_running_server_and_prints_what_a_local_compile_does(server):
    from api import local

    home, srv = server
    record = local.read_record(home)
    assert record is not None and record["pid"] == srv.proc.pid and record["port"] == srv.port

    warm, note, imported = _memc(home, *ASK, "-v")
    assert f"compiled by memc serve (pid {srv.proc.pid}, port {srv.port})" in note
    # The CLI process loaded neither the compiler nor what it needs: the server compiled.
    assert "query.config" in imported and "query.compile" not in imported  # the presets, for the options
    assert not _packages(imported) & {"torch", "sentence_transformers", "lancedb", "kuzu", "dagster", "dbt"}

    here, note, imported = _memc(home, *ASK, "-v", "--no-server")
    assert "compiled in this process" in note
    # The local compile loads the model and LanceDB, and still nothing of Dagster, dbt or GE; the
    # model on ONNX Runtime when `make install` exported it (views/embedder_onnx.py), so no torch.
    assert {"lancedb", "query"} <= _packages(imported) and "query.compile" in imported
    assert not _packages(imported) & {"dagster", "dagster_dbt", "dbt", "great_expectations"}
    if onnx_path().is_file():
        assert "onnxruntime" in _packages(imported) and not _packages(imported) & {"torch", "sentence_transformers"}
    else:
        assert "torch" in _packages(imported)
    assert "Elena lives_in Berlin" in warm
    assert _context(warm) == _context(here)

    goal = ["--goal", "ship the desk", "--json"]
    warm_json, _, _ = _memc(home, "ask", "Which order did Tomasz mention?", "--as", "elena", "--scope", "team", *goal)
    here_json, _, _ = _memc(home, "ask", "Which order did Tomasz mention?", "--as", "elena", "--scope", "team", *goal, "--no-server")
    assert _same_json(warm_json, here_json)


def test_the_local_channel_takes_only_the_operator_token_from_loopback(server):
    import httpx2 as httpx

    from api import local
    from api.auth import KeyStore

    home, srv = server
    token = local.read_record(home)["token"]
    key, record = KeyStore(home).add("tomasz")
    body = {"question": "Where does Elena live now?", "asker": "tomasz", "scope": "team"}
    try:
        with httpx.Client(base_url=srv.url, timeout=120) as c:
            assert c.post(local.LOCAL_ASK_PATH, json=body).status_code == 401
            assert c.post(local.LOCAL_ASK_PATH, json=body, headers={"Authorization": f"Bearer {key}"}).status_code == 401  # an API key is not the operator
            assert c.post(local.LOCAL_ASK_PATH, json=body, headers={"Authorization": f"Bearer {token}x"}).status_code == 401
            reserved = c.post(local.LOCAL_ASK_PATH, json={**body, "asker": "memc:admin"}, headers={"Authorization": f"Bearer {token}"})
            assert reserved.status_code == 422  # the rules of --as: no memc: principal
            ok = c.post(local.LOCAL_ASK_PATH, json=body, headers={"Authorization": f"Bearer {token}"})
            assert ok.status_code == 200 and ok.json()["asker"] == "tomasz" and "rendered" in ok.json()
            # The build route takes the same token only (no build runs here: refused before the body).
            assert c.post(local.LOCAL_BUILD_PATH, json={}).status_code == 401
            assert c.post(local.LOCAL_BUILD_PATH, json={}, headers={"Authorization": f"Bearer {key}"}).status_code == 401
            paths = c.get("/openapi.json").json()["paths"]
            assert local.LOCAL_ASK_PATH not in paths and local.LOCAL_BUILD_PATH not in paths
    finally:
        KeyStore(home).revoke(record["key_id"])


def test_a_refusing_server_falls_back_with_a_note(server):
    from api import local

    home, srv = server
    path = local.record_path(home)
    saved = path.read_text()
    record = json.loads(saved)
    try:
        path.write_text(json.dumps({**record, "token": "not-the-token"}))  # e.g. a record of a restarted server's predecessor
        out, note, imported = _memc(home, *ASK)
        assert re.search(rf"memc serve \(pid {srv.proc.pid}, port {srv.port}\) answered 401 unauthenticated.*; compiling in this process", note)
        assert len([l for l in note.splitlines() if l.startswith("memc ask:")]) == 1 and "query.compile" in imported
    finally:
        path.write_text(saved)
    warm, note, _ = _memc(home, *ASK, "-v")
    assert "compiled by memc serve" in note
    assert _context(out) == _context(warm)


def test_a_killed_server_is_ignored_and_a_stopped_one_removes_its_record(server, built_home):
    from api import local
    from api.process import ServerProcess

    home, srv = server
    warm, _, _ = _memc(home, *ASK)
    os.kill(srv.proc.pid, signal.SIGKILL)
    srv.proc.wait()
    assert local.record_path(home).exists()  # SIGKILL: nothing ran to remove it
    out, note, imported = _memc(home, *ASK)
    assert "memc ask:" not in note and "query.compile" in imported  # a dead pid's record: compiled here, silently
    assert _context(out) == _context(warm)

    with ServerProcess(home.root) as again:  # a graceful stop (SIGTERM) removes the record
        assert local.read_record(home)["pid"] == again.proc.pid
    assert not local.record_path(home).exists()


def test_memc_build_runs_in_the_running_server_and_falls_back_to_this_process(built_home, tmp_path):
    """`memc build` after a new message is run by the server of the home (the CLI process
    imports neither Dagster nor dbt), which leaves every view at the new head: the same build
    in the CLI process then finds nothing to do, whether the server refused it (a stale token:
    a one-line note) or --no-server was given (silently)."""
    import shutil
    from datetime import datetime, timezone

    from api import local
    from api.process import ServerProcess
    from conftest import relocate_warehouse
    from ledger import Ledger
    from ledger.schema import NewEntry
    from memc.home import MemcHome

    src, _ = built_home
    shutil.copytree(src.root, tmp_path / "home", symlinks=True)
    relocate_warehouse(tmp_path / "home", src.root)
    home = MemcHome.resolve(tmp_path / "home")
    local.record_path(home).unlink(missing_ok=True)  # the session's server is not this copy's
    now = datetime.now(timezone.utc)
    head = Ledger(home.ledger).append([NewEntry(kind="message", scope="team", actor="Tomasz", session_id="s9",
                                                content="I moved to Hamburg in the spring.", valid_at=now)]).head  # fmt: skip
    with ServerProcess(home.root) as srv:
        out, note, imported = _memc(home, "build")
        assert f"memc build: building in memc serve (pid {srv.proc.pid}, port {srv.port})" in note
        assert out.startswith("built: ") and out.rstrip().endswith(f"ledger head {head}"), out
        assert not _packages(imported) & {"dagster", "dbt", "dagster_dbt", "lancedb", "kuzu", "great_expectations", "spacy"}

        path = local.record_path(home)
        saved = path.read_text()
        try:
            path.write_text(json.dumps({**json.loads(saved), "token": "not-the-token"}))
            out, note, imported = _memc(home, "build", "--quiet")
            assert re.search(rf"memc serve \(pid {srv.proc.pid}, port {srv.port}\) answered 401 unauthenticated.*; building in this process", note)
            assert out.startswith(f"up to date: every view is at ledger head {head}") and "dagster" in _packages(imported)
        finally:
            path.write_text(saved)
        out, note, _ = _memc(home, "build", "--quiet", "--no-server")
        assert "memc build:" not in note and out.startswith("up to date")

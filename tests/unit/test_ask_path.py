"""What `memc ask` loads, and the record by which it finds a running `memc serve` (api/local.py).

The imports are checked in fresh interpreters (a module imported by an earlier test of this
session would hide one the CLI pulls in): the command line, `memc --help`, and the ask
command's own import path (its module, the client of the local channel, and the compiler it
falls back to) load no Dagster, dbt or Great Expectations. The warm path's module loads no
torch, sentence-transformers or LanceDB either: those are what a running server spares.
tests/platform/test_ask_warm.py runs the real `memc ask` both ways under `-X importtime`.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from api import local
from memc.home import MemcHome
from procfs import until  # tests/ is on sys.path

ORCHESTRATION = ("dagster", "dagster_dbt", "dbt", "great_expectations")
MODEL_AND_STORES = ("torch", "sentence_transformers", "transformers", "lancedb", "kuzu", "fastapi", "uvicorn")


def _loaded(code: str) -> set[str]:
    """Top-level packages in sys.modules after ``code`` runs in a fresh interpreter."""
    script = f"{code}\nimport sys, json\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_the_command_line_and_help_load_no_orchestration():
    assert not _loaded("import cli.main") & {*ORCHESTRATION, *MODEL_AND_STORES}
    # --help imports every command's module for its one-line help, and still no Dagster or dbt.
    loaded = _loaded("from cli.main import cli\ntry:\n    cli(['--help'], standalone_mode=False)\nexcept SystemExit:\n    pass")
    assert "cli" in loaded and not loaded & set(ORCHESTRATION)


def test_the_ask_path_loads_no_orchestration():
    # The command as click resolves it, and the channel to a running server: not even the model.
    warm = _loaded("import click\nfrom cli.main import cli\ncli.get_command(click.Context(cli), 'ask')\nimport api.local")
    assert "query" in warm and not warm & {*ORCHESTRATION, *MODEL_AND_STORES}
    # The local compile: the compiler and every route's module. (LanceDB, Kùzu and the model load
    # when a route first runs: tests/platform/test_ask_warm.py checks a real compile's imports.)
    cold = _loaded("import query.compile, query.retrieve, views.vectors, views.embedder, views.graph")
    assert {"query", "views", "ledger"} <= cold and not cold & set(ORCHESTRATION)


@pytest.fixture
def home(tmp_path):
    return MemcHome.resolve(tmp_path / "home").ensure()


@pytest.fixture
def serving():
    """A live process whose argv names `serve`, as a `memc serve` does (stopped at the end)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "serve"])
    # Until it has exec'd: between fork and exec /proc shows pytest's own command line (ci87 read
    # the record in that window and found no server).
    until(lambda: b"serve" in Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0"), 30, "the stand-in server to start")
    yield proc
    proc.kill()
    proc.wait()


def _record(home, **fields):
    path = local.record_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": local.FORMAT, "host": "127.0.0.1", "port": 8765, "token": "t" * 43, **fields}))


def test_the_record_is_private_to_the_operator(home):
    path = local.write_record(home, host="127.0.0.1", port=8765, token="secret", version="0")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    record = json.loads(path.read_text())
    assert record["pid"] == os.getpid() and record["port"] == 8765 and record["token"] == "secret"
    assert not [p for p in path.parent.iterdir() if p != path]  # no temporary file left beside it


def test_a_record_counts_only_while_a_serve_process_runs_it(home, serving):
    _record(home, pid=serving.pid)
    found = local.read_record(home)
    assert found is not None and found["pid"] == serving.pid and found["connect"] == "127.0.0.1"
    _record(home, pid=os.getpid())  # alive, but pytest, not a server: a recycled pid
    assert local.read_record(home) is None
    gone = subprocess.Popen([sys.executable, "-c", "pass", "serve"])
    gone.wait()
    _record(home, pid=gone.pid)  # a server killed with SIGKILL leaves its record behind
    assert local.read_record(home) is None


def test_records_the_cli_cannot_use_are_ignored(home, serving):
    _record(home, pid=serving.pid, host="192.0.2.10")  # bound outside only: not over loopback
    assert local.read_record(home) is None
    _record(home, pid=serving.pid, token="")
    assert local.read_record(home) is None
    _record(home, pid=serving.pid, format="memc-serve/0")
    assert local.read_record(home) is None
    local.record_path(home).write_text("{not json")
    assert local.read_record(home) is None
    _record(home, pid=serving.pid, host="0.0.0.0")  # every address: loopback among them
    assert local.read_record(home)["connect"] == "127.0.0.1"


def test_a_server_removes_only_its_own_record(home):
    local.write_record(home, host="127.0.0.1", port=1, token="first", version="0")
    local.write_record(home, host="127.0.0.1", port=2, token="second", version="0")  # a second server on the same home
    local.remove_record(home, "first")  # the first stops
    assert json.loads(local.record_path(home).read_text())["token"] == "second"
    local.remove_record(home, "second")
    assert not local.record_path(home).exists()


def test_loopback_and_tokens():
    assert [local.connect_host(h) for h in ("127.0.0.1", "localhost", "0.0.0.0", "::", "::1", "10.0.0.5")] == [
        "127.0.0.1", "127.0.0.1", "127.0.0.1", "::1", "::1", None,
    ]  # fmt: skip
    assert local.is_loopback("127.0.0.2") and not local.is_loopback("192.0.2.1") and not local.is_loopback(None)
    token = local.new_token()
    assert local.check_token(token, token) and not local.check_token(token[:-1] + "x", token)
    assert not local.check_token(None, token) and not local.check_token("", "")


def test_an_unreachable_server_is_reported_not_raised_past_the_cli(serving):
    from api.process import free_port

    record = {"pid": serving.pid, "port": free_port(), "connect": "127.0.0.1", "token": "t"}  # nothing listens there
    with pytest.raises(local.ServerUnavailable, match="unreachable"):
        local.ask(record, {"question": "q", "asker": "a"})

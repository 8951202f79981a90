"""`memc-dbt`: the dbt that builds run, ended with the process that started it, and started warm.

dagster-dbt starts dbt as a child process. When a build is killed (``kill -9``, the OOM killer),
nothing ends that child: dbt ran on for about ten seconds after its build was gone, still
holding DuckDB's write lock, and the next build failed on it. This wrapper asks the kernel for
SIGTERM when its parent dies (Linux ``PR_SET_PDEATHSIG``), then runs dbt so that the signal
reaches it. catalog/dbt_project.dbt_executable() names it to dagster-dbt.

**Warm starts.** dbt's imports are ~1.1-1.5 s of every dbt step (py-spy of the one-message
build, docs/benchmarks.md), paid again by every build. A memc process that builds starts one
*zygote* (:func:`start_zygote`, ``memc-dbt --zygote SOCKET``): a process that imports dbt and the
DuckDB adapter once, then waits on a UNIX socket in a private temporary folder. When
``MEMC_DBT_ZYGOTE`` names that socket, memc-dbt hands the zygote its arguments, environment,
working directory and its three standard streams (passed as file descriptors), and the zygote
forks a handler, which forks the dbt run: a fresh process with dbt already imported, writing
straight into dagster-dbt's pipe. The handler tells memc-dbt the run's pid (memc-dbt forwards
SIGTERM and SIGINT to it) and then its exit status; if memc-dbt goes away first (killed with its
build), the handler ends the run. Each run is a process of its own, so nothing dbt or DuckDB holds
outlives it (dbt in the build's own process, `dbtRunner`, kept the warehouse open). Without a
zygote, or when it does not answer, memc-dbt replaces itself with dbt as before.

**Warm-up.** After its imports the zygote also does, once, what every run did again for itself:
the JSON schemas dbt validates against, the (de)serialisers mashumaro compiles for dbt's classes
on first use, and the Jinja templates of the project's and the adapters' macros (dbt's
``template_cache``, keyed by the macro's SQL). A run inherits them through the fork. It works
in small steps and gives way to a run that is waiting, so it never delays one: the warm-up
goes on after the fork, and the runs after that inherit more. A process that builds once (a
run the Dagster daemon launched) then forks its dbt as soon as the imports are done. And the
zygote makes dbt's loggers format an event's line only when their level lets it through
(:func:`lines_only_at_their_level`): what they write is the same, without the debug lines dbt
formatted and dropped.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
ZYGOTE_ENV = "MEMC_DBT_ZYGOTE"
# The pid of the memc process that starts memc-dbt (catalog/dbt_project.dbt_home_environ and
# start_zygote set it): the parent memc-dbt must still have once it has asked to die with it.
PARENT_ENV = "MEMC_DBT_PARENT"
# What a run imports beyond `dbt.cli.main` (a dbtRunner build's new modules, less the stdlib's).
_WARM_IMPORTS = (
    "dbt.cli.main", "dbt.adapters.duckdb", "dbt.task.build", "dbt.task.run", "dbt.task.test", "dbt.compilation",
    "dbt.parser.sql", "dbt_common.clients.agate_helper", "sqlparse",
)  # fmt: skip
# The classes whose JSON schemas dbt builds in a `dbt build` of memc's project: to validate the
# project, profile, flags, hooks and test results in every build, and its nodes, configs, sources,
# unit tests and macro docs when it parses the project whole (a first build, or the project
# changed). dbt caches a class's schema for the life of its process, but every run forked from the
# zygote built them afresh: 0.33 s of each one-message build's ~3.5 s dbt step on the sample home,
# 0.99 s of a build that parses whole (the `build_json_schema` calls of one run, timed). The
# zygote builds them once (~1.1 s), so its runs inherit them.
_WARM_SCHEMAS = (
    "dbt.contracts.project:Configuration", "dbt.contracts.project:Project", "dbt.contracts.project:ProjectFlags",
    "dbt.contracts.project:PackageConfig", "dbt.contracts.project:ProfileConfig", "dbt.contracts.selection:SelectorFile",
    "dbt.artifacts.resources.v1.config:Hook", "dbt.task.test:TestResultData", "dbt.adapters.duckdb.credentials:DuckDBCredentials",
    # a whole parse
    "dbt.contracts.graph.nodes:ModelNode", "dbt.contracts.graph.nodes:HookNode", "dbt.contracts.graph.nodes:GenericTestNode",
    "dbt.contracts.graph.unparsed:UnparsedSourceDefinition", "dbt.contracts.graph.unparsed:UnparsedModelUpdate",
    "dbt.contracts.graph.unparsed:UnparsedUnitTest", "dbt.contracts.graph.unparsed:UnparsedMacroUpdate",
    "dbt.artifacts.resources.v1.model:ModelConfig", "dbt.artifacts.resources.v1.config:NodeConfig",
    "dbt.artifacts.resources.v1.config:TestConfig", "dbt.artifacts.resources.v1.source_definition:SourceConfig",
    "dbt.artifacts.resources.v1.components:Contract", "dbt.artifacts.resources.v1.unit_test_definition:UnitTestConfig",
)  # fmt: skip
# The project's own parse, which `make manifest` (dbt parse) leaves beside the manifest Dagster
# loads: what the zygote decodes to compile mashumaro's (de)serialisers of the manifest's classes
# (88 of the 115 a one-message build's run compiled, lazily as dbt's dataclasses do: ~0.2 s) and
# the templates of its 632 macros (1.2 s in the zygote; ~0.2 s of every run, for the 164 a build
# calls). Together 0.45-0.5 s of each warm run of a one-message build on the sample home (2.5-2.66
# -> 2.02-2.10 s, docs/benchmarks.md). A parse another dbt version wrote, or none, only leaves
# them to the runs.
PROJECT_PARSE = Path(__file__).resolve().parents[1] / "dbt_project" / "target" / "partial_parse.msgpack"
_LEN = struct.Struct("!I")
# Seconds a run may take to end after SIGTERM once its memc-dbt is gone, before SIGKILL.
_TERM_GRACE_S = 10.0


def _starting_parent() -> int:
    """The process that started this one. Not ``os.getppid()`` read at start-up alone: a build
    killed while this interpreter was still starting (its first ~0.1-0.5 s, longer on a busy
    machine) has already handed it to the reaper, whose pid getppid() then returns, and the
    check in :func:`_die_with_parent` passed: a dbt started that way ran to its end, 9-15 s of
    holding DuckDB's write lock after its build was gone. So the starting process names itself
    in ``MEMC_DBT_PARENT``; without it (memc-dbt run by hand) the parent is whichever it is now."""
    named = os.environ.get(PARENT_ENV, "").strip()
    return int(named) if named.isdigit() else os.getppid()


def _die_with_parent(parent: int) -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        if os.getppid() != parent:  # the parent died before the request took hold
            sys.exit(f"memc-dbt: the process that started it (pid {parent}) is gone")


def main() -> None:
    parent = _starting_parent()
    os.environ.pop(PARENT_ENV, None)  # it names this process's parent, not that of dbt's children
    _die_with_parent(parent)
    if len(sys.argv) == 3 and sys.argv[1] == "--zygote":
        serve(sys.argv[2])
        return
    if path := os.environ.get(ZYGOTE_ENV):
        code = run_in_zygote(path, sys.argv[1:])
        if code is not None:
            sys.exit(code)
    dbt = Path(sys.executable).with_name("dbt")
    os.execv(dbt, [str(dbt), *sys.argv[1:]])


# -- the client: memc-dbt as dagster-dbt starts it ------------------------------------------------


def run_in_zygote(path: str, argv: list[str]) -> int | None:
    """Run dbt ``argv`` in the zygote at ``path``; its exit code, or None when the zygote could not
    start it (not there, not answering): the caller runs dbt itself."""
    # Installed before the run exists: a SIGTERM or SIGINT that comes first is held for it (or, if
    # the zygote never starts it, ends memc-dbt), never lost between the fork and the pid's arrival.
    run: list[int] = []
    held: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        if run:
            os.kill(run[0], signum)
        else:
            held.append(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        request = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
        socket.send_fds(sock, [_LEN.pack(len(request)) + request], [0, 1, 2])
        replies = sock.makefile("rb")
        started = replies.readline()  # after the zygote's imports: a zygote starting up is waited for
    except OSError:
        started = b""
    if not started:
        sock.close()
        if held:
            return 128 + held[0]  # told to stop before any dbt ran
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        return None  # no zygote, or it ended before it forked the run: dbt runs here
    pid = json.loads(started)["pid"]
    run.append(pid)
    for signum in held:
        os.kill(pid, signum)
    ended = replies.readline()
    sock.close()
    if not ended:
        print(f"memc-dbt: the zygote's handler of dbt (pid {pid}) ended without its exit status", file=sys.stderr)
        return 1
    status = json.loads(ended)["status"]
    return status if status >= 0 else 128 - status  # killed by signal N: 128 + N, as a shell says


# -- the zygote ---------------------------------------------------------------------------------


def serve(path: str) -> None:
    """Bind ``path``, import dbt, then fork a handler per connection (never returns normally)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)  # first, so that a client arriving during the imports waits for them
    os.chmod(path, 0o600)
    listener.listen(16)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        import importlib

        for name in _WARM_IMPORTS:
            importlib.import_module(name)
        lines_only_at_their_level()
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the handlers
        warming: Iterator[None] | None = warm_up(PROJECT_PARSE)
        while True:
            # One step of the warm-up at a time while no run waits (a step is ~0.05-0.2 s).
            if warming is not None and not select.select([listener], [], [], 0)[0]:
                if next(warming, _DONE) is _DONE:
                    warming = None
                continue
            conn, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the handler waits for its run
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                code = 0
                try:
                    _handle(conn)
                except BaseException:  # noqa: BLE001 - a handler must never return into the accept loop
                    code = 1
                finally:
                    os._exit(code)
            conn.close()
    finally:
        Path(path).unlink(missing_ok=True)
        try:
            os.rmdir(os.path.dirname(path))  # start_zygote's folder, when its process could not remove it
        except OSError:
            pass


_DONE = object()
# dbt's event levels, as dbt_common's loggers send them to Python's logging (send_to_logger).
_PYTHON_LEVELS = {"debug": 10, "test": 10, "info": 20, "warn": 30, "error": 40}


def lines_only_at_their_level() -> bool:
    """Make dbt's loggers format an event only when their level lets it through; whether it could.

    dbt_common's ``_Logger.write_line`` formats every event for every logger (for the JSON
    stdout memc-dbt gives dagster-dbt: protobuf to dict, JSON, the secrets scrubbed) and then
    hands the line to a Python logger whose level drops it: the 1,153 debug events of a
    one-message build's run (beside 123 at info) were formatted and thrown away, twice with the
    file log's, ~0.3 s of its ~2.1 s (2.04-2.13 -> 1.74-1.80 s, docs/benchmarks.md). Here the same
    check comes first: a line below its logger's level is not made, and what is written does not
    change (a print event goes out as an error, as dbt sends it). Left as it is when dbt_common
    no longer has these names."""
    try:
        from dbt_common.events import logger as dbt_logger

        write_line, is_print = dbt_logger._Logger.write_line, dbt_logger._is_print_event
    except (ImportError, AttributeError):
        return False

    def write_line_at_level(self, msg):  # noqa: ANN001, ANN202 - dbt's own signature
        python_logger = self._python_logger
        if python_logger is not None and not is_print(msg):
            if not python_logger.isEnabledFor(_PYTHON_LEVELS.get(msg.info.level, 40)):
                return None
        return write_line(self, msg)

    dbt_logger._Logger.write_line = write_line_at_level
    return True


def warm_up(parse: Path) -> Iterator[None]:
    """The zygote's warm-up, a step per ``next``, in the order of what each second of it saves a
    run: the manifest's classes from ``parse``, then the JSON schemas of :data:`_WARM_SCHEMAS`,
    then the macros' templates. Whatever fails is left to the runs, as before: a warm-up never fails the zygote
    (a class a later dbt moved, a parse another dbt version wrote, none at all)."""
    import importlib

    try:
        from dbt.contracts.graph.manifest import Manifest
        from dbt.parser.manifest import extended_mashumuro_decoder
        from dbt_common.clients.jinja import template_cache

        # As dbt reads its partial parse (ManifestLoader.read_manifest_for_partial_parse), then
        # the flat graph every run builds from it (Manifest.build_flat_graph).
        manifest = Manifest.from_msgpack(parse.read_bytes(), decoder=extended_mashumuro_decoder)
        manifest.build_flat_graph()
        macros = list(manifest.macros.values())
    except Exception:  # noqa: BLE001 - a warm-up only
        macros = []
    yield
    for name in _WARM_SCHEMAS:
        module, _, cls = name.partition(":")
        try:
            getattr(importlib.import_module(module), cls).json_schema()
        except Exception:  # noqa: BLE001 - a warm-up only; the run validates as dbt always does
            pass
        yield
    for start in range(0, len(macros), 50):
        for macro in macros[start : start + 50]:
            try:
                template_cache.get_node_template(macro)
            except Exception:  # noqa: BLE001 - the run compiles it, and reports what is wrong with it
                pass
        yield


def _read_request(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    if len(data) < _LEN.size or len(fds) != 3:
        raise ValueError("a request is its length, then JSON, with three file descriptors")
    (size,) = _LEN.unpack_from(data)
    data = data[_LEN.size :]
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ValueError("the request ended early")
        data += chunk
    return json.loads(data), fds


def _client_gone(conn: socket.socket, timeout: float = 0.0) -> bool:
    readable, _, _ = select.select([conn], [], [], timeout)
    return bool(readable) and not conn.recv(1, socket.MSG_PEEK)


def _handle(conn: socket.socket) -> None:
    request, fds = _read_request(conn)
    if _client_gone(conn):  # it stopped waiting (its build ended): run nothing
        return
    handler = os.getpid()
    pid = os.fork()
    if pid == 0:
        conn.close()
        os._exit(_run_dbt(request, fds, handler))
    for fd in fds:
        os.close(fd)
    conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    pidfd = os.pidfd_open(pid)
    while True:
        readable, _, _ = select.select([conn, pidfd], [], [])
        if pidfd in readable:
            break
        if _client_gone(conn):  # memc-dbt was killed with its build: end the run too
            os.kill(pid, signal.SIGTERM)
            if not select.select([pidfd], [], [], _TERM_GRACE_S)[0]:
                os.kill(pid, signal.SIGKILL)
            break
    _, status = os.waitpid(pid, 0)
    try:
        conn.sendall(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode() + b"\n")
    except OSError:
        pass  # nobody is waiting any more


def _run_dbt(request: dict, fds: list[int], handler: int) -> int:
    """In the run's process: take the client's streams, environment and folder, then run dbt as
    its console script does (click's standalone mode: the exit code is dbt's)."""
    try:
        _die_with_parent(handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own streams, for its life
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        for sig in (signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        from dbt.cli.main import cli

        try:
            cli.main(args=request["argv"], prog_name="dbt")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported on the client's stderr, never into the zygote
        import traceback

        traceback.print_exc()
        code = 2
    # The run ends with os._exit (its stack is the zygote's), which skips the exit handlers a dbt
    # started from its console script runs. dbt-duckdb's handler is what closes the warehouse, and
    # DuckDB checkpoints its write-ahead log only when a database is closed: without it every warm
    # run left its writes in memc.duckdb.wal (9 MB after 30 one-message builds of the sample
    # home, up to DuckDB's 16 MB auto-checkpoint), which every later open of the warehouse
    # replayed (dbt's own start, the state asset's column types: 0.27 s an open against 0.01).
    atexit._run_exitfuncs()  # a handler that raises is reported (sys.unraisablehook), as at an exit
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    return code


# -- starting the zygote, from a memc process ----------------------------------------------------

_zygote: dict[int, tuple[subprocess.Popen, str]] = {}  # by the pid that started it (a fork starts its own)


def start_zygote() -> str | None:
    """The socket of this process's zygote, started on the first call (its imports then run
    beside whatever the process does next); None where memc-dbt is not installed, or with
    ``MEMC_DBT_WARM=0`` (every dbt step then starts dbt afresh)."""
    if os.environ.get("MEMC_DBT_WARM", "1").strip() == "0":
        return None
    mine = _zygote.get(os.getpid())
    if mine is not None and mine[0].poll() is None:
        return mine[1]
    exe = Path(sys.executable).with_name("memc-dbt")
    if not exe.exists() or not hasattr(socket, "send_fds") or not hasattr(os, "pidfd_open"):
        return None
    folder = tempfile.mkdtemp(prefix="memc-dbt-")  # 0700, and short: a socket path has ~100 bytes
    path = os.path.join(folder, "zygote.sock")
    proc = subprocess.Popen([str(exe), "--zygote", path], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, PARENT_ENV: str(os.getpid())})
    _zygote[os.getpid()] = (proc, path)

    def stop() -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(folder, ignore_errors=True)

    atexit.register(stop)
    return path


if __name__ == "__main__":
    main()

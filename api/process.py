"""Run `memc serve` as a child process on a free loopback port: what the tests and the HTTP
benchmark use to talk to a real server over real sockets."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Sequence

from memc.processes import free_port


class ServerProcess:
    """``with ServerProcess(home_dir) as srv: srv.url`` - a started server, stopped on exit.

    The server's stderr (uvicorn's log, tracebacks of internal errors) goes to ``log_path``."""

    def __init__(
        self, home: str | os.PathLike[str], *, args: Sequence[str] = (), log_path: str | os.PathLike[str] | None = None, timeout: float = 120,
        keep_fresh: bool = False,
    ):  # fmt: skip
        self.home = Path(home)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # Tests and benchmarks decide when views are built: a server building by itself would
        # race them (``keep_fresh=True`` is the default `memc serve`, tested on its own).
        self.args = list(args) + ([] if keep_fresh else ["--no-keep-fresh"])
        self.log_path = Path(log_path) if log_path else self.home.parent / f"serve-{self.port}.log"
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None

    def start(self) -> "ServerProcess":
        cmd = [sys.executable, "-m", "cli.main", "--home", str(self.home), "serve", "--port", str(self.port), "--log-level", "warning", *self.args]
        self._log = open(self.log_path, "wb")
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1", "DO_NOT_TRACK": "1"}
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        return self

    def wait_ready(self) -> "ServerProcess":
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"memc serve exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.url}/v1/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"memc serve did not answer within {self.timeout}s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, "_log", None):
            self._log.close()

    def __enter__(self) -> "ServerProcess":
        return self.start().wait_ready()

    def __exit__(self, *exc) -> None:
        self.stop()

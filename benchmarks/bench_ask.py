"""`memc ask` from a cold process: wall time of the whole command in a fresh subprocess, the way
a user or an agent's shell runs it, over the built sample corpus.

Measured, each ``reps`` times in a fresh interpreter and interleaved (one of each per round, so
a burst of load on the shared machine hits all of them alike), median reported:

- ``interpreter``: ``python -c "import memc"``, the baseline every command pays;
- ``help``: ``memc --help`` (every command's module, for its one-line help);
- ``ask_warm``: ``memc ask`` with a `memc serve` running on the home (its model loaded): the CLI
  hands the question over (api/local.py);
- ``ask_cold``: ``memc ask --no-server``: the compile in the CLI process;
- ``model_floor``: ``python -c`` that only imports the question embedder the ask uses
  (``views.embedder_onnx.question_embedder``: ONNX Runtime when `make install` exported the
  model, else torch), loads MiniLM and embeds one question: what ``ask_cold`` cannot go below
  while the question's embedding is computed in the asking process.

Then one ``-X importtime`` run of each ask: the packages that cost the most to import (their
cumulative time; a thread's imports overlap the main thread's), and how many modules load."""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import REPO, built_sample_home

QUESTION = "Where does Elena live now?"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1", "DO_NOT_TRACK": "1"}
FLOOR = "from views.embedder_onnx import question_embedder; question_embedder(threads=1).encode(['Where does Elena live now?'])"


def _wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=REPO, timeout=600)
    dt = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{out.stderr[-2000:]}")
    return dt


def _imports(cmd: list[str], top: int = 10) -> dict[str, Any]:
    """The costliest top-level packages of one run under ``-X importtime`` (cumulative ms of each
    package's own import), and the number of modules imported."""
    out = subprocess.run([sys.executable, "-X", "importtime", *cmd[1:]], capture_output=True, text=True, env=ENV, cwd=REPO, timeout=600)
    cost: dict[str, int] = {}
    modules = 0
    for m in re.finditer(r"^import time:\s+\d+ \|\s+(\d+) \|\s*(\S+)$", out.stderr, re.M):
        modules += 1
        name = m.group(2)
        if "." not in name:
            cost[name] = max(cost.get(name, 0), int(m.group(1)))
    best = sorted(cost.items(), key=lambda kv: -kv[1])[:top]
    return {"modules": modules, "top_ms": {n: round(us / 1000) for n, us in best}}


def run(home=None, *, reps: int = 5) -> dict[str, Any]:
    """``home``: a built memory home (default: the sample corpus, built in a temp dir)."""
    from api.process import ServerProcess

    with tempfile.TemporaryDirectory() as tmp:
        if home is None:
            home = built_sample_home(Path(tmp))
        memc = [sys.executable, "-m", "cli.main", "--home", str(home.root)]
        ask = [*memc, "ask", QUESTION, "--as", "tomasz", "--scope", "team"]
        cmds = {
            "interpreter": [sys.executable, "-c", "import memc"],
            "help": [sys.executable, "-m", "cli.main", "--help"],
            "ask_cold": [*ask, "--no-server"],
            "model_floor": [sys.executable, "-c", FLOOR],
        }
        times: dict[str, list[float]] = {name: [] for name in [*cmds, "ask_warm"]}
        with ServerProcess(home.root, log_path=Path(tmp) / "serve.log") as srv:
            first = _wall(ask)  # the server's first ask: waits for its model if still loading
            for _ in range(reps):
                for name, cmd in cmds.items():
                    if name == "ask_cold":
                        times["ask_warm"].append(_wall(ask))
                    times[name].append(_wall(cmd))
            warm_imports = _imports(ask)
            served = "compiled by memc serve" in subprocess.run([*ask, "-v"], capture_output=True, text=True, env=ENV, cwd=REPO).stderr
            srv_pid = srv.proc.pid
        cold_imports = _imports(cmds["ask_cold"])
    med = {name: statistics.median(v) for name, v in times.items()}
    base = med["interpreter"]
    return {
        "reps": reps,
        "median_s": {name: round(v, 3) for name, v in med.items()},
        "min_s": {name: round(min(v), 3) for name, v in times.items()},
        "over_interpreter": {name: round(v / base, 2) for name, v in med.items() if name != "interpreter"},
        "cold_over_warm": round(med["ask_cold"] / med["ask_warm"], 1),
        "cold_over_model_floor": round(med["ask_cold"] / med["model_floor"], 2),
        "first_warm_ask_s": round(first, 2),
        "warm_answered_by_server": served,
        "server_pid": srv_pid,
        "imports_ask_warm": warm_imports,
        "imports_ask_cold": cold_imports,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))

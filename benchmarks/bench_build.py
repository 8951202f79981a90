"""Time a full build of the sample corpus through Dagster, step by step, in a fresh memory home.

Also times an immediate rebuild (nothing new: the incremental paths) in the same process, so the
report can give the rebuild as a ratio of the cold build."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _timed_build(home) -> tuple[float, dict[str, float]]:
    from orchestration.runner import build

    steps: dict[str, float] = {}
    started: dict[str, float] = {}

    def on_event(kind: str, step: str | None) -> None:
        now = time.perf_counter()
        if kind == "STEP_START" and step:
            started[step] = now
        elif kind in ("STEP_SUCCESS", "STEP_FAILURE") and step in started:
            steps[step] = steps.get(step, 0.0) + now - started.pop(step)

    t0 = time.perf_counter()
    report = build(home, on_event=on_event)
    if not report.success:
        raise SystemExit(f"build failed: {report.failed_steps}")
    return time.perf_counter() - t0, steps


def run(out_dir: Path | None = None) -> dict:
    sys.path.insert(0, str(REPO / "tests"))
    from conftest import ingest_sample_corpus  # the same corpus the demo and the tests use

    from ledger import Ledger
    from memc.home import MemcHome

    with tempfile.TemporaryDirectory() as tmp:
        home = MemcHome.resolve(Path(tmp) / "home").ensure()
        ingest_sample_corpus(home)
        entries = Ledger(home.ledger).head()
        cold, cold_steps = _timed_build(home)
        warm, warm_steps = _timed_build(home)
    return {
        "entries": entries,
        "cold_build_s": round(cold, 2),
        "cold_steps_s": {k: round(v, 2) for k, v in sorted(cold_steps.items())},
        "rebuild_s": round(warm, 2),
        "rebuild_steps_s": {k: round(v, 2) for k, v in sorted(warm_steps.items())},
        "rebuild_over_cold": round(warm / cold, 3),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))

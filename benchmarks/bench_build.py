"""Time a full build of the sample corpus through Dagster, step by step, in a fresh memory home.

Then, in the same process, each as a ratio of the cold build: a build with nothing new (every
view current: nothing runs), the same forced (every asset again, through their incremental
paths), and a build after one new message (the chat app's case: read-your-writes for state)."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _timed_build(home, force: bool = False) -> tuple[float, dict[str, float]]:
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
    report = build(home, on_event=on_event, force=force)
    if not report.success:
        raise SystemExit(f"build failed: {report.failed_steps}")
    return time.perf_counter() - t0, steps


def run(out_dir: Path | None = None) -> dict:
    sys.path.insert(0, str(REPO / "tests"))
    from conftest import ingest_sample_corpus  # the same corpus the demo and the tests use

    from datetime import datetime, timezone

    from ledger import Ledger
    from ledger.schema import NewEntry
    from memc.home import MemcHome

    with tempfile.TemporaryDirectory() as tmp:
        home = MemcHome.resolve(Path(tmp) / "home").ensure()
        ingest_sample_corpus(home)
        entries = Ledger(home.ledger).head()
        cold, cold_steps = _timed_build(home)
        nothing, _ = _timed_build(home)
        forced, forced_steps = _timed_build(home, force=True)
        # A message in a conversation that is running (its session and speakers known): a chat app's append.
        message = NewEntry(kind="message", scope="team", actor="Elena", session_id="elena-tomasz:S3",
                           content="I moved my desk to the third floor today.", valid_at=datetime.now(timezone.utc))
        Ledger(home.ledger).append([message])
        one, one_steps = _timed_build(home)
    secs = lambda steps: {k: round(v, 2) for k, v in sorted(steps.items())}  # noqa: E731
    return {
        "entries": entries,
        "cold_build_s": round(cold, 2),
        "cold_steps_s": secs(cold_steps),
        "nothing_new_s": round(nothing, 2),
        "rebuild_s": round(forced, 2),
        "rebuild_steps_s": secs(forced_steps),
        "one_new_entry_s": round(one, 2),
        "one_new_entry_steps_s": secs(one_steps),
        "nothing_new_over_cold": round(nothing / cold, 3),
        "rebuild_over_cold": round(forced / cold, 3),
        "one_new_entry_over_cold": round(one / cold, 3),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))

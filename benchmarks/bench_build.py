"""Time a full build of the sample corpus through Dagster, step by step, in a fresh memory home.

Then, in the same process, each as a ratio of the cold build: a build with nothing new (every
view current: nothing runs), the same forced (every asset again, through their incremental
paths), and a build after one new message (the chat app's case: read-your-writes for state).

`--on HOME`: one-message builds on a copy of a larger home instead (:func:`one_message_on`)."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pyarrow.compute as pc

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


def one_message_on(home_dir: Path, builds: int = 3) -> dict:
    """One new message and a build, ``builds`` times, on a copy of the home at ``home_dir`` (the
    compile bench's 100k home, say: `.bench/compile/home-100000-*`), in one process after a first
    build there (the process's imports and models, and whatever that home's views lack for the
    code at hand). Each message continues the ledger's last conversation (its scope, session and
    speaker), as a chat app's next turn would."""
    import shutil
    from datetime import datetime, timezone

    from ledger import Ledger
    from ledger.schema import NewEntry
    from memc.home import MemcHome

    with tempfile.TemporaryDirectory() as tmp:
        home = MemcHome.resolve(Path(tmp) / "home")
        shutil.copytree(home_dir, home.root, symlinks=True)
        ledger = Ledger(home.ledger)
        last = ledger.read(["kind", "scope", "session_id", "actor"])
        messages = last.filter(pc.equal(last.column("kind"), "message"))
        if messages.num_rows == 0:
            raise SystemExit(f"{home_dir}: no message to continue")
        turn = messages.slice(messages.num_rows - 1).to_pylist()[0]
        first, _ = _timed_build(home)
        runs = []
        for i in range(builds):
            ledger.append([NewEntry(kind="message", scope=turn["scope"], actor=turn["actor"], session_id=turn["session_id"],
                                    content=f"One more thing, number {i + 1}: I moved my desk today.", valid_at=datetime.now(timezone.utc))])
            took, steps = _timed_build(home)
            runs.append({"one_new_entry_s": round(took, 2), "steps_s": {k: round(v, 2) for k, v in sorted(steps.items(), key=lambda kv: -kv[1])}})
        return {"home": str(home_dir), "entries": ledger.head(), "first_build_s": round(first, 2), "builds": runs}


if __name__ == "__main__":
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--on", type=Path, help="measure one-message builds on a copy of this home instead")
    parser.add_argument("--builds", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(one_message_on(args.on, args.builds) if args.on else run(), indent=2))

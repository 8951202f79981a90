"""Build time of the dbt state models at 10k and 100k ledger entries: a full build, then an
incremental build after a 1% append, against a full refresh of the same grown ledger.

The ledger is synthetic and written through ``ledger.Ledger.append`` in big batches; each entry
carries one claim written in the claims layout (claims/extractor=<key>/day=<d>/claims.parquet):
people moving and changing jobs (functional), liking things (multi-valued), now and then a
retraction, a correction, or two equally recent sources that disagree. Times are the dbt
command's wall time (it includes about 4 s of dbt start-up) and dbt's own elapsed time.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from claims import store as claims_store

REPO = Path(__file__).resolve().parents[1]
DBT_DIR = REPO / "dbt_project"
EXTRACTOR_KEY = "bench-1"
BATCH = 10_000
SIZES = (10_000, 100_000)
PLACES = ["Berlin", "Paris", "Lisbon", "Madrid", "Rome", "Potsdam", "Vienna", "Oslo"]
ORGS = ["Acme", "Globex", "Helio Labs", "Northwind Studio", "Initech"]
LIKES = ["tea", "coffee", "bouldering", "jazz", "chess", "sailing", "kyoto"]
PRINCIPALS = ["alice", "bob", "carol", "dave"]
START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def _claims_schema() -> pa.Schema:
    ts = pa.timestamp("us", tz="UTC")
    return pa.schema(
        [
            ("claim_id", pa.string()), ("extractor", pa.string()), ("extractor_version", pa.string()),
            ("scope", pa.string()), ("subject", pa.string()), ("subject_id", pa.string()),
            ("predicate", pa.string()), ("object", pa.string()), ("cardinality", pa.string()),
            ("valid_at", ts), ("recorded_at", ts), ("source_entry_id", pa.string()), ("source_seq", pa.int64()),
            ("source_ref", pa.string()), ("quote", pa.string()), ("visibility", pa.list_(pa.string())),
            ("confidence", pa.float64()), ("polarity", pa.string()), ("time_phrase", pa.string()), ("object_id", pa.string()),
        ]
    )


def append(home, n: int, rng: random.Random, subjects: int, day: int) -> int:
    """Append n synthetic entries (batches of BATCH) with one claim each; returns the head."""
    from ledger import Ledger
    from ledger.schema import NewEntry
    from memc.ids import content_id, entity_id

    ledger = Ledger(home.ledger)
    schema = _claims_schema()
    done = 0
    while done < n:
        size = min(BATCH, n - done)
        recorded_at = START + timedelta(days=day)
        items = []
        for i in range(size):
            person = f"Person{rng.randrange(subjects)}"
            r = rng.random()
            if r < 0.3:
                pred, obj = "lives_in", rng.choice(PLACES)
            elif r < 0.55:
                pred, obj = "works_at", rng.choice(ORGS)
            else:
                pred, obj = "likes", rng.choice(LIKES)
            polarity = "retract" if rng.random() < 0.03 else "assert"
            kind = "correction" if rng.random() < 0.01 else "message"
            # Whole days, so that two sources now and then speak of the same valid time.
            valid = START + timedelta(days=rng.randrange(730))
            vis = ("public",) if rng.random() < 0.8 else tuple(sorted(rng.sample(PRINCIPALS, 2)))
            text = f"{person}: {'not ' if polarity == 'retract' else ''}{pred} {obj} #{day}-{done + i}"
            items.append((NewEntry(kind=kind, scope="bench", content=text, valid_at=valid, actor=person,
                                   session_id=f"s{day}-{(done + i) // 20}", source_ref=f"b{day}-{done + i}",
                                   visibility=vis), pred, obj, polarity))
        res = ledger.append([it[0] for it in items], recorded_at=recorded_at)
        rows = [
            {
                "claim_id": content_id("c", EXTRACTOR_KEY, e.entry_id, pred, obj, pol),
                "extractor": "bench", "extractor_version": "1", "scope": "bench",
                "subject": e.actor, "subject_id": entity_id("bench", e.actor), "predicate": pred, "object": obj,
                "cardinality": "multi" if pred == "likes" else "functional",
                "valid_at": e.valid_at, "recorded_at": recorded_at, "source_entry_id": e.entry_id,
                "source_seq": res.first_seq + i, "source_ref": e.source_ref, "quote": e.content,
                "visibility": list(e.visibility), "confidence": 0.9, "polarity": pol, "time_phrase": None, "object_id": None,
            }
            for i, (e, pred, obj, pol) in enumerate(items)
        ]
        # Each batch is its own ledger day here, so one claims file per day as the store writes.
        path = claims_store.day_dir(home.claims, EXTRACTOR_KEY, recorded_at.date()) / claims_store.CLAIMS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
        done += size
        day += 1
    return ledger.head()


def dbt(home, *args: str, watermark: int) -> dict[str, Any]:
    exe = Path(sys.executable).with_name("dbt")
    env = {**os.environ, "MEMC_HOME": str(home.root), "DO_NOT_TRACK": "1"}
    target = home.root / "dbt_target"
    cmd = [
        str(exe if exe.exists() else "dbt"), *args,
        *(["--exclude", "path:models/marts/graph"] if args[0] != "parse" else []),
        "--vars", json.dumps({"watermark": watermark, "extractor_key": EXTRACTOR_KEY}),
        "--profiles-dir", str(DBT_DIR), "--project-dir", str(DBT_DIR),
        "--target-path", str(target), "--log-path", str(home.root / "dbt_logs"),
    ]
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=DBT_DIR)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"dbt {' '.join(args)} failed:\n{proc.stdout[-3000:]}")
    if args[0] == "parse":
        return {"wall_s": round(wall, 2)}
    results = json.loads((target / "run_results.json").read_text())
    return {"wall_s": round(wall, 2), "dbt_s": round(results["elapsed_time"], 2)}


def rows(home) -> dict[str, int]:
    import duckdb

    with duckdb.connect(str(home.warehouse_db), read_only=True) as con:
        return {
            t: con.execute(f"select count(*) from {t}").fetchone()[0]
            for t in ("int_claims_joined_to_entries", "int_claim_closings_paired", "state_history", "state_current", "conflicts", "timeline")
        }


def run_size(n: int, workdir: Path) -> dict[str, Any]:
    from memc.home import MemcHome

    home = MemcHome.resolve(workdir / f"home-{n}").ensure()
    home.marts.mkdir(parents=True, exist_ok=True)
    rng = random.Random(n)
    subjects = max(50, n // 40)  # about 40 claims per person over three predicates
    started = time.perf_counter()
    head = append(home, n, rng, subjects, day=0)
    write_s = time.perf_counter() - started
    dbt(home, "parse", watermark=head)  # parse once, so that every timing below is a build
    full = dbt(home, "run", watermark=head)
    grown = append(home, max(1, n // 100), rng, subjects, day=n // BATCH + 1)
    incremental = dbt(home, "run", watermark=grown)
    counts = rows(home)
    refresh = dbt(home, "run", "--full-refresh", watermark=grown)
    assert rows(home) == counts, "incremental and full refresh disagree"
    return {
        "entries": n,
        "appended": grown - head,
        "subjects": subjects,
        "ledger_write_s": round(write_s, 1),
        "full_build": full,
        "incremental_after_1pct": incremental,
        "full_refresh_after_1pct": refresh,
        "incremental_over_full_refresh": round(incremental["dbt_s"] / refresh["dbt_s"], 2),
        "rows": counts,
    }


def run(sizes: tuple[int, ...] = SIZES) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="memc-bench-state-"))
    try:
        return {"results": [run_size(n, workdir) for n in sizes]}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sizes = tuple(int(a) for a in sys.argv[1:]) or SIZES
    print(json.dumps(run(sizes), indent=2))

"""Ledger append throughput against the raw cost of writing the same rows with pyarrow, and reads
of a ledger of many small batches before and after compaction.

    .venv/bin/python benchmarks/bench_ledger.py [out_dir]      # prints JSON

For batches of 1, 100 and 10,000 entries: the median over several appends to a fresh ledger
of ``Ledger.append`` (ids and keys, the idempotency check, the columnar table, Parquet write,
checksum, fsync, marker, link, directory fsyncs), and in the same process the median cost of
``pyarrow.parquet.write_table`` of the same rows (same schema, compression and options) into a
plain file, so ``ratio`` says how many times a ledger append costs a bare Parquet write. Two
more baselines split that overhead: building the table from the rows (Python objects to Arrow)
plus the write, and the write plus an fsync. Building the NewEntry objects (pydantic
validation, which callers do as they parse, so errors name the file and line) is not in the
append's time; ``validate_ms`` reports it beside.

Growth: the median one-entry append over the first and the last 50 of 500 one-entry appends.
Reads: a fresh handle reading (and verifying) those 500 one-entry batches, then the same after
``Ledger.compact``, against a ledger holding the same 500 entries written as one batch.
Runs in about 30-50 s on 2 cores.

    .venv/bin/python benchmarks/bench_ledger.py --s3 s3://bucket/prefix [APPENDS]   # the same appends on S3

compares sequential appends on object storage with local ones (:func:`run_s3`; docs/scale.md).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
import pyarrow.parquet as pq

from ledger import LEDGER_SCHEMA, Ledger, NewEntry

REPS = {1: 60, 100: 30, 10_000: 5}
GROWTH_FILES = 500  # one-entry appends for the growth measure
VALID_AT = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
_TEXT = (
    "Elena said she moved to Berlin last month and started working at Helio Labs; "
    "Tomasz asked how the commute was and she talked about the new office by the river. "
)


def _entries(tag: str, n: int) -> list[NewEntry]:
    return [
        NewEntry(
            kind="message",
            scope="bench",
            content=f"{_TEXT}[{tag} {i}]",
            valid_at=VALID_AT,
            session_id=f"s-{tag}",
            actor="Elena" if i % 2 else "Tomasz",
            source_uri="file:///inbox/bench/chat.jsonl",
            source_ref=f"D1:{i}",
            visibility=("public",),
            idempotency_key=f"{tag}-{i}",
            attributes={"turn": i},
        )
        for i in range(n)
    ]


def _timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _write_options(ledger: Ledger) -> dict[str, Any]:
    # the options Ledger._publish passes, so the baseline writes the same bytes
    return {"compression": ledger.compression, "write_page_checksum": True, "store_schema": True}


def _bench_size(out_dir: Path, n: int, reps: int) -> dict[str, Any]:
    ledger = Ledger(out_dir / f"ledger-{n}")
    opts = _write_options(ledger)
    batches = [_entries(f"n{n}-r{r}", n) for r in range(reps)]  # distinct keys: nothing deduplicated
    validate_s = _timed(lambda: _entries(f"n{n}-v", n))
    ledger_s = []
    for batch in batches:
        ledger_s.append(_timed(lambda: ledger.append(batch)))
    assert ledger.head() == n * reps

    now = datetime.now(timezone.utc)
    write_s, build_write_s, write_fsync_s = [], [], []
    base = out_dir / f"baseline-{n}"
    base.mkdir()
    for r, batch in enumerate(batches):
        rows = [e.to_row(1 + i, now) for i, e in enumerate(batch)]
        table = pa.Table.from_pylist(rows, schema=LEDGER_SCHEMA)
        write_s.append(_timed(lambda: pq.write_table(table, base / f"w{r}.parquet", **opts)))
        built = base / f"b{r}.parquet"
        build_write_s.append(_timed(lambda: pq.write_table(pa.Table.from_pylist(rows, schema=LEDGER_SCHEMA), built, **opts)))

        def write_fsync() -> None:
            with open(base / f"f{r}.parquet", "wb") as f:
                pq.write_table(table, f, **opts)
                f.flush()
                os.fsync(f.fileno())

        write_fsync_s.append(_timed(write_fsync))

    med = {k: statistics.median(v) for k, v in
           {"ledger": ledger_s, "write": write_s, "build_write": build_write_s, "write_fsync": write_fsync_s}.items()}
    return {
        "batch_size": n,
        "reps": reps,
        "ledger_append_ms": round(med["ledger"] * 1e3, 3),
        "ledger_entries_per_s": round(n / med["ledger"], 1),
        # baseline: pq.write_table of the same rows (table already built), same options
        "baseline_ms": round(med["write"] * 1e3, 3),
        "baseline_entries_per_s": round(n / med["write"], 1),
        # the overhead: ledger append time / baseline time (= baseline entries/s / ledger entries/s)
        "ratio": round(med["ledger"] / med["write"], 2),
        "from_pylist_plus_write_table_ms": round(med["build_write"] * 1e3, 3),
        "write_table_plus_fsync_ms": round(med["write_fsync"] * 1e3, 3),
        "ratio_vs_from_pylist_plus_write": round(med["ledger"] / med["build_write"], 2),
        "ratio_vs_write_plus_fsync": round(med["ledger"] / med["write_fsync"], 2),
        "ledger_append_ms_min_max": [round(min(ledger_s) * 1e3, 3), round(max(ledger_s) * 1e3, 3)],
        # building the batch's NewEntry objects (validation), once, not part of the append
        "validate_ms": round(validate_s * 1e3, 3),
    }


def _bench_growth(out_dir: Path, files: int) -> dict[str, Any]:
    """Median one-entry append cost over the first and the last 50 of ``files`` appends; then
    reads of those files by a fresh handle before and after compaction, against a ledger of the
    same entries written in one batch (median of 3 fresh handles each)."""
    ledger = Ledger(out_dir / "ledger-growth")
    times = []
    entries = [_entries(f"g{i}", 1)[0] for i in range(files)]
    for e in entries:
        times.append(_timed(lambda: ledger.append([e])))
    bulk = Ledger(out_dir / "ledger-bulk")
    bulk.append(entries)

    def fresh_read(root: Path) -> float:
        return statistics.median(_timed(lambda: Ledger(root).read()) for _ in range(3))

    read_small = fresh_read(ledger.root)
    verify_small = _timed(lambda: Ledger(ledger.root).verify())
    compact_s = _timed(lambda: Ledger(ledger.root).compact())
    read_compacted = fresh_read(ledger.root)
    read_bulk = fresh_read(bulk.root)
    # the same entries, values and all, whichever way they were written or merged
    cols = [c for c in LEDGER_SCHEMA.names if c != "recorded_at"]
    assert Ledger(ledger.root).read(cols).equals(Ledger(bulk.root).read(cols))
    files_after = len(Ledger(ledger.root).batches())
    after = statistics.median(_timed(lambda: ledger.append(_entries(f"after{i}", 1))) for i in range(20))
    return {
        "appends": files,
        "append_1_ms_first_50": round(statistics.median(times[:50]) * 1e3, 3),
        "append_1_ms_last_50": round(statistics.median(times[-50:]) * 1e3, 3),
        "last_over_first": round(statistics.median(times[-50:]) / statistics.median(times[:50]), 2),
        "open_ms": round(_timed(lambda: Ledger(bulk.root)) * 1e3, 1),
        "verify_small_batches_ms": round(verify_small * 1e3, 1),
        "read_small_batches_ms": round(read_small * 1e3, 1),
        "compact_ms": round(compact_s * 1e3, 1),
        "files_after_compaction": files_after,
        "read_compacted_ms": round(read_compacted * 1e3, 1),
        "read_bulk_ms": round(read_bulk * 1e3, 1),
        "small_over_bulk": round(read_small / read_bulk, 2),
        "compacted_over_bulk": round(read_compacted / read_bulk, 2),
        # median of 20, by the writer that made the 500 (its view of the files predates the merge)
        "append_1_after_compaction_ms": round(after * 1e3, 3),
    }


def run(out_dir: Path) -> dict[str, Any]:
    """Measure in a fresh directory under ``out_dir`` (removed afterwards; ``out_dir`` may hold
    earlier runs) and return the results."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="bench-ledger-", dir=out_dir))
    try:
        return _run(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(out_dir: Path) -> dict[str, Any]:
    started = time.perf_counter()
    # First-call costs (pyarrow imports pandas on its first conversion, ~0.35 s) are paid once
    # per process by any writer; keep them out of the medians.
    warm = Ledger(out_dir / "ledger-warmup")
    warm_ms = _timed(lambda: warm.append(_entries("warm", 1))) * 1e3
    results = [_bench_size(out_dir, n, reps) for n, reps in REPS.items()]
    growth = _bench_growth(out_dir, GROWTH_FILES)
    return {
        "benchmark": "ledger_append",
        "unit": "entries/s (median over reps)",
        "python": platform.python_version(),
        "pyarrow": pa.__version__,
        "cpus": os.cpu_count(),
        "compression": warm.compression,
        "out_dir": str(out_dir),
        "first_append_in_process_ms": round(warm_ms, 1),
        "results": results,
        "growth": growth,
        "runtime_s": round(time.perf_counter() - started, 1),
    }


def run_s3(uri: str, out_dir: Path, appends: int = 40) -> dict[str, Any]:
    """Sequential appends of 1 and 100 entries on object storage (``S3Ledger`` at ``uri``, the
    endpoint and keys from the AWS variables) beside the same on a local ledger, a fresh
    handle's verified read of what was written and, for the one-entry batches, the same read
    after ``compact`` merged them. Not part of ``make bench``: it needs an S3
    server (tests/ceph_rgw.py starts a Ceph RGW on loopback: ``python tests/ceph_rgw.py``)."""
    from ledger import S3Ledger

    out: dict[str, Any] = {"uri": uri, "appends": appends, "results": []}
    for n in (1, 100):
        for where in ("local", "s3"):
            root = f"{uri.rstrip('/')}/bench-{n}-{os.getpid()}" if where == "s3" else None
            tmp = Path(tempfile.mkdtemp(dir=out_dir)) if where == "local" else None
            led = S3Ledger(root) if where == "s3" else Ledger(tmp / "ledger")
            times = [_timed(lambda b=b: led.append(_entries(f"{where}-{n}-{b}", n))) for b in range(appends)]
            fresh = S3Ledger(root, write=False) if where == "s3" else Ledger(tmp / "ledger")
            read_s = _timed(lambda: fresh.read())
            med = statistics.median(times)
            row = {
                "where": where, "batch": n, "append_ms_median": round(med * 1000, 2),
                "appends_per_s": round(1 / med, 1), "entries_per_s": round(n / med),
                "read_all_s": round(read_s, 3), "batches_read": appends,
            }
            if n == 1:  # the small batches merged, then a fresh handle's read again
                row["compact_s"] = round(_timed(lambda: led.compact()), 3)
                fresh = S3Ledger(root, write=False) if where == "s3" else Ledger(tmp / "ledger")
                row["read_compacted_s"] = round(_timed(lambda: fresh.read()), 3)
            out["results"].append(row)
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
    return out


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--s3":  # bench_ledger.py --s3 s3://bucket/prefix [appends]
        print(json.dumps(run_s3(sys.argv[2], Path(tempfile.gettempdir()), *map(int, sys.argv[3:4])), indent=2))
    else:
        print(json.dumps(run(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.gettempdir())), indent=2))

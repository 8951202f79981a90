"""A ledger writer run as a subprocess by tests/engine/test_ledger.py (kill -9 and concurrency tests).

It opens the ledger, warms its cache, prints ``READY <pid> <head>``, waits for a line on stdin
(``go`` or ``go <start>``, so several writers start together and can be spawned ahead of time),
then appends batches ``start`` .. ``--end - 1`` of writer ``--slot`` in order. After each
append *returns* it prints, flushed::

    ACK <slot> <batch> <first_seq|-> <last_seq|-> <appended> <duplicates> <attempts>

A line that reached the pipe is an acknowledgement; a batch without one has an unknown
outcome and the test retries it. Keys and contents are a pure function of (slot, batch, i),
so the test computes exactly what should be in the ledger with :func:`batch_keys`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VALID_AT = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)


def batch_size(slot: str, batch: int) -> int:
    """Mostly small batches; every 9th one big enough that a kill lands mid-write now and then.
    A slot named ``<name>@<n>`` has batches of exactly n entries."""
    if "@" in slot:
        return int(slot.rsplit("@", 1)[1])
    if batch % 9 == 8:
        return 1500
    return 1 + (sum(map(ord, slot)) * 31 + batch * 17) % 12


def batch_keys(slot: str, batch: int) -> list[str]:
    return [f"{slot}-b{batch}-e{i}" for i in range(batch_size(slot, batch))]


def batch_entries(slot: str, batch: int, *, derived_keys: bool = False):
    from ledger import NewEntry

    return [
        NewEntry(
            kind="event",
            scope="test",
            content=f"slot {slot} batch {batch} entry {i} " + "x" * (i % 7),
            valid_at=VALID_AT,
            actor=slot,
            session_id=f"{slot}-b{batch}",
            idempotency_key=None if derived_keys else key,
            attributes={"slot": slot, "batch": batch, "i": i},
        )
        for i, key in enumerate(batch_keys(slot, batch))
    ]


def warm_up() -> None:
    """Pay the first-call costs before READY, so a kill window measured from "go" covers
    appends: pyarrow imports pandas on its first Python-object conversion (~0.35 s here)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from ledger import LEDGER_SCHEMA

    row = batch_entries("warm@1", 0)[0].to_row(0, VALID_AT)
    pq.write_table(pa.Table.from_pylist([row], schema=LEDGER_SCHEMA), io.BytesIO(), compression="zstd")


def stop_in_write() -> None:
    """Stop this process (SIGSTOP, as a debugger or the OOM reaper's victim would sit) at a known
    point of a commit: its batch's bytes are in a ``_tmp`` file, not yet fsynced, no marker made.
    A test that sends SIGSTOP from outside cannot choose that point: one write, one fsync and a
    link take milliseconds, so the writer may already have made its marker or published."""
    real_fsync = os.fsync

    def fsync(fd):
        if os.path.basename(os.path.dirname(os.readlink(f"/proc/self/fd/{fd}"))) == "_tmp":
            os.fsync = real_fsync  # once: the test continues the writer with SIGCONT
            os.kill(os.getpid(), signal.SIGSTOP)
        return real_fsync(fd)

    os.fsync = fsync


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True, help="a ledger directory or s3://bucket/prefix")
    ap.add_argument("--slot", required=True)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--end", type=int, default=1_000_000)
    ap.add_argument("--recorded-at", default=None, help="explicit recorded_at (ISO 8601)")
    ap.add_argument("--derived-keys", action="store_true", help="let the ledger derive the keys")
    ap.add_argument("--no-wait", action="store_true", help="start without waiting for stdin")
    ap.add_argument("--stop-in-write", action="store_true",
                    help="SIGSTOP this process once its first batch is in _tmp, before its fsync")
    args = ap.parse_args(argv)
    if args.stop_in_write:
        stop_in_write()

    from ledger import open_ledger

    ledger = open_ledger(args.root)  # a local path (the default) or s3://bucket/prefix
    ledger.stats()  # read every committed file once, so the appends below run warm
    warm_up()
    print(f"READY {os.getpid()} {ledger.head()}", flush=True)
    start = args.start
    if not args.no_wait:
        line = sys.stdin.readline().split()  # "go" or "go <start>" (a writer spawned ahead of time)
        if not line:  # EOF: the test went away without starting us
            return 0
        if len(line) > 1:
            start = int(line[1])
    recorded_at = datetime.fromisoformat(args.recorded_at) if args.recorded_at else None
    for b in range(start, args.end):
        entries = batch_entries(args.slot, b, derived_keys=args.derived_keys)
        r = ledger.append(entries, recorded_at=recorded_at)
        print(
            f"ACK {args.slot} {b} {r.first_seq if r.first_seq is not None else '-'} "
            f"{r.last_seq if r.last_seq is not None else '-'} {r.appended} {r.duplicates} {r.attempts}",
            flush=True,
        )
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    os._exit(rc)  # skip interpreter teardown (0.3-0.6 s with pyarrow and pandas loaded)

"""A ledger compaction run as a subprocess by tests/engine/test_ledger.py and test_ledger_s3.py (the
kill -9 tests); ``--root`` is a folder or an ``s3://`` URI (open_ledger).

It opens the ledger, warms pyarrow, prints ``READY <pid>``, waits for ``go`` on stdin, runs
``Ledger.compact`` and prints ``DONE <runs> <files merged>``, flushed. A kill lands anywhere in
between: reading the small files, writing the merged one, the journal, the swap, the removals.

``--die-after journal|commit|removal`` makes the process SIGKILL itself right after that step
of the protocol (the journal written; the merged file swapped in; the first covered file
removed), so each crash state is tested for sure, not only when a random kill happens to land
in its few milliseconds. On S3 (ledger/s3.py): ``upload`` (the merged batch uploaded, its
marker not yet put), ``commit`` (the merged marker put) and ``removal`` (the first old batch
object deleted).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--small-rows", type=int, default=10_000)
    ap.add_argument("--target-rows", type=int, default=50_000)
    ap.add_argument("--die-after", choices=["journal", "upload", "commit", "removal"])
    args = ap.parse_args(argv)

    from ledger import open_ledger
    from ledger_writer import warm_up

    ledger = open_ledger(args.root)
    warm_up()
    if args.die_after:
        (_die_after_s3 if args.root.startswith("s3://") else _die_after)(args.die_after)
    print(f"READY {os.getpid()}", flush=True)
    if not sys.stdin.readline().strip():  # EOF: the test went away without starting us
        return 0
    report = ledger.compact(small_rows=args.small_rows, target_rows=args.target_rows)
    print(f"DONE {len(report.runs)} {report.files_merged}", flush=True)
    return 0


def _die_after(step: str) -> None:
    import signal

    import ledger.store as store

    die = lambda: os.kill(os.getpid(), signal.SIGKILL)  # noqa: E731
    if step == "journal":
        write = store._write_durable
        store._write_durable = lambda *a: (write(*a), die())
    elif step == "commit":  # _cache_written runs right after the os.replace and its fsync
        cache = store.Ledger._cache_written
        store.Ledger._cache_written = lambda self, *a: (cache(self, *a), die())
    else:
        unlink = Path.unlink

        def unlink_then_die(self, missing_ok=False):
            unlink(self, missing_ok=missing_ok)
            if self.name.endswith(".parquet") and self.parent.name != "_tmp":
                die()

        Path.unlink = unlink_then_die


def _die_after_s3(step: str) -> None:
    import signal

    from ledger.s3 import S3Ledger

    die = lambda: os.kill(os.getpid(), signal.SIGKILL)  # noqa: E731
    put = S3Ledger._put_marker
    delete = S3Ledger._delete_every_version

    def put_marker(self, key, first, rows, batch_key, sha, recorded_at, markers=1, **conditions):
        if markers > 1 and step == "upload":
            die()
        put(self, key, first, rows, batch_key, sha, recorded_at, markers, **conditions)
        if markers > 1 and step == "commit":
            die()

    def delete_then_die(self, key):
        delete(self, key)
        if step == "removal":
            die()

    S3Ledger._put_marker = put_marker
    S3Ledger._delete_every_version = delete_then_die


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    os._exit(rc)

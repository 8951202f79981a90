"""The ledger's commit protocol and its verified reader.

On disk (``<home>/ledger``)::

    00000000000000000001.parquet           a committed batch; the name is its first seq
    00000000000000000001.<sha256>.sum      the batch file's checksum (an empty marker file)
    _tmp/<pid>-<uuid>.parquet              a batch being written

A batch is written to ``_tmp``, fsynced, its SHA-256 recorded in a ``.sum`` marker, then
published with ``os.link`` to the name of the next sequence number. ``link`` fails if the name
exists, so of two writers racing for one seq exactly one wins; the loser re-reads the head,
renumbers and tries the next one. Readers therefore see a batch whole or not at all, and
seqs are gap-free and never duplicated. The idempotency check runs against every file up to
the head the writer is about to extend, so it is linearisable with the publish: a retried
append whose first attempt did land is a no-op. (The spike held this under 120 ``kill -9``
of 3 concurrent writers; see docs/stack-notes.md, "Commits".)

The erasure purge (``Ledger.purge``) stays in this room on purpose: it rewrites batch files
under the same rewrite lock and marker discipline that commits and verified reads rely on, so
the one invariant (a batch file and its marker change together) is kept in one place. File
names and checksums are in ledger/files.py, what a purge leaves of an entry in ledger/stubs.py.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ledger.schema import LEDGER_SCHEMA, NewEntry
from ledger.files import BATCH_RE, SUM_RE, TMP_RE, batch_name, marker_glob, marker_name, sha256_file
from ledger.stubs import PurgeReport, erased_stub, is_erased_stub
from memc.atomic import fsync_dir, read_parquet
from memc.processes import pid_alive

# A writer needs milliseconds between writing its checksum marker and publishing; a marker
# with no batch that is older than this belongs to a writer that died.
STALE_MARKER_SECONDS = 600
# Held exclusively (flock) while an erasure rewrites committed files; a reader that meets a
# checksum mismatch takes it shared and looks again, and recover() never removes a marker
# while a rewrite holds it (the rewrite's new marker exists for a moment beside the old one).
REWRITE_LOCK = ".rewrite.lock"


class LedgerCorruption(Exception):
    """A ledger file fails its checksum or breaks seq continuity. Nothing is repaired silently."""


@dataclass(frozen=True)
class BatchFile:
    first_seq: int
    rows: int
    path: Path
    max_recorded_at: datetime | None

    @property
    def last_seq(self) -> int:
        return self.first_seq + self.rows - 1


@dataclass
class AppendResult:
    entry_ids: list[str] = field(default_factory=list)  # appended now, in seq order
    first_seq: int | None = None
    last_seq: int | None = None
    duplicates: int = 0  # entries whose idempotency key the ledger already held
    head: int = 0
    attempts: int = 0  # publishes tried (>1 means another writer won a race)

    @property
    def appended(self) -> int:
        return len(self.entry_ids)


@dataclass
class VerifyReport:
    files: int = 0
    entries: int = 0
    head: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


class Ledger:
    """Reader and the single writer implementation of one ledger directory.

    Safe to share between threads; safe for many processes to append concurrently.
    """

    def __init__(self, root: str | os.PathLike[str], *, compression: str | None = None):
        self.root = Path(root)
        self.tmp = self.root / "_tmp"
        # zstd by default; a forensic profile sets MEMC_PARQUET_COMPRESSION=none so that a byte
        # search over the files can prove an erasure.
        self.compression = compression or os.environ.get("MEMC_PARQUET_COMPRESSION", "zstd")
        self._lock = threading.Lock()
        # Committed files never change (only an erasure rewrites, under its own protocol), so
        # what we learnt about one is cached by (name, size, mtime).
        self._file_cache: dict[tuple[str, int, int], tuple[int, datetime | None, frozenset[str]]] = {}
        self._verified: set[tuple[str, int, int]] = set()
        self.root.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir(exist_ok=True)
        # Created up front, not on the first erasure, so the folder's listing only changes on commits.
        (self.root / REWRITE_LOCK).touch(exist_ok=True)
        self.recover()

    # ------------------------------------------------------------------ listing

    def _batch_paths(self) -> list[tuple[int, Path]]:
        out = []
        for p in self.root.iterdir():
            m = BATCH_RE.match(p.name)
            if m:
                out.append((int(m.group(1)), p))
        out.sort()
        return out

    def _file_info(self, path: Path) -> tuple[int, datetime | None, frozenset[str]]:
        st = path.stat()
        key = (path.name, st.st_size, st.st_mtime_ns)
        info = self._file_cache.get(key)
        if info is None:
            try:
                t = read_parquet(path, columns=["recorded_at", "idempotency_key"])
                rec = t.column("recorded_at")
                max_rec = pc.max(rec).as_py() if t.num_rows else None
                info = (t.num_rows, max_rec, frozenset(t.column("idempotency_key").to_pylist()))
            except Exception as exc:
                # a torn or damaged footer, or damaged values: bytes that are not UTF-8 in a key
                # (UnicodeDecodeError), a timestamp out of datetime's range (OverflowError)
                raise LedgerCorruption(f"{path}: unreadable Parquet ({exc})") from exc
            self._file_cache[key] = info
        return info

    def signature(self) -> tuple:
        """Every batch file by (name, size, mtime, inode): an append adds a file, an erasure's purge
        replaces one (a new inode), so anything cached against it is stale once it changes."""
        out = []
        for _, p in self._batch_paths():
            st = p.stat()
            out.append((p.name, st.st_size, st.st_mtime_ns, st.st_ino))
        return tuple(out)

    def batches(self) -> list[BatchFile]:
        return [
            BatchFile(first, rows, p, max_rec)
            for first, p in self._batch_paths()
            for rows, max_rec, _ in [self._file_info(p)]
        ]

    def head(self) -> int:
        """The highest committed seq (0 for an empty ledger): the watermark every view is built against."""
        paths = self._batch_paths()
        if not paths:
            return 0
        first, p = paths[-1]
        return first + self._file_info(p)[0] - 1

    # ------------------------------------------------------------------ writing

    def append(self, entries: Iterable[NewEntry], *, recorded_at: datetime | None = None) -> AppendResult:
        """Append a batch atomically. Entries whose idempotency key is already in the ledger
        (or earlier in this batch) are skipped, so a retry after an unknown outcome is a no-op."""
        batch: list[NewEntry] = []
        seen: set[str] = set()
        dup_in_batch = 0
        for e in entries:
            if e.key in seen:
                dup_in_batch += 1
                continue
            seen.add(e.key)
            batch.append(e)

        with self._lock:
            attempts = 0
            while True:
                paths = self._batch_paths()
                known: set[str] = set()
                head, last_rec = 0, None
                for first, p in paths:
                    rows, max_rec, keys = self._file_info(p)
                    known |= keys
                    head = first + rows - 1
                    last_rec = max_rec if last_rec is None or (max_rec and max_rec > last_rec) else last_rec
                new = [e for e in batch if e.key not in known]
                result = AppendResult(duplicates=dup_in_batch + len(batch) - len(new), head=head, attempts=attempts)
                if not new:
                    return result
                now = recorded_at or datetime.now(timezone.utc)
                # Transaction time never runs backwards along seq, even across writers and clock skew.
                if last_rec is not None and now < last_rec:
                    now = last_rec
                first_seq = head + 1
                attempts += 1
                if self._publish(first_seq, new, now):
                    result.entry_ids = [e.entry_id for e in new]
                    result.first_seq, result.last_seq = first_seq, first_seq + len(new) - 1
                    result.head, result.attempts = result.last_seq, attempts
                    return result
                # Another writer took first_seq: re-read the head and try the next one.

    def _publish(self, first_seq: int, entries: Sequence[NewEntry], recorded_at: datetime) -> bool:
        rows = [e.to_row(first_seq + i, recorded_at) for i, e in enumerate(entries)]
        table = pa.Table.from_pylist(rows, schema=LEDGER_SCHEMA)
        tmp = self.tmp / f"{os.getpid()}-{uuid.uuid4().hex}.parquet"
        final = self.root / batch_name(first_seq)
        marker = None
        try:
            with open(tmp, "wb") as f:
                pq.write_table(
                    table,
                    f,
                    compression=self.compression,
                    write_page_checksum=True,
                    # the batch's own metadata, for humans reading a file in isolation
                    store_schema=True,
                )
                f.flush()
                os.fsync(f.fileno())
            sha = sha256_file(tmp)
            marker = self.root / marker_name(first_seq, sha)
            marker.touch()
            fsync_dir(self.root)
            try:
                os.link(tmp, final)  # put-if-absent: the commit point
            except FileExistsError:
                # Two writers that built byte-identical batches (same entries, seq and an explicit
                # or clamped recorded_at) share one marker name: the loser's marker is then the
                # winner's, and deleting it would leave a good batch failing verification.
                if sha256_file(final) != sha:
                    marker.unlink(missing_ok=True)
                marker = None
                return False
            if not marker.exists():
                # Only a twin's failed attempt or recover() (after STALE_MARKER_SECONDS) removes a
                # marker whose batch is not yet published; the batch is now ours, so restore it.
                marker.touch()
            marker = None
            fsync_dir(self.root)
            st = final.stat()
            key = (final.name, st.st_size, st.st_mtime_ns)
            self._file_cache[key] = (len(rows), recorded_at, frozenset(e.key for e in entries))
            self._verified.add(key)
            return True
        finally:
            tmp.unlink(missing_ok=True)
            if marker is not None and not final.exists():
                marker.unlink(missing_ok=True)

    # ------------------------------------------------------------------ recovery

    def recover(self) -> dict[str, int]:
        """Remove what crashed writers left: temp files of dead processes, and checksum markers
        of publishes that lost a race or never happened. Committed batches are never touched."""
        removed = {"tmp": 0, "markers": 0}
        for p in self.tmp.iterdir():
            m = TMP_RE.match(p.name)
            if m and (int(m.group(1)) == os.getpid() or pid_alive(int(m.group(1)))):
                continue
            p.unlink(missing_ok=True)
            removed["tmp"] += 1
        now = time.time()
        with self._rewrite_lock(shared=True, blocking=False) as held:
            if held:
                self._recover_markers(now, removed)
        return removed

    def _recover_markers(self, now: float, removed: dict[str, int]) -> None:
        by_seq: dict[str, list[tuple[str, Path]]] = {}
        for p in self.root.iterdir():
            m = SUM_RE.match(p.name)
            if m:
                by_seq.setdefault(m.group(1), []).append((m.group(2), p))
        for seq, marks in by_seq.items():
            batch = self.root / f"{seq}.parquet"
            if batch.exists():
                # A lone marker is the batch's own (a loser's marker only exists beside the
                # winner's). Of several, keep the one matching the batch; if none matches the
                # batch is damaged and every marker is evidence: nothing is repaired silently.
                if len(marks) < 2:
                    continue
                sha = self._batch_sha(batch)
                if any(s == sha for s, _ in marks):
                    for s, p in marks:
                        if s != sha:
                            p.unlink(missing_ok=True)  # a loser's marker
                            removed["markers"] += 1
                continue
            for _, p in marks:
                try:
                    age = now - p.stat().st_mtime
                except FileNotFoundError:  # its writer just lost a race and removed it
                    continue
                if age > STALE_MARKER_SECONDS:
                    p.unlink(missing_ok=True)
                    removed["markers"] += 1

    def _batch_sha(self, path: Path) -> str:
        return sha256_file(path)

    # ------------------------------------------------------------------ erasure

    @contextlib.contextmanager
    def _rewrite_lock(self, *, shared: bool = False, blocking: bool = True) -> Iterator[bool]:
        fd = os.open(self.root / REWRITE_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            flags = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB)
            try:
                fcntl.flock(fd, flags)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def purge(self, erased: dict[str, str]) -> PurgeReport:
        """Rewrite every committed batch that holds an entry of ``erased`` (entry id -> id of the
        erasure entry that named it), replacing each such row by :func:`erased_stub`.

        The protocol, per file, under the exclusive rewrite lock: verify the old file against its
        marker (a damaged batch is never laundered into a "good" one); write the replacement to
        ``_tmp`` and fsync it; create the new ``.sum`` marker; ``os.replace`` the batch (the
        commit point: a reader sees the old file or the new one, each with its marker); remove
        the old marker. Seqs, file names and row counts do not change, so ``verify()`` passes at
        every instant. A kill leaves at most an extra marker (removed by ``recover()``) or a temp
        file of a dead process; running the purge again finishes the job (stubs are skipped).
        The old file's blocks are freed, not overwritten: no file under the ledger holds the
        erased text afterwards, which is what a byte search can prove."""
        report = PurgeReport()
        if not erased:
            return report
        found: set[str] = set()
        with self._lock, self._rewrite_lock():
            for first, path in self._batch_paths():
                table = read_parquet(path, schema=LEDGER_SCHEMA)
                ids = table.column("entry_id").to_pylist()
                hits = [i for i, e in enumerate(ids) if e in erased]
                if not hits:
                    continue
                rows = table.to_pylist()
                todo = []
                for i in hits:
                    found.add(ids[i])
                    if is_erased_stub(rows[i]):
                        report.already_stubbed += 1
                    else:
                        todo.append(i)
                if not todo:
                    continue
                # (not waiting for the rewrite lock: this process holds it)
                problems = self._check(first, path, None, wait_for_rewrite=False)
                if problems:
                    raise LedgerCorruption("; ".join(problems))
                for i in todo:
                    rows[i] = erased_stub(rows[i], erased[ids[i]])
                self._replace_batch(first, path, pa.Table.from_pylist(rows, schema=LEDGER_SCHEMA))
                report.files_rewritten.append(path.name)
                report.rows_stubbed += len(todo)
        report.missing = sorted(set(erased) - found)
        return report

    def _replace_batch(self, first: int, path: Path, table: pa.Table) -> None:
        old_markers = [p for p in self.root.glob(marker_glob(first))]
        tmp = self.tmp / f"{os.getpid()}-{uuid.uuid4().hex}.parquet"
        try:
            with open(tmp, "wb") as f:
                pq.write_table(table, f, compression=self.compression, write_page_checksum=True, store_schema=True)
                f.flush()
                os.fsync(f.fileno())
            sha = sha256_file(tmp)
            marker = self.root / marker_name(first, sha)
            marker.touch()
            fsync_dir(self.root)
            os.replace(tmp, path)  # the commit point of this file
            fsync_dir(self.root)
            for p in old_markers:
                if p != marker:
                    p.unlink(missing_ok=True)
            fsync_dir(self.root)
        finally:
            tmp.unlink(missing_ok=True)
        st = path.stat()
        key = (path.name, st.st_size, st.st_mtime_ns)
        self._file_cache[key] = (
            table.num_rows,
            pc.max(table.column("recorded_at")).as_py() if table.num_rows else None,
            frozenset(table.column("idempotency_key").to_pylist()),
        )
        self._verified.add(key)

    # ------------------------------------------------------------------ reading

    def _check(self, first: int, path: Path, expected_first: int | None, *, wait_for_rewrite: bool = True) -> list[str]:
        problems = []
        sha = sha256_file(path)
        if wait_for_rewrite and not (self.root / marker_name(first, sha)).exists():
            # An erasure may be swapping this very file (new marker, replace, old marker gone):
            # wait for it to finish, then look again before calling it damage.
            with self._rewrite_lock(shared=True):
                sha = sha256_file(path)
        if not (self.root / marker_name(first, sha)).exists():
            problems.append(f"{path.name}: checksum mismatch (sha256 {sha[:16]}... has no matching .sum marker)")
            return problems
        try:
            seqs = read_parquet(path, columns=["seq"]).column("seq").to_pylist()
        except Exception as exc:
            return [f"{path.name}: unreadable Parquet ({exc})"]
        if seqs != list(range(first, first + len(seqs))):
            problems.append(f"{path.name}: seqs inside the file do not run {first}..{first + len(seqs) - 1}")
        if expected_first is not None and first != expected_first:
            problems.append(f"{path.name}: seq gap, expected a batch starting at {expected_first}")
        return problems

    def _verified_paths(self, since_seq: int = 0) -> list[Path]:
        out: list[Path] = []
        expected: int | None = 1
        for first, p in self._batch_paths():
            st = p.stat()
            key = (p.name, st.st_size, st.st_mtime_ns)
            rows = self._file_info(p)[0]
            if key not in self._verified:
                problems = self._check(first, p, expected)
                if problems:
                    raise LedgerCorruption("; ".join(problems))
                self._verified.add(key)
            expected = first + rows
            if first + rows - 1 > since_seq:
                out.append(p)
        return out

    def read(self, columns: Sequence[str] | None = None, *, since_seq: int = 0, until_seq: int | None = None) -> pa.Table:
        """Committed entries in seq order, every file's checksum verified (once per process)."""
        paths = self._verified_paths(since_seq)
        cols = list(columns) if columns else None
        need_seq = cols is not None and "seq" not in cols
        read_cols = (cols + ["seq"]) if need_seq else cols
        # (an erasure may swap a file under us: read_parquet pins the inode it opened)
        tables = [read_parquet(p, columns=read_cols, schema=LEDGER_SCHEMA) for p in paths]
        if not tables:
            schema = LEDGER_SCHEMA if cols is None else pa.schema([LEDGER_SCHEMA.field(c) for c in read_cols])
            t = schema.empty_table()
        else:
            t = pa.concat_tables(tables)
        mask = None
        if since_seq:
            mask = pc.greater(t.column("seq"), since_seq)
        if until_seq is not None:
            m2 = pc.less_equal(t.column("seq"), until_seq)
            mask = m2 if mask is None else pc.and_(mask, m2)
        if mask is not None:
            t = t.filter(mask)
        return t.drop_columns(["seq"]) if need_seq else t

    def iter_entries(self, **kw: Any) -> Iterator[dict[str, Any]]:
        for batch in self.read(**kw).to_batches():
            yield from batch.to_pylist()

    def verify(self) -> VerifyReport:
        """Check every file's checksum and the seq continuity of the whole ledger."""
        report = VerifyReport()
        expected = 1
        for first, p in self._batch_paths():
            report.files += 1
            problems = self._check(first, p, expected)
            report.problems += problems
            try:
                rows = self._file_info(p)[0]
            except LedgerCorruption as exc:
                report.problems.append(str(exc))
                continue
            report.entries += rows
            expected = first + rows
            report.head = first + rows - 1
        return report

    def stats(self) -> dict[str, Any]:
        batches = self.batches()
        return {
            "root": str(self.root),
            "entries": sum(b.rows for b in batches),
            "head_seq": batches[-1].last_seq if batches else 0,
            "files": len(batches),
            "bytes": sum(b.path.stat().st_size for b in batches),
            "last_recorded_at": max((b.max_recorded_at for b in batches if b.max_recorded_at), default=None),
        }

    def export_jsonl(self, out) -> int:
        n = 0
        for row in self.iter_entries():
            out.write(json.dumps(row, default=_json_default, ensure_ascii=False) + "\n")
            n += 1
        return n


_READERS: dict[str, Ledger] = {}
_READERS_LOCK = threading.Lock()


def shared_reader(root: str | os.PathLike[str]) -> Ledger:
    """One long-lived :class:`Ledger` per directory in a process, for readers that come back often
    (the context compiler, its ACL checker). A fresh instance verifies every batch file's checksum
    again on its first read: at 100k entries (111 files) 244 ms against 10 ms for the shared one,
    on every compile while a view lags the ledger. Sharing is safe: what an instance caches is
    keyed by each file's name, size and mtime, and an erasure's rewrite changes them."""
    key = os.path.abspath(root)
    with _READERS_LOCK:
        reader = _READERS.get(key)
        if reader is None or not reader.root.is_dir():
            reader = _READERS[key] = Ledger(key)
        return reader


def _json_default(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.isoformat()
    raise TypeError(f"not JSON serialisable: {type(v).__name__}")

"""The ledger on object storage (S3 and compatible stores): the same commit protocol as the local
ledger (ledger/store.py), with a conditional put where the local one has ``link()``.

Under ``s3://<bucket>/<prefix>``::

    batches/00000000000000000001-<uuid>.parquet   a batch, written once under a unique name
    commits/00000000000000000001.json             the commit marker of the batch starting at seq 1:
                                                  {"batch": <key>, "sha256": ..., "rows": ...}
    _probe/<uuid>                                 the start-up probe's key (removed after it)

Commit. A writer lists the commit markers it has not seen (``StartAfter`` its last one, so an
append costs the same after 500 appends as after 5), reads the idempotency keys of their batches,
drops the entries the ledger already holds, builds the batch for ``head + 1`` (the same Parquet
bytes and SHA-256 as the local ledger, ledger/schema.py ``entries_table``), uploads it under a new
unique name, then puts the marker for ``head + 1`` with ``If-None-Match: *``: the commit point. Of
two writers racing for one seq the store accepts exactly one marker; the loser (412) removes its
batch object and tries the next seq. A put whose answer was lost is retried by the client and then
refused with 412 although it landed: the writer reads the marker back and, if it names the batch
it just uploaded (a unique name), the commit is its own. Readers see only batches named by a
marker, so a batch is seen whole or not at all; markers chain (each starts where the one before
ends), so seqs are gap-free and never duplicated, and a missing or foreign marker is reported as
damage (:class:`~ledger.store.LedgerCorruption`), never repaired.

Start-up. Opening a ledger for writing probes the store once per process: put-if-absent twice on a
probe key; the second must be refused with 412. A store that accepts it (s3rver, some gateways)
would let two writers commit one seq, so :class:`ConditionalPutUnsupported` refuses it, naming the
endpoint.

Erasure (``purge``). The one change to committed history: under the rewrite lease (below), each
batch holding an erased entry is read and checked against its marker, rewritten with the entry
replaced by its stub (ledger/stubs.py) under a new unique name, its marker overwritten to name the
new object (the commit point: the same seqs, rows and chain), and the old object deleted with every
stored version of it, so listing the bucket's objects and versions afterwards finds no byte of the
erased text. A reader whose cached chain still names the deleted object re-reads that marker and
follows it. A kill between the steps leaves either the old object (still named; running the purge
again finishes) or an unnamed new one (removed by ``recover()``).

The rewrite lease. Two purges must not interleave (each rewrites from the batch it read, so the
second would put back a row the first erased). RGW 16.2 refuses every ``If-Match`` put, so a marker
cannot be compare-and-swapped; the lease is a chain of put-if-absent objects instead:
``locks/rewrite/<gen>.json`` taken by creating the next generation, released by creating
``<gen>.done``. The highest generation rules: it is held unless done or older than the lease its
holder wrote into it (MEMC_S3_LEASE_SECONDS, default LEASE_SECONDS); the holder renews it before
each batch it rewrites and stops, before overwriting anything, if a newer generation exists,
and taking over a dead holder's lease is again a put-if-absent of the next generation, so of two
processes that see it expire only one wins. Nothing is ever deleted to unlock.

Compaction (``compact``). A ledger of many one-entry appends is as many objects to read; under the
rewrite lease, each run of consecutive small batches is read and checked against its markers,
merged into one batch under a new unique name, and the run's first marker overwritten to name it
with ``"markers": n``, the number of marker keys it now stands for (the commit point: the same
seqs, rows, entry ids, idempotency keys and checksums inside). The run's other markers are never
deleted (a writer holding an old chain would put a marker at a freed seq again); they stay as they
were, and a reader skips the ``n - 1`` marker keys after a merged marker whose seqs it covers,
without reading them. Then the old batch objects are deleted with every stored version. A kill
before the commit point leaves an unnamed merged object (``recover()`` removes it); after it, old
objects that nothing names any more (also removed by ``recover()``). A handle whose cached chain
names a batch a compaction has since removed finds it missing, lists the chain again from seq 1
and reads again (up to RELISTS times, for a compaction of many runs), so an old handle reads each
entry once, never both copies or neither; a purge, a compaction and ``recover()`` list the chain
afresh before they act.

Batch objects of writers killed between upload and commit are left (never read; ``recover()``
removes those older than STALE_MARKER_SECONDS).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import uuid
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import pyarrow as pa

from ledger.schema import NewEntry, entries_table
from ledger.store import (
    SMALL_FILE_ROWS,
    STALE_MARKER_SECONDS,
    TARGET_FILE_ROWS,
    AppendResult,
    CompactReport,
    EntryReader,
    LedgerCorruption,
    VerifyReport,
    _conform,
    _runs,
    columns_to_read,
    parquet_bytes,
    read_batch,
    seq_slice,
)
from ledger.stubs import PurgeReport, stubbed_batch
from memc.objectstore import delete_every_version, http_status, object_key, parse_s3_uri, s3_client

SEQ_WIDTH = 20  # zero-padded seqs, so keys list in seq order
# How many times a handle lists the chain again from seq 1 because a compaction merged a batch it
# was about to read (each merged run of a compaction can do that to a reader once).
RELISTS = 8

# How long a rewrite lease (erasure) holds before another process may take it over: a purge on
# loopback RGW rewrites a batch in ~0.1 s, so 15 minutes only ever expires for a holder that died.
# The holder writes its lease into the lock, so a shorter MEMC_S3_LEASE_SECONDS (the kill tests use
# a few seconds) binds the processes that wait for it. Clocks of the machines sharing a bucket must
# agree to well within it.
LEASE_SECONDS = 900.0


def lease_seconds() -> float:
    return float(os.environ.get("MEMC_S3_LEASE_SECONDS") or LEASE_SECONDS)


class LedgerBusy(RuntimeError):
    """Another process holds the ledger's rewrite lease (an erasure in progress)."""


class ConditionalPutUnsupported(RuntimeError):
    """The object store does not refuse a second put-if-absent: two writers could commit one seq."""


class _Moved(LedgerCorruption):
    """A batch this handle's chain names is gone and its marker no longer names it the same way:
    a compaction merged it since the handle listed the chain. The handle lists it again and reads
    again (RELISTS times at most); raised on (as the damage it then is) if the batch stays missing."""


@dataclass(frozen=True)
class Commit:
    """One commit marker, as read: the batch it names and that batch's checksum and rows."""

    first: int
    key: str  # the marker's key
    batch: str  # the batch object's key
    sha256: str
    rows: int
    max_recorded_at: datetime | None
    markers: int = 1  # marker keys this one stands for: itself and, after a compaction, the run it merged

    @property
    def last(self) -> int:
        return self.first + self.rows - 1

    def stands_for(self, first: int) -> bool:
        """Whether the marker key of the batch starting at ``first`` is one this merged marker
        stands for (compact): readers skip such keys unread."""
        return self.markers > 1 and self.first < first <= self.last


def _first_of(key: str) -> int:
    """The first seq a commit marker's key names (``commits/<seq>.json``), read from the key alone."""
    name = key.rsplit("/", 1)[-1].partition(".")[0]
    if not name.isdigit():
        raise LedgerCorruption(f"{key}: not a commit marker's name")
    return int(name)


_PROBED: set[tuple[str, str]] = set()
_PROBED_LOCK = threading.Lock()


def probe_conditional_put(client, bucket: str, prefix: str) -> None:
    """Put-if-absent twice on a fresh key: the first must succeed, the second be refused with 412
    (409 when the store saw the two as concurrent). Otherwise raise ConditionalPutUnsupported."""
    endpoint = client.meta.endpoint_url
    key = f"{prefix}/_probe/{uuid.uuid4().hex}" if prefix else f"_probe/{uuid.uuid4().hex}"
    try:
        try:
            client.put_object(Bucket=bucket, Key=key, Body=b"1", IfNoneMatch="*")
        except Exception as exc:
            raise ConditionalPutUnsupported(
                f"the object store at {endpoint} refused a put-if-absent (If-None-Match: *) on "
                f"s3://{bucket}/{key}: {exc}; memc needs it to commit ledger batches") from exc
        try:
            client.put_object(Bucket=bucket, Key=key, Body=b"2", IfNoneMatch="*")
        except Exception as exc:
            if http_status(exc) in (409, 412):
                return
            raise
        raise ConditionalPutUnsupported(
            f"the object store at {endpoint} does not honour If-None-Match: * (a second put-if-absent "
            f"on s3://{bucket}/{key} was accepted, not refused with 412): two writers could commit "
            "the same ledger seq there, so memc will not write its ledger to it")
    finally:
        try:
            client.delete_object(Bucket=bucket, Key=key)
        except Exception:  # the refusal above is the error worth reporting
            pass


class S3Ledger(EntryReader):
    """The ledger's reader and writer on an S3 bucket prefix; the same append/read/verify
    interface as :class:`ledger.store.Ledger`. Safe to share between threads; safe for many
    processes on many machines to append concurrently (the store's conditional put decides)."""

    def __init__(self, uri: str, *, compression: str | None = None, client=None, write: bool = True):
        self.uri = uri.rstrip("/")
        self.bucket, self.prefix = parse_s3_uri(uri)
        self.client = client or s3_client()
        self.compression = compression or os.environ.get("MEMC_PARQUET_COMPRESSION", "zstd")
        self._lock = threading.Lock()
        self._commits: list[Commit] = []  # the verified chain from seq 1, as far as listed
        self._keys: set[str] = set()
        self._last_rec: datetime | None = None
        if write:
            ident = (str(self.client.meta.endpoint_url), self.bucket)
            with _PROBED_LOCK:
                if ident not in _PROBED:
                    probe_conditional_put(self.client, self.bucket, self.prefix)
                    _PROBED.add(ident)

    @property
    def root(self) -> str:
        return self.uri

    def _key(self, *parts: str) -> str:
        return object_key(self.prefix, *parts)

    def _commit_key(self, first: int) -> str:
        return self._key("commits", f"{first:0{SEQ_WIDTH}d}.json")

    # ------------------------------------------------------------------ listing

    def _list(self, sub: str, start_after: str | None = None) -> Iterator[dict]:
        kw: dict[str, Any] = {"Bucket": self.bucket, "Prefix": self._key(sub) + "/"}
        if start_after:
            kw["StartAfter"] = start_after
        for page in self.client.get_paginator("list_objects_v2").paginate(**kw):
            yield from page.get("Contents", [])

    def _get(self, key: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()

    def _read_commit(self, key: str) -> Commit:
        where = f"s3://{self.bucket}/{key}"
        try:
            d = json.loads(self._get(key))
            rec = d.get("max_recorded_at")
            c = Commit(int(d["first_seq"]), key, str(d["batch"]), str(d["sha256"]), int(d["rows"]),
                       datetime.fromisoformat(rec) if rec else None, int(d.get("markers", 1)))
        except (ValueError, KeyError, TypeError) as exc:
            raise LedgerCorruption(f"{where}: unreadable commit marker ({exc})") from exc
        if c.markers < 1 or c.markers > c.rows:
            raise LedgerCorruption(f"{where}: unreadable commit marker (stands for {c.markers} markers of {c.rows} rows)")
        return c

    def _current(self, c: Commit, columns: Sequence[str] | None = None) -> pa.Table:
        """The batch of a cached commit (see :meth:`_current_bytes`)."""
        c, data = self._current_bytes(c)
        return self._parse(c, data, columns)

    def _current_bytes(self, c: Commit) -> tuple[Commit, bytes]:
        """The checked bytes of a cached commit's batch; when its object is gone because an
        erasure rewrote the batch since this handle listed it, the marker is read again and
        followed (once). Returns the commit as followed. Raises :class:`_Moved` when a compaction
        merged the batch since (the marker no longer stands for the same rows and markers, or no
        longer names another object)."""
        try:
            return c, self._verified_bytes(c)
        except LedgerCorruption as exc:
            if not _missing(exc):
                raise
            now = self._read_commit(c.key)
            if (now.rows, now.markers) != (c.rows, c.markers) or now.batch == c.batch:
                raise _Moved(str(exc)) from exc
            with self._lock:
                self._commits = [now if x.key == c.key else x for x in self._commits]
            return now, self._verified_bytes(now)

    def _reread(self, fn):
        """``fn()``, again from a chain listed from seq 1 while a compaction merges batches this
        handle's chain named (:class:`_Moved`; at most RELISTS times, then raised as the damage it
        then is)."""
        for attempt in range(RELISTS + 1):
            try:
                return fn()
            except _Moved:
                if attempt == RELISTS:
                    raise
                with self._lock:
                    self._reset()

    def _reset(self) -> None:
        """Forget the cached chain (callers hold self._lock): the next refresh lists it from seq 1."""
        self._commits, self._keys, self._last_rec = [], set(), None

    def _batch(self, c: Commit, columns: Sequence[str] | None = None) -> pa.Table:
        """The batch a marker names, its SHA-256 checked against the marker's."""
        return self._parse(c, self._verified_bytes(c), columns)

    def _verified_bytes(self, c: Commit) -> bytes:
        where = f"s3://{self.bucket}/{c.batch}"
        try:
            data = self._get(c.batch)
        except Exception as exc:
            if http_status(exc) == 404:
                raise LedgerCorruption(f"{where}: missing (named by {c.key})") from exc
            raise
        sha = hashlib.sha256(data).hexdigest()
        if sha != c.sha256:
            raise LedgerCorruption(f"{where}: checksum mismatch (sha256 {sha[:16]}..., its marker "
                                   f"{c.key} says {c.sha256[:16]}...)")
        return data

    def _parse(self, c: Commit, data: bytes, columns: Sequence[str] | None) -> pa.Table:
        where = f"s3://{self.bucket}/{c.batch}"
        try:
            t = read_batch(pa.BufferReader(data), columns)  # on this thread: see read_batch
        except Exception as exc:
            raise LedgerCorruption(f"{where}: unreadable Parquet ({exc})") from exc
        if t.num_rows != c.rows:
            raise LedgerCorruption(f"{where}: {t.num_rows} rows, its marker says {c.rows}")
        return _conform(t, columns)

    def _refresh(self) -> None:
        """Extend the verified chain by the markers committed since we last listed (callers hold
        self._lock). Each new batch is read once: its checksum, seqs and idempotency keys. A chain
        that a compaction has overtaken (a batch it names is gone) is listed again from seq 1."""
        for attempt in range(RELISTS + 1):
            try:
                return self._extend()
            except _Moved:
                if attempt == RELISTS:
                    raise
                self._reset()

    def _covered(self, key: str) -> bool:
        """Whether a listed marker key is one that the chain's last (merged) marker stands for;
        a key inside the chain that no merged marker explains is damage."""
        if not self._commits:
            return False
        first, last = _first_of(key), self._commits[-1]
        if first > last.last:
            return False
        if last.stands_for(first):
            return True
        raise LedgerCorruption(f"s3://{self.bucket}/{key}: a marker inside the batch of {last.key} "
                               f"(seqs {last.first}..{last.last}), which merged none")

    def _extend(self) -> None:
        after = self._commits[-1].key if self._commits else None
        keys = [obj["Key"] for obj in self._list("commits", after)]

        def fetch(key: str) -> tuple[Commit, pa.Table] | Exception:
            try:
                c = self._read_commit(key)
                return c, self._batch(c, ["seq", "idempotency_key", "recorded_at"])
            except LedgerCorruption as exc:  # raised below only if the key is not a merged one
                return exc

        # GETs in parallel (~20 ms each on loopback RGW, so a fresh handle on 40 batches took 6 s
        # one by one), in waves of 32 keys, so that the keys a merged marker stands for are
        # skipped unread (at most a wave's worth is fetched in vain); the chain is checked in order
        wave = 32
        i = 0
        while i < len(keys):
            todo = []
            while i < len(keys) and len(todo) < wave:
                if not self._covered(keys[i]):
                    todo.append(keys[i])
                i += 1
            for key, got in zip(todo, _map(fetch, todo)):
                if self._covered(key):
                    continue  # merged by a marker earlier in this wave
                if isinstance(got, Exception):
                    # a batch gone since the listing: a compaction merged it (_refresh lists again)
                    raise (_Moved(str(got)) if _missing(got) else got)
                c, t = got
                expected = self._commits[-1].last + 1 if self._commits else 1
                if c.first != expected or key != self._commit_key(c.first):
                    raise LedgerCorruption(f"s3://{self.bucket}/{key}: seq gap, expected a batch "
                                           f"starting at {expected} (marker says {c.first})")
                if t.column("seq").to_pylist() != list(range(c.first, c.first + c.rows)):
                    raise LedgerCorruption(f"s3://{self.bucket}/{c.batch}: seqs inside the batch do not "
                                           f"run {c.first}..{c.last}")
                self._keys.update(t.column("idempotency_key").to_pylist())
                if c.max_recorded_at is not None and (self._last_rec is None or c.max_recorded_at > self._last_rec):
                    self._last_rec = c.max_recorded_at
                self._commits.append(c)

    def _chain(self) -> list[Commit]:
        with self._lock:
            self._refresh()
            return list(self._commits)

    # ------------------------------------------------------------------ writing

    def append(self, entries: Iterable[NewEntry], *, recorded_at: datetime | None = None) -> AppendResult:
        """Append a batch atomically. Entries whose idempotency key is already in the ledger
        (or earlier in this batch) are skipped, so a retry after an unknown outcome is a no-op."""
        batch: list[tuple[NewEntry, tuple[str, str, str]]] = []
        seen: set[str] = set()
        dup_in_batch = 0
        for e in entries:
            d = e.derived()
            if d[1] in seen:
                dup_in_batch += 1
                continue
            seen.add(d[1])
            batch.append((e, d))
        with self._lock:
            attempts = 0
            while True:
                self._refresh()
                head = self._commits[-1].last if self._commits else 0
                new = [pair for pair in batch if pair[1][1] not in self._keys]  # the batch's own pairs (ledger/store.py)
                result = AppendResult(duplicates=dup_in_batch + len(batch) - len(new), head=head, attempts=attempts)
                if not new:
                    return result
                now = recorded_at or datetime.now(timezone.utc)
                if self._last_rec is not None and now < self._last_rec:
                    now = self._last_rec  # transaction time never runs backwards along seq
                first = head + 1
                attempts += 1
                if self._publish(first, new, now):
                    result.entry_ids = [d[2] for _, d in new]
                    result.first_seq, result.last_seq = first, first + len(new) - 1
                    result.head, result.attempts = result.last_seq, attempts
                    return result
                # another writer committed `first`: list again and renumber

    def _publish(self, first: int, entries: Sequence[tuple[NewEntry, tuple[str, str, str]]],
                 recorded_at: datetime) -> bool:
        table = entries_table([e for e, _ in entries], [d for _, d in entries], first, recorded_at)
        batch_key, sha = self._upload_batch(first, table)
        key = self._commit_key(first)
        try:
            self._put_marker(key, first, table.num_rows, batch_key, sha, recorded_at, IfNoneMatch="*")  # the commit point
        except Exception as exc:
            if http_status(exc) not in (409, 412):
                raise
            # 412: the marker exists. Ours, if our put landed and only its answer was lost.
            try:
                if self._read_commit(key).batch == batch_key:
                    return self._committed(first, key, batch_key, sha, table, recorded_at)
            except Exception as read_exc:
                if http_status(read_exc) != 404:  # 409 with no marker yet: a concurrent put, retry
                    raise
            self.client.delete_object(Bucket=self.bucket, Key=batch_key)
            return False
        return self._committed(first, key, batch_key, sha, table, recorded_at)

    def _upload_batch(self, first: int, table: pa.Table) -> tuple[str, str]:
        """Upload a batch under a new unique name; its key and SHA-256."""
        buf, sha = parquet_bytes(table, self.compression)
        batch_key = self._key("batches", f"{first:0{SEQ_WIDTH}d}-{uuid.uuid4().hex}.parquet")
        self.client.put_object(Bucket=self.bucket, Key=batch_key, Body=buf.to_pybytes())
        return batch_key, sha

    def _put_marker(self, key: str, first: int, rows: int, batch_key: str, sha: str,
                    recorded_at: datetime | None, markers: int = 1, **conditions: str) -> None:
        marker = {"first_seq": first, "rows": rows, "batch": batch_key, "sha256": sha,
                  "max_recorded_at": recorded_at.isoformat() if recorded_at else None}
        if markers > 1:  # a merged batch (compact): the marker keys it stands for, itself included
            marker["markers"] = markers
        self.client.put_object(Bucket=self.bucket, Key=key, Body=json.dumps(marker).encode(),
                               ContentType="application/json", **conditions)

    def _committed(self, first: int, key: str, batch_key: str, sha: str, table: pa.Table,
                   recorded_at: datetime) -> bool:
        self._commits.append(Commit(first, key, batch_key, sha, table.num_rows, recorded_at))
        self._keys.update(table.column("idempotency_key").to_pylist())
        self._last_rec = recorded_at
        return True

    # ------------------------------------------------------------------ reading

    def signature(self) -> tuple:
        """Every committed batch by (marker, batch object, checksum): an append adds one, an
        erasure's rewrite changes one, so anything cached against it is stale once it changes
        (the same contract as :meth:`ledger.store.Ledger.signature`)."""
        return tuple((c.key, c.batch, c.sha256) for c in self._chain())

    def mirror(self, folder: Path) -> list[Path]:
        """A local copy of the committed batches for readers that read Parquet files by glob
        (dbt's ledger source, which has no S3 client: docs/scale.md). One file per batch,
        ``<first seq>-<sha256 prefix>.parquet``: a batch already copied is kept, a new one is
        downloaded and checked against its marker, and a copy whose batch an erasure rewrote
        (another checksum) is removed, so the mirror never holds erased bytes longer than until
        the next build. Files appear by rename: a glob sees whole files only. Returns the files
        in seq order."""
        folder.mkdir(parents=True, exist_ok=True)
        def copy() -> list[Path]:
            wanted = {f"{c.first:0{SEQ_WIDTH}d}-{c.sha256[:16]}.parquet": c for c in self._chain()}
            have = {p.name for p in folder.glob("*.parquet")}

            def fetch(name: str) -> None:
                c, data = self._current_bytes(wanted[name])
                _write_new(folder / f"{c.first:0{SEQ_WIDTH}d}-{c.sha256[:16]}.parquet", data)

            _map(fetch, sorted(set(wanted) - have))
            for stale in have - set(wanted):
                (folder / stale).unlink(missing_ok=True)
            return [folder / n for n in sorted(wanted)]

        return self._reread(copy)

    def head(self) -> int:
        chain = self._chain()
        return chain[-1].last if chain else 0

    def read(self, columns: Sequence[str] | None = None, *, since_seq: int = 0,
             until_seq: int | None = None) -> pa.Table:
        """Committed entries in seq order, every batch's checksum checked as it is read."""
        read_cols, need_seq = columns_to_read(columns)

        def read() -> pa.Table:
            wanted = [c for c in self._chain() if c.last > since_seq and (until_seq is None or c.first <= until_seq)]
            return seq_slice(_map(lambda c: self._current(c, read_cols), wanted), read_cols, since_seq, until_seq, need_seq)

        return self._reread(read)

    def verify(self) -> VerifyReport:
        """Every marker's batch read again and checked (checksum, rows, seqs), and the markers'
        chain from seq 1; problems are listed, not raised. A batch found missing is looked for
        again from a new listing (a compaction running meanwhile deletes the batches it merged,
        after the marker that names the merged one): damage stays, a compaction's move does not."""
        report, moved = self._verify_once()
        for _ in range(RELISTS):
            if not moved:
                break
            report, moved = self._verify_once()
        return report

    def _verify_once(self) -> tuple[VerifyReport, bool]:
        report = VerifyReport()
        moved = False
        expected = 1
        merged: Commit | None = None  # the last marker read, while the keys after it may be ones it merged
        for obj in self._list("commits"):
            if merged is not None and merged.stands_for(_first_of(obj["Key"])):
                continue  # a marker key the merged batch stands for: not read, as readers do
            report.files += 1
            try:
                c = merged = self._read_commit(obj["Key"])
                if c.first != expected or obj["Key"] != self._commit_key(c.first):
                    report.problems.append(f"s3://{self.bucket}/{obj['Key']}: seq gap, expected a batch "
                                           f"starting at {expected}")
                seqs = self._batch(c, ["seq"]).column("seq").to_pylist()
                if seqs != list(range(c.first, c.first + c.rows)):
                    report.problems.append(f"s3://{self.bucket}/{c.batch}: seqs do not run {c.first}..{c.last}")
            except LedgerCorruption as exc:
                report.problems.append(str(exc))
                moved = moved or _missing(exc)
                continue
            report.entries += c.rows
            expected = c.last + 1
            report.head = c.last
        return report, moved

    def stats(self) -> dict[str, Any]:
        chain = self._chain()
        named = {c.batch for c in chain}
        return {
            "root": self.uri,
            "entries": sum(c.rows for c in chain),
            "head_seq": chain[-1].last if chain else 0,
            "files": len(chain),
            "bytes": sum(o["Size"] for o in self._list("batches") if o["Key"] in named),
            "last_recorded_at": max((c.max_recorded_at for c in chain if c.max_recorded_at), default=None),
        }

    def recover(self, *, older_than: float = STALE_MARKER_SECONDS) -> dict[str, int]:
        """Remove batch objects no marker names that are older than ``older_than`` seconds: the
        uploads of writers that died before their commit (a live writer commits within seconds,
        so only pass 0 when no writer runs). The chain is listed afresh: a batch that a
        compaction or an erasure named since this handle listed it is live."""
        with self._lock:
            self._reset()
        named = {c.batch for c in self._chain()}
        removed = 0
        now = datetime.now(timezone.utc)
        for obj in self._list("batches"):
            if obj["Key"] not in named and (now - obj["LastModified"]).total_seconds() >= older_than:
                # listed after the chain: a batch committed since is not in `named`, but is fresh
                self.client.delete_object(Bucket=self.bucket, Key=obj["Key"])
                removed += 1
        return {"batches": removed}

    def purge(self, erased: dict[str, str], *, wait: float | None = None) -> PurgeReport:
        """Rewrite every committed batch that holds an entry of ``erased`` (entry id -> id of the
        erasure entry that named it), each such row replaced by its stub; seqs, rows and the
        chain do not change (the module's docstring has the protocol). Running it again after a
        kill finishes the job (stubs are skipped)."""
        report = PurgeReport()
        if not erased:
            return report
        found: set[str] = set()
        with self._rewrite_lease(lease_seconds() if wait is None else wait) as renew, self._lock:
            self._reset()  # listed afresh under the lease: a compaction may have merged what this handle cached
            self._refresh()
            # the markers as they are now: listed under the lease, which no other purge or
            # compaction holds meanwhile
            for i, c in enumerate(self._commits):
                # checked against its marker: damage is never laundered
                new, n = stubbed_batch(self._batch(c), erased, found, report)
                if new is None:
                    continue
                new_key, sha = self._upload_batch(c.first, new)
                renew()  # still ours (else LedgerBusy, before anything is overwritten), and its clock restarted
                self._put_marker(c.key, c.first, c.rows, new_key, sha, c.max_recorded_at, c.markers)  # the commit point
                self._commits[i] = Commit(c.first, c.key, new_key, sha, c.rows, c.max_recorded_at, c.markers)
                self._delete_every_version(c.batch)
                report.files_rewritten.append(new_key.rsplit("/", 1)[-1])
                report.rows_stubbed += n
        report.missing = sorted(set(erased) - found)
        return report

    def _delete_every_version(self, key: str) -> None:
        delete_every_version(self.client, self.bucket, key, whole_key=True)

    @contextmanager
    def _rewrite_lease(self, wait: float):
        """Hold the ledger's rewrite lease (module docstring) for the block; waits up to ``wait``
        seconds for a live holder, then raises :class:`LedgerBusy` naming it."""
        deadline = time.monotonic() + wait
        mine = {"owner": uuid.uuid4().hex, "host": os.uname().nodename, "pid": os.getpid(), "lease_seconds": lease_seconds()}
        while True:
            gens: dict[int, set[str]] = {}
            taken: dict[int, datetime] = {}
            for obj in self._list("locks/rewrite"):
                gen, _, ext = obj["Key"].rsplit("/", 1)[-1].partition(".")
                if gen.isdigit():
                    gens.setdefault(int(gen), set()).add(ext)
                    if ext == "json":
                        taken[int(gen)] = obj["LastModified"]
            top = max(gens, default=0)
            holder: dict[str, Any] = {}
            if top and "done" not in gens[top] and top in taken:
                try:
                    holder = json.loads(self._get(self._lease_key(top, "json")))
                except Exception as exc:
                    if http_status(exc) != 404:
                        raise
                age = (datetime.now(timezone.utc) - taken[top]).total_seconds()
                if holder and age >= float(holder.get("lease_seconds", LEASE_SECONDS)):
                    holder = {}  # expired: its holder died or stalled past its lease
            if not holder:
                key = self._lease_key(top + 1, "json")
                try:
                    self.client.put_object(Bucket=self.bucket, Key=key, Body=json.dumps(mine).encode(), IfNoneMatch="*")
                except Exception as exc:
                    if http_status(exc) not in (409, 412):
                        raise
                else:
                    break  # generation top + 1 is ours
            elif time.monotonic() > deadline:
                raise LedgerBusy(f"{self.uri}: another process holds the rewrite lease (an erasure in progress): "
                                 f"{json.dumps(holder)}, taken {taken[top].isoformat()}")
            time.sleep(0.5)
        mine_key = self._lease_key(top + 1, "json")

        def renew() -> None:
            newer = [o["Key"] for o in self._list("locks/rewrite", mine_key) if o["Key"].endswith(".json")]
            if newer:
                raise LedgerBusy(f"{self.uri}: this erasure's rewrite lease expired and was taken over "
                                 f"({newer[0]}); stopped before rewriting another batch, run it again")
            self.client.put_object(Bucket=self.bucket, Key=mine_key, Body=json.dumps(mine).encode())

        try:
            yield renew
        finally:
            self.client.put_object(Bucket=self.bucket, Key=self._lease_key(top + 1, "done"), Body=b"")
            for g in gens:  # generations below ours no longer rule anything
                for ext in gens[g]:
                    self.client.delete_object(Bucket=self.bucket, Key=self._lease_key(g, ext))

    def _lease_key(self, gen: int, ext: str) -> str:
        return self._key("locks", "rewrite", f"{gen:0{SEQ_WIDTH}d}.{ext}")

    def compact(self, *, small_rows: int = SMALL_FILE_ROWS, target_rows: int = TARGET_FILE_ROWS,
                wait: float | None = None) -> CompactReport:
        """Merge each run of consecutive batches of fewer than ``small_rows`` rows into one batch of
        at most ``target_rows`` rows (the protocol is in the module docstring), under the rewrite
        lease: waits up to ``wait`` seconds (default: the lease's length) for a running purge or
        compaction. Writers in other processes append meanwhile. Safe to kill at any point."""
        report = CompactReport()
        with self._rewrite_lease(lease_seconds() if wait is None else wait) as renew, self._lock:
            # Listed afresh under the lease (no purge or other compaction can change a marker
            # now): runs are drawn from the chain as it is, never from what this handle cached.
            self._reset()
            self._refresh()
            renew()  # listing a large ledger takes a while: the lease's clock restarts
            live = [(c, c.rows, c.max_recorded_at) for c in self._commits]
            report.files_before = len(live)
            for run in _runs(live, small_rows, target_rows):
                merged = self._merge([c for c, _, _ in run], renew)
                report.runs.append((merged.first, merged.last, len(run)))
            report.files_after = len(self._commits)
        return report

    def _merge(self, run: list[Commit], renew) -> Commit:
        """One run of batches merged and committed (callers hold the lease and self._lock, and
        listed the chain under it)."""
        table = pa.concat_tables(_map(self._batch, run))  # each checked against its marker
        first, last = run[0].first, run[-1].last
        if table.column("seq").to_pylist() != list(range(first, last + 1)):
            raise LedgerCorruption(f"{self.uri}: seqs of the batches from {run[0].key} do not run {first}..{last}")
        buf, sha = parquet_bytes(table, self.compression)
        if not read_batch(pa.BufferReader(buf)).equals(table):  # what we commit is what we read
            raise RuntimeError(f"{self.uri}: compaction of {first}..{last}: the merged batch does not read back equal")
        key = self._key("batches", f"{first:0{SEQ_WIDTH}d}-{uuid.uuid4().hex}.parquet")
        self.client.put_object(Bucket=self.bucket, Key=key, Body=buf.to_pybytes())
        renew()  # still ours (else LedgerBusy, before anything is overwritten), and its clock restarted
        recorded = max((c.max_recorded_at for c in run if c.max_recorded_at), default=None)
        merged = Commit(first, run[0].key, key, sha, table.num_rows, recorded, sum(c.markers for c in run))
        self._put_marker(merged.key, first, merged.rows, key, sha, recorded, merged.markers)  # the commit point
        at = self._commits.index(run[0])
        self._commits[at : at + len(run)] = [merged]
        _map(lambda c: self._delete_every_version(c.batch), run)
        return merged


def _missing(exc: Exception) -> bool:
    """A LedgerCorruption raised because the batch object its marker names is not there (404)."""
    return isinstance(exc.__cause__, Exception) and http_status(exc.__cause__) == 404


def _write_new(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _map(fn, items: list) -> list:
    """``[fn(x) for x in items]`` with up to 8 requests in flight (boto3 clients are thread-safe)."""
    if len(items) < 2:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(fn, items))

"""The ledger's reliability tests over the local filesystem and a real S3 server (Ceph RGW on
loopback, tests/ceph_rgw.py): concurrent writers (0 lost, 0 duplicate, 0 gaps), a retry after a
lost acknowledgement, kill -9 of writers mid-commit, corruption detection, and the start-up probe
of the store's conditional put, and compaction on S3 (old handles, a kill after each step and at
random points). The local-only tests (compaction, purge, markers on disk) stay in test_ledger.py.

Cost in the default lane: Ceph starts once per session (16-31 s, measured in tests/ceph_rgw.py),
then the S3 variants take a few trials each: the module ran in 64-93 s with the start (2 loaded
cores). The full counts run under ``slow`` (12 kill trials per store at MEMC_SLOW_SCALE=0.2: RGW
52 s, local 24 s).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

import ledger_writer as lw
from ceph_rgw import S3rver
from conftest import scaled
from ledger import ConditionalPutUnsupported, Ledger, LedgerCorruption, S3Ledger, open_ledger
from ledger.s3 import probe_conditional_put

pytestmark = pytest.mark.s3

WRITER = Path(__file__).resolve().parents[1] / "ledger_writer.py"


@pytest.fixture(params=["local", "rgw"])
def store(request, tmp_path, monkeypatch):
    """(root, env): a fresh ledger location and the environment its writer processes need."""
    monkeypatch.delenv("MEMC_STORAGE", raising=False)
    if request.param == "local":
        return str(tmp_path / "ledger"), dict(os.environ)
    rgw = request.getfixturevalue("ceph_rgw")
    for k, v in rgw.env().items():  # this process's S3Ledger reads the same variables
        monkeypatch.setenv(k, v)
    return f"s3://{rgw.bucket}/{uuid.uuid4().hex}", dict(os.environ)


class Writer:
    """One tests/ledger_writer.py subprocess; its ACK lines collected on a thread."""

    def __init__(self, root: str, env: dict, slot: str, start: int = 0, end: int | None = None, *,
                 wait: bool = True):
        cmd = [sys.executable, str(WRITER), "--root", root, "--slot", slot, "--start", str(start)]
        if end is not None:
            cmd += ["--end", str(end)]
        if not wait:
            cmd.append("--no-wait")
        self.slot, self.start = slot, start
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1, env=env)
        self.lines: list[list[str]] = []
        self.ready = threading.Event()
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.endswith("\n"):  # a line torn by the kill is no acknowledgement
                self.lines.append(line.split())
                if line.startswith("READY"):
                    self.ready.set()
        self.ready.set()

    def wait_ready(self, timeout: float = 60) -> None:
        assert self.ready.wait(timeout) and any(p[0] == "READY" for p in self.lines), self.proc.stderr.read()

    def go(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        try:
            os.kill(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._pump.join(10)

    def finish(self, timeout: float = 180) -> None:
        rc = self.proc.wait(timeout)
        self._pump.join(10)
        assert rc == 0, self.proc.stderr.read()

    def acks(self) -> list[tuple[int, int | None, int | None, int]]:
        """(batch, first_seq, last_seq, appended) per ACK line."""
        return [(int(p[2]), None if p[3] == "-" else int(p[3]), None if p[4] == "-" else int(p[4]), int(p[5]))
                for p in self.lines if p[0] == "ACK"]


def assert_whole(led, expected_keys: set[str]):
    """verify() clean, every expected key exactly once, seq 1..head gap-free."""
    report = led.verify()
    assert report.ok, report.problems
    t = led.read(columns=["seq", "idempotency_key", "recorded_at"])
    keys = t.column("idempotency_key").to_pylist()
    dup = [k for k, n in Counter(keys).items() if n > 1]
    assert not dup, f"duplicated: {dup[:5]}"
    assert set(keys) == expected_keys, (sorted(expected_keys - set(keys))[:5], sorted(set(keys) - expected_keys)[:5])
    seqs = t.column("seq").to_pylist()
    assert seqs == list(range(1, len(seqs) + 1)), "seq gap"
    assert report.head == led.head() == len(seqs)
    rec = t.column("recorded_at").to_pylist()
    assert all(a <= b for a, b in zip(rec, rec[1:])), "recorded_at decreases along seq"
    return t


# --------------------------------------------------------------------------- concurrency


def test_concurrent_writers_lose_nothing_duplicate_nothing_leave_no_gap(store):
    root, env = store
    slots = ["W0", "W1", "W2", "W3"]
    batches = 9  # batch 8 of each slot holds 1,500 entries (test_ledger.py runs 30 locally)
    ws = [Writer(root, env, s, 0, batches) for s in slots]
    for w in ws:
        w.wait_ready()
    for w in ws:
        w.go()
    for w in ws:
        w.finish()
    t = assert_whole(open_ledger(root), {k for s in slots for b in range(batches) for k in lw.batch_keys(s, b)})
    seq_of = dict(zip(t.column("idempotency_key").to_pylist(), t.column("seq").to_pylist()))
    for w in ws:
        acks = w.acks()
        assert [a[0] for a in acks] == list(range(batches))
        for b, first, last, appended in acks:
            keys = lw.batch_keys(w.slot, b)
            assert appended == len(keys)
            assert [seq_of[k] for k in keys] == list(range(first, last + 1)), "ACK's seqs are not the batch's"


# --------------------------------------------------------------------------- lost acknowledgements


def test_retry_from_a_fresh_process_after_a_lost_ack_is_a_noop(store):
    root, env = store
    led = open_ledger(root)
    first = led.append(lw.batch_entries("R", 0))
    assert first.appended == lw.batch_size("R", 0)
    # the writer's process died before it saw the result: a new one retries the same batch
    w = Writer(root, env, "R", 0, 1, wait=False)
    w.finish()
    assert w.acks() == [(0, None, None, 0)]
    assert led.append(lw.batch_entries("R", 0)).duplicates == lw.batch_size("R", 0)
    assert_whole(open_ledger(root), set(lw.batch_keys("R", 0)))


def test_marker_put_whose_answer_was_lost_is_recognised_as_committed(ceph_rgw):
    """The commit's put lands but its answer is lost: botocore retries the request, the store
    refuses it with 412 (the marker exists), and the writer must see that the marker names its
    own batch: one commit, not a lost race (which would append the batch again at the next seq).
    The answer is dropped by botocore's own retry hook, against the real server."""
    client = ceph_rgw.client()
    dropped = []

    def drop_first_commit_answer(response, request_dict, **kw):
        if "/commits/" in request_dict["url"] and response is not None and response[0].status_code == 200 \
                and not dropped:
            dropped.append(request_dict["url"])
            return 0  # retry now, as after a lost response
        return None

    client.meta.events.register("needs-retry.s3.PutObject", drop_first_commit_answer, unique_id="memc-lost-ack")
    led = S3Ledger(f"s3://{ceph_rgw.bucket}/{uuid.uuid4().hex}", client=client)
    r = led.append(lw.batch_entries("L", 0))
    assert dropped, "the hook never saw the commit's put"
    assert (r.first_seq, r.appended, r.attempts) == (1, lw.batch_size("L", 0), 1)
    client.meta.events.unregister("needs-retry.s3.PutObject", unique_id="memc-lost-ack")
    assert_whole(S3Ledger(led.uri, client=client), set(lw.batch_keys("L", 0)))


# --------------------------------------------------------------------------- kill -9


def run_kill_trials(root: str, env: dict, trials: int, rng: random.Random) -> Counter:
    """Two writers append concurrently and each is SIGKILLed at a random moment within its first
    ~1.5 s of appends; the ledger is checked as they left it (every acknowledged batch whole, the
    one in flight all or nothing), and the next pair retries from each slot's first unacknowledged
    batch. A last pair without kills retries the batches still in doubt."""
    stats: Counter = Counter()
    nxt = {"A": 0, "B": 0}
    for _ in range((trials + 1) // 2):
        ws = [Writer(root, env, s, nxt[s]) for s in nxt]
        for w in ws:
            w.wait_ready()
        for w in ws:
            w.go()
        t0 = time.monotonic()
        for w, delay in sorted(((w, rng.uniform(0, 1.5)) for w in ws), key=lambda x: x[1]):
            time.sleep(max(0.0, t0 + delay - time.monotonic()))
            w.kill()
            stats["trials"] += 1
        led = open_ledger(root)
        assert led.verify().ok, led.verify().problems
        keys = Counter(led.read(columns=["idempotency_key"]).column("idempotency_key").to_pylist())
        assert all(n == 1 for n in keys.values()), "duplicated entries after a kill"
        for w in ws:
            acked = [a[0] for a in w.acks()]
            assert acked == list(range(w.start, w.start + len(acked)))
            stats["acked_batches"] += len(acked)
            for b in range(w.start, w.start + len(acked)):
                assert all(k in keys for k in lw.batch_keys(w.slot, b)), f"acknowledged batch {w.slot}/{b} lost"
            b = w.start + len(acked)
            present = sum(k in keys for k in lw.batch_keys(w.slot, b))
            assert present in (0, lw.batch_size(w.slot, b)), f"torn batch {w.slot}/{b}"
            stats["inflight_landed_unacked"] += present > 0
            nxt[w.slot] = b
    ws = [Writer(root, env, s, nxt[s], nxt[s] + 1, wait=False) for s in nxt]
    for w in ws:
        w.finish()
    expected = {k for s, n in nxt.items() for b in range(n + 1) for k in lw.batch_keys(s, b)}
    assert_whole(open_ledger(root), expected)
    if isinstance(led, S3Ledger):
        # the uploads of writers killed before their commit: never read, removed by recover()
        # (no writer runs now, so none is too young to be a dead writer's)
        stats["orphan_batches_removed"] = led.recover(older_than=0)["batches"]
        listed = {o["Key"] for o in led._list("batches")}
        assert listed == {c.batch for c in led._chain()}, "recover() left or removed the wrong batch objects"
        assert_whole(open_ledger(root), expected)
    return stats


@pytest.mark.covered_by_slow
def test_kill9_writers_mid_commit(store, seed):
    root, env = store
    stats = run_kill_trials(root, env, 4, random.Random(seed))
    print(f"\nkill -9 on {root.split(':')[0] if root.startswith('s3') else 'local'}: {dict(stats)}")
    assert stats["trials"] == 4


@pytest.mark.slow
def test_kill9_writers_mid_commit_slow(store, seed):
    root, env = store
    trials = scaled(60, least=6)
    stats = run_kill_trials(root, env, trials, random.Random(seed))
    print(f"\nkill -9: {trials} trials: {dict(stats)}")
    assert stats["trials"] >= trials and stats["acked_batches"] > 0


# --------------------------------------------------------------------------- corruption (S3)


def test_flipped_byte_in_a_batch_object_is_detected_and_named(ceph_rgw, seed):
    client = ceph_rgw.client()
    led = S3Ledger(f"s3://{ceph_rgw.bucket}/{uuid.uuid4().hex}", client=client)
    for b in range(3):
        led.append(lw.batch_entries("C", b))
    victim = S3Ledger(led.uri, client=client)._chain()[1].batch
    data = bytearray(client.get_object(Bucket=ceph_rgw.bucket, Key=victim)["Body"].read())
    pos = random.Random(seed).randrange(len(data))
    data[pos] ^= 0x01
    client.put_object(Bucket=ceph_rgw.bucket, Key=victim, Body=bytes(data))
    fresh = S3Ledger(led.uri, client=client)
    with pytest.raises(LedgerCorruption, match=f"{victim}: checksum mismatch"):
        fresh.read()
    report = fresh.verify()
    assert not report.ok and victim in report.problems[0]
    with pytest.raises(LedgerCorruption, match="checksum mismatch"):
        fresh.append(lw.batch_entries("C", 3))  # a writer does not extend a damaged ledger


def test_missing_commit_marker_is_a_seq_gap(ceph_rgw):
    client = ceph_rgw.client()
    led = S3Ledger(f"s3://{ceph_rgw.bucket}/{uuid.uuid4().hex}", client=client)
    for b in range(3):
        led.append(lw.batch_entries("G", b))
    middle = led._chain()[1].key
    client.delete_object(Bucket=ceph_rgw.bucket, Key=middle)
    with pytest.raises(LedgerCorruption, match="seq gap"):
        S3Ledger(led.uri, client=client).head()


# --------------------------------------------------------------------------- erasure


def _canary_entries(tag: str, n: int):
    """``n`` entries, every third holding a unique canary word (the fixtures write uncompressed
    Parquet, so a byte search for the word proves whether any stored byte still holds it)."""
    from ledger import NewEntry

    out, secrets = [], {}
    for i in range(n):
        secret = f"canary{uuid.uuid4().hex}" if i % 3 == 0 else ""
        out.append(NewEntry(kind="message", scope="test", content=f"{tag} entry {i} {secret}".strip(),
                            valid_at=lw.VALID_AT, actor="x", idempotency_key=f"{tag}-{i}"))
        if secret:
            secrets[f"{tag}-{i}"] = secret
    return out, secrets


def _stored_blobs(root: str, client=None, bucket: str | None = None) -> list[tuple[str, bytes]]:
    """Every stored byte under a ledger: the files of a local one; every object and every stored
    version of every object of an S3 prefix."""
    if not root.startswith("s3://"):
        return [(str(p), p.read_bytes()) for p in Path(root).rglob("*") if p.is_file()]
    prefix = root.split("/", 3)[3] + "/"
    out = []
    for page in client.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        for v in page.get("Versions", []):
            body = client.get_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])["Body"].read()
            out.append((f"{v['Key']}@{v['VersionId']}", body))
    return out


@pytest.fixture(params=["local", "rgw"])
def erasable(request, tmp_path, monkeypatch):
    """(root, client, bucket): a fresh ledger location, local or on RGW."""
    monkeypatch.delenv("MEMC_STORAGE", raising=False)
    monkeypatch.setenv("MEMC_PARQUET_COMPRESSION", "none")  # so that a byte search can prove the erasure
    if request.param == "local":
        return str(tmp_path / "ledger"), None, None
    rgw = request.getfixturevalue("ceph_rgw")
    for k, v in rgw.env().items():
        monkeypatch.setenv(k, v)
    return f"s3://{rgw.bucket}/{uuid.uuid4().hex}", rgw.client(), rgw.bucket


def test_purge_leaves_no_byte_of_the_erased_text_and_old_readers_follow(erasable):
    root, client, bucket = erasable
    led = open_ledger(root)
    secrets: dict[str, str] = {}
    for b in range(4):
        entries, s = _canary_entries(f"P{b}", 6)
        led.append(entries)
        secrets.update(s)
    early = open_ledger(root, write=False)
    assert early.head() == 24  # this handle caches the chain as it was before the erasure
    keys = early.read(["entry_id", "idempotency_key"]).to_pylist()
    id_of = {r["idempotency_key"]: r["entry_id"] for r in keys}
    doomed = {k: v for k, v in secrets.items() if k.startswith(("P1-", "P3-"))}
    kept = {k: v for k, v in secrets.items() if k not in doomed}
    # positive control: the byte search finds every canary before the erasure
    blobs = b"".join(body for _, body in _stored_blobs(root, client, bucket))
    assert all(v.encode() in blobs for v in secrets.values())

    report = led.purge({id_of[k]: "erasure-1" for k in doomed})
    assert report.rows_stubbed == len(doomed) == 4 and len(report.files_rewritten) == 2 and not report.missing

    stored = _stored_blobs(root, client, bucket)
    left = [(name, v) for name, body in stored for v in doomed.values() if v.encode() in body]
    assert not left, f"erased bytes still stored: {left}"
    blobs = b"".join(body for _, body in stored)
    assert all(v.encode() in blobs for v in kept.values()), "the purge removed more than it should"

    for reader in (open_ledger(root, write=False), early):  # a fresh handle, and one that cached the old chain
        rows = {r["idempotency_key"]: r for r in reader.read(["idempotency_key", "kind", "content"]).to_pylist()}
        assert all(rows[k]["kind"] == "erasure" and rows[k]["content"] == "" for k in doomed)
        assert all(v in rows[k]["content"] for k, v in kept.items())
    assert_whole(open_ledger(root), set(id_of))
    again = open_ledger(root).purge({id_of[k]: "erasure-1" for k in doomed})
    assert (again.rows_stubbed, again.already_stubbed, again.files_rewritten) == (0, 4, [])


PURGER = """
import json, sys
sys.path.insert(0, sys.argv[3])
from ledger import open_ledger
led = open_ledger(sys.argv[1])
print("READY", flush=True)
sys.stdin.readline()
led.purge(json.loads(sys.argv[2]))
print("DONE", flush=True)
"""


def test_two_purges_at_once_both_hold_and_a_killed_one_is_finished(ceph_rgw, monkeypatch, seed):
    """Two processes erase different entries of the same batches at once (each would put back
    what the other erased without the rewrite lease); then one is killed -9 mid-purge, and the
    next purge (after the dead holder's 3 s lease) finishes its work."""
    for k, v in ceph_rgw.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("MEMC_PARQUET_COMPRESSION", "none")  # so that a byte search can prove the erasure
    client, bucket = ceph_rgw.client(), ceph_rgw.bucket
    root = f"s3://{bucket}/{uuid.uuid4().hex}"
    led = open_ledger(root)
    secrets: dict[str, str] = {}
    for b in range(12):
        entries, s = _canary_entries(f"K{b}", 7)  # canaries at 0, 3, 6 of every batch
        led.append(entries)
        secrets.update(s)
    id_of = {r["idempotency_key"]: r["entry_id"] for r in led.read(["entry_id", "idempotency_key"]).to_pylist()}
    repo = str(Path(__file__).resolve().parents[2])

    def purger(keys: list[str], **env: str) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-c", PURGER, root, json.dumps({id_of[k]: "erasure-2" for k in keys}), repo],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, **env})
        assert p.stdout.readline().strip() == "READY", p.stderr.read()
        return p

    a_keys = [f"K{b}-0" for b in range(0, 12, 2)]
    b_keys = [f"K{b}-3" for b in range(0, 12, 2)]
    a, b = purger(a_keys), purger(b_keys)
    for p in (a, b):
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in (a, b):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and "DONE" in out, err
    rows = {r["idempotency_key"]: r["kind"] for r in open_ledger(root).read(["idempotency_key", "kind"]).to_pylist()}
    assert all(rows[k] == "erasure" for k in a_keys + b_keys), "one purge put back what the other erased"

    c_keys = [f"K{b}-6" for b in range(12)]
    c = purger(c_keys, MEMC_S3_LEASE_SECONDS="3")
    c.stdin.write("go\n")
    c.stdin.flush()
    prefix = root.split("/", 3)[3] + "/batches/"
    deadline = time.monotonic() + 60
    while client.list_objects_v2(Bucket=bucket, Prefix=prefix)["KeyCount"] <= 12 and time.monotonic() < deadline:
        time.sleep(0.02)  # until its first rewritten batch is uploaded: the kill lands mid-purge
    time.sleep(random.Random(seed).uniform(0, 0.5))  # a batch's rewrite takes ~0.1 s here
    os.kill(c.pid, signal.SIGKILL)
    c.wait()
    report = open_ledger(root).purge({id_of[k]: "erasure-2" for k in c_keys}, wait=60)
    print(f"\nafter the kill: {report.rows_stubbed} rows left to stub, {report.already_stubbed} done by the killed purge")
    assert report.rows_stubbed + report.already_stubbed == len(c_keys)
    open_ledger(root).recover(older_than=0)  # a batch the killed purge uploaded but never named
    erased = {secrets[k] for k in a_keys + b_keys + c_keys}
    left = [name for name, body in _stored_blobs(root, client, bucket) if any(v.encode() in body for v in erased)]
    assert not left, f"erased bytes still stored: {left}"
    assert_whole(open_ledger(root), set(id_of))


# --------------------------------------------------------------------------- compaction

COMPACTOR = Path(__file__).resolve().parents[1] / "ledger_compactor.py"


def _s3_root(ceph_rgw, monkeypatch) -> str:
    for k, v in ceph_rgw.env().items():
        monkeypatch.setenv(k, v)
    return f"s3://{ceph_rgw.bucket}/{uuid.uuid4().hex}"


def _objects(ceph_rgw, root: str, sub: str) -> list[str]:
    prefix = f"{root.split('/', 3)[3]}/{sub}/"
    return [o["Key"] for page in ceph_rgw.client().get_paginator("list_objects_v2").paginate(Bucket=ceph_rgw.bucket, Prefix=prefix)
            for o in page.get("Contents", [])]


def _appends(led, slot: str, batches: range) -> set[str]:
    for b in batches:
        led.append(lw.batch_entries(slot, b))
    return {k for b in batches for k in lw.batch_keys(slot, b)}


def test_compaction_on_s3_keeps_every_entry_and_key_and_old_handles_follow(ceph_rgw, monkeypatch):
    root = _s3_root(ceph_rgw, monkeypatch)
    led = open_ledger(root)
    keys = _appends(led, "s@1", range(60))
    keys |= _appends(led, "big@300", range(1))  # a big batch is left as it is
    keys |= _appends(led, "t@3", range(10))
    old = open_ledger(root, write=False)
    assert old.head() == 390  # this handle caches the chain as it was before the compaction
    stale, eraser = open_ledger(root), open_ledger(root)  # two more, used only after it
    assert stale.head() == eraser.head() == 390
    before = led.read()
    markers = _objects(ceph_rgw, root, "commits")

    report = led.compact(small_rows=100, target_rows=50)
    # 60 one-entry batches -> runs of 50 and 10 rows; the 300-row batch stays; ten three-entry ones
    # -> a run of 30 rows
    assert [r[2] for r in report.runs] == [50, 10, 10] and (report.files_before, report.files_after) == (71, 4)
    assert len(_objects(ceph_rgw, root, "batches")) == 4, "an old batch object is left"
    assert _objects(ceph_rgw, root, "commits") == markers, "a marker was removed or added"
    for reader in (open_ledger(root, write=False), old, led):  # fresh, cached from before, the compactor's own
        assert reader.read().equals(before), "compaction changed a value, lost or repeated an entry"
    assert open_ledger(root, write=False).stats()["files"] == 4
    assert_whole(open_ledger(root), keys)

    # idempotency: re-appending compacted entries is a no-op, from a handle whose chain predates
    # the compaction too, which then appends after the head, never at a seq a merged marker
    # stands for
    for w in (stale, led):
        r = w.append(lw.batch_entries("s@1", 7) + lw.batch_entries("t@3", 9))
        assert (r.appended, r.duplicates) == (0, 4)
    r = stale.append(lw.batch_entries("v@2", 0))
    assert (r.appended, r.first_seq) == (2, 391)
    keys |= set(lw.batch_keys("v@2", 0))
    # a merged batch merges again: the last run (30 rows, 10 markers) and the new batch
    again = led.compact(small_rows=100, target_rows=50)
    assert again.runs == [(361, 392, 2)]
    assert_whole(open_ledger(root), keys)
    # an erasure rewrites a merged batch and keeps what its marker stands for, also from a handle
    # whose chain predates both compactions
    victim = led.read(["entry_id", "idempotency_key"]).to_pylist()[370]
    assert eraser.purge({victim["entry_id"]: "erasure-1"}).rows_stubbed == 1
    assert_whole(open_ledger(root), keys)
    assert_whole(led, keys)
    assert old.recover(older_than=0) == {"batches": 0}  # its old chain is listed afresh first
    assert open_ledger(root).verify().files == 4  # 50, 10, 300 and 32 rows


def _compactor(root: str, die_after: str | None = None, target_rows: int = 100, **env: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, str(COMPACTOR), "--root", root, "--small-rows", "100", "--target-rows", str(target_rows)]
                         + (["--die-after", die_after] if die_after else []),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, **env})
    line = p.stdout.readline()
    assert line.startswith("READY"), line + p.stderr.read()
    p.stdin.write("go\n")
    p.stdin.flush()
    return p


@pytest.mark.parametrize("step", ["upload", "commit", "removal"])
def test_compaction_on_s3_killed_after_each_step(ceph_rgw, monkeypatch, step):
    """The compactor SIGKILLs itself right after one step: a handle from before and a fresh one
    see every entry once, before any recovery; the next compaction (after the dead one's 2 s
    lease) finishes the job and recover() removes what nothing names."""
    root = _s3_root(ceph_rgw, monkeypatch)
    led = open_ledger(root)
    keys = _appends(led, "k@1", range(30))
    before = led.read()
    p = _compactor(root, step, MEMC_S3_LEASE_SECONDS="2")
    assert p.wait(60) == -signal.SIGKILL, p.stderr.read()
    left = len(_objects(ceph_rgw, root, "batches"))  # 30 old batches and the merged one
    assert left == 31 if step != "removal" else 1 < left < 31  # the deletes run 8 at a time
    for reader in (led, open_ledger(root, write=False)):
        assert reader.read().equals(before)
        assert reader.verify().ok
    assert_whole(open_ledger(root), keys)
    report = open_ledger(root).compact(small_rows=100, wait=30)
    assert report.files_after == 1 and report.files_merged == (30 if step == "upload" else 0)
    open_ledger(root).recover(older_than=0)
    assert len(_objects(ceph_rgw, root, "batches")) == 1
    assert led.read().equals(before)
    assert_whole(open_ledger(root), keys)
    assert open_ledger(root).append(lw.batch_entries("k@1", 29)).duplicates == 1


def run_compaction_kills_s3(root: str, trials: int, seed: int) -> int:
    """Kills -9 land anywhere in a compaction of several runs (random delays) while a writer
    process appends; after each: 0 lost, 0 duplicated, 0 gaps through a fresh handle and through
    one that cached every chain before. A compaction that is not killed must finish cleanly.
    Returns how many compactions were killed mid-way."""
    rng = random.Random(seed)
    led = open_ledger(root)
    keys = _appends(led, "r@1", range(40))
    kills = 0
    finished: list[float] = []  # go -> exit of the compactions that ended before their kill
    for trial in range(trials):
        w = Writer(root, dict(os.environ), f"W{trial}", 0, 6)
        w.wait_ready()
        w.go()
        p = _compactor(root, target_rows=10, MEMC_S3_LEASE_SECONDS="2")  # runs of 10 one-entry batches
        go_at = time.monotonic()
        # A compaction of 40 small batches takes ~1-2 s on loopback RGW; once one has ended before
        # its kill, the next kill lands in the first half of the shortest seen (the later
        # compactions merge fewer batches: 15 of ours and the writer's 6). A fixed 0.2-1.5 s let
        # both compactions of the slow lane's reduced run end first (seed 3656946504 in CI).
        kill_at = go_at + (rng.uniform(0.1, 0.5) * min(finished) if finished else rng.uniform(0.2, 1.5))
        while time.monotonic() < kill_at and p.poll() is None:
            time.sleep(0.005)
        if p.poll() is None:
            p.kill()
            kills += 1
            p.wait()
        else:
            finished.append(time.monotonic() - go_at)
            out, err = p.communicate()
            assert p.returncode == 0 and "DONE" in out, err
        w.finish()
        keys |= {k for b in range(6) for k in lw.batch_keys(f"W{trial}", b)}
        assert_whole(open_ledger(root), keys)
        assert_whole(led, keys)
        keys |= _appends(led, f"r{trial}@1", range(15))  # small batches for the next compaction
    open_ledger(root).compact(small_rows=100, wait=30)
    open_ledger(root).recover(older_than=0)
    assert_whole(open_ledger(root), keys)
    return kills


@pytest.mark.covered_by_slow
def test_compaction_on_s3_killed_at_a_random_point_while_a_writer_appends(ceph_rgw, monkeypatch, seed):
    kills = run_compaction_kills_s3(_s3_root(ceph_rgw, monkeypatch), 1, seed)
    print(f"\ncompaction on S3: {kills} of 1 killed mid-way")


@pytest.mark.slow
def test_compaction_on_s3_killed_at_random_points_while_writers_append_slow(ceph_rgw, monkeypatch, seed):
    trials = scaled(10, 2)
    kills = run_compaction_kills_s3(_s3_root(ceph_rgw, monkeypatch), trials, seed)
    print(f"\ncompaction on S3: {kills} of {trials} killed mid-way")
    assert kills >= 1  # the delays are drawn inside a compaction's usual length


# --------------------------------------------------------------------------- the probe


def test_probe_accepts_rgw_and_names_the_endpoint_when_it_refuses(ceph_rgw):
    client = ceph_rgw.client()
    probe_conditional_put(client, ceph_rgw.bucket, "probe-test")  # RGW honours If-None-Match: *
    assert client.list_objects_v2(Bucket=ceph_rgw.bucket, Prefix="probe-test/").get("KeyCount") == 0


def test_probe_refuses_a_versioned_rgw_bucket(ceph_rgw):
    """Found here: RGW 16.2 ignores If-None-Match on a bucket with versioning on (the second
    put-if-absent succeeds), so memc will not write a ledger there (docs/scale.md)."""
    client = ceph_rgw.client()
    bucket = f"memc-versioned-{uuid.uuid4().hex[:8]}"
    client.create_bucket(Bucket=bucket)
    client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    with pytest.raises(ConditionalPutUnsupported, match="does not honour If-None-Match"):
        S3Ledger(f"s3://{bucket}/refused", client=client)


def test_probe_refuses_a_store_that_ignores_if_none_match(tmp_path):
    """The negative control: s3rver (npm) accepts a second put-if-absent on the same key, so
    opening a ledger there for writing must fail, naming the endpoint; reading stays allowed."""
    srv = S3rver(tmp_path / "s3rver").start()
    try:
        client = boto3_client(srv.env())
        with pytest.raises(ConditionalPutUnsupported, match=f"{srv.endpoint}.*does not honour If-None-Match"):
            S3Ledger(f"s3://{srv.bucket}/refused", client=client)
        assert S3Ledger(f"s3://{srv.bucket}/refused", client=client, write=False).head() == 0
    finally:
        srv.stop()


def boto3_client(env: dict):
    import boto3

    return boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"], region_name="us-east-1")


def test_local_default_is_unchanged(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMC_STORAGE", raising=False)
    assert type(open_ledger(tmp_path / "l")) is Ledger
    monkeypatch.setenv("MEMC_STORAGE", "/not/a/uri")
    with pytest.raises(ValueError, match="MEMC_STORAGE='/not/a/uri'"):
        open_ledger(tmp_path / "l")


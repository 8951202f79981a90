"""The ledger's reliability tests over the local filesystem and a real S3 server (Ceph RGW on
loopback, tests/ceph_rgw.py): concurrent writers (0 lost, 0 duplicate, 0 gaps), a retry after a
lost acknowledgement, kill -9 of writers mid-commit, corruption detection, and the start-up probe
of the store's conditional put. The local-only tests (compaction, purge, markers on disk) stay in
test_ledger.py.

Cost in the default lane: Ceph starts once per session (16-31 s, measured in tests/ceph_rgw.py),
then the S3 variants take a few trials each: the module ran in 64-93 s with the start (2 loaded
cores). The full counts run under ``slow`` (12 kill trials per store at MEMC_SLOW_SCALE=0.2: RGW
52 s, local 24 s).
"""

from __future__ import annotations

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
from ceph_rgw import S3rver, start_ceph_rgw
from conftest import scaled
from ledger import ConditionalPutUnsupported, Ledger, LedgerCorruption, S3Ledger, open_ledger
from ledger.s3 import probe_conditional_put

pytestmark = pytest.mark.s3

WRITER = Path(__file__).resolve().parents[1] / "ledger_writer.py"


@pytest.fixture(scope="session")
def ceph_rgw(tmp_path_factory):
    rgw = start_ceph_rgw(tmp_path_factory.mktemp("ceph"))
    print(f"\nCeph RGW on {rgw.endpoint}: up in {rgw.start_seconds:.1f} s, {rgw.rss_mb():.0f} MB resident")
    try:
        yield rgw
    finally:
        rgw.stop()


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


def test_kill9_writers_mid_commit(store, seed):
    root, env = store
    stats = run_kill_trials(root, env, 4, random.Random(seed))
    print(f"\nkill -9 on {root.split(':')[0] if root.startswith('s3') else 'local'}: {dict(stats)}")
    assert stats["trials"] == 4


@pytest.mark.slow
def test_kill9_writers_mid_commit_slow(store, seed):
    root, env = store
    trials = scaled(60, least=12)
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


# --------------------------------------------------------------------------- the probe


def test_probe_accepts_rgw_and_names_the_endpoint_when_it_refuses(ceph_rgw):
    client = ceph_rgw.client()
    probe_conditional_put(client, ceph_rgw.bucket, "probe-test")  # RGW honours If-None-Match: *
    assert client.list_objects_v2(Bucket=ceph_rgw.bucket, Prefix="probe-test/").get("KeyCount") == 0


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


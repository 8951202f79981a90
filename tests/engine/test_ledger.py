"""The ledger's commit protocol under real processes, real files and real kill -9.

Writers are subprocesses running tests/ledger_writer.py; nothing is mocked. The invariants:
every acknowledged entry is present exactly once, no batch is partially visible, seqs run
gap-free from 1 to the head, recorded_at never decreases along seq, corruption is detected
(never repaired silently), retries are no-ops, and crash leftovers are cleaned without
touching committed batches.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from ledger import Ledger, LedgerCorruption, NewEntry
from ledger.store import STALE_MARKER_SECONDS

import ledger_writer as lw  # tests/ is on sys.path (rootdir-relative test module)
import procfs
from conftest import scaled

WRITER = Path(__file__).resolve().parents[1] / "ledger_writer.py"
# A writer is killed during a random one of its first MAX_ACKS_BEFORE_KILL + 1 appends, at a
# random point of it (see _kill_pair), so kills land among appends however loaded the machine.
MAX_ACKS_BEFORE_KILL = 4
PAIRS_PER_LEDGER = 15  # a fresh ledger every N pairs keeps writer start-up (a full scan) cheap


# --------------------------------------------------------------------------- helpers


_LIVE: list["Writer"] = []


@pytest.fixture(autouse=True)
def _no_stray_writers():
    """A failed assertion must not leave writers behind (killed and reaped at teardown)."""
    yield
    while _LIVE:
        w = _LIVE.pop()
        if w.proc.poll() is None:
            w.kill()


class Writer:
    """One tests/ledger_writer.py subprocess; collects its ACK lines on a thread."""

    def __init__(self, root: Path, slot: str, start: int = 0, end: int | None = None, *,
                 recorded_at: str | None = None, derived_keys: bool = False, wait: bool = True,
                 stop_in_write: bool = False, log_dir: Path | None = None):
        cmd = [sys.executable, str(WRITER), "--root", str(root), "--slot", slot, "--start", str(start)]
        if end is not None:
            cmd += ["--end", str(end)]
        if recorded_at:
            cmd += ["--recorded-at", recorded_at]
        if derived_keys:
            cmd += ["--derived-keys"]
        if not wait:
            cmd += ["--no-wait"]
        if stop_in_write:
            cmd += ["--stop-in-write"]
        self.slot, self.start = slot, start
        self.err_path = (log_dir or root.parent) / f"writer-{slot.replace('@', '_')}-{uuid.uuid4().hex[:8]}.err"
        self._err = open(self.err_path, "w")
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True, bufsize=1
        )
        self.lines: list[list[str]] = []
        self.times: list[float] = []  # monotonic arrival of each line
        self.go_at: float | None = None
        self.ready = threading.Event()
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()
        _LIVE.append(self)

    def _read(self) -> None:
        for line in self.proc.stdout:
            if not line.endswith("\n"):
                continue  # torn by the kill: not an acknowledgement
            self.times.append(time.monotonic())
            self.lines.append(line.split())
            if line.startswith("READY"):
                self.ready.set()
        self.ready.set()  # EOF: do not let a waiter hang on a writer that died at start-up

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr(self) -> str:
        self._err.flush()
        return self.err_path.read_text()

    def wait_ready(self, timeout: float = 30) -> None:
        assert self.ready.wait(timeout), f"writer {self.slot} not ready: {self.stderr()}"
        assert any(parts[0] == "READY" for parts in self.lines), f"writer {self.slot} died: {self.stderr()}"

    def go(self, start: int | None = None) -> None:
        if start is not None:
            self.start = start
        self.proc.stdin.write("go\n" if start is None else f"go {start}\n")
        self.proc.stdin.flush()
        self.go_at = time.monotonic()

    def ack_times(self) -> list[float]:
        return [t for t, parts in zip(self.times, self.lines) if parts[0] == "ACK"]

    def kill(self) -> None:
        """SIGKILL, then reap (a zombie still answers kill(pid, 0)) and drain the pipe."""
        try:
            os.kill(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self._close()

    def finish(self, timeout: float = 60) -> None:
        rc = self.proc.wait(timeout)
        self._close()
        assert rc == 0, f"writer {self.slot} exited {rc}: {self.stderr()}"
        assert self.lines and self.lines[-1] == ["DONE"], self.lines[-3:]

    def _close(self) -> None:
        self._pump.join(10)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self._err.close()

    def acks(self) -> list[dict]:
        out = []
        for parts in self.lines:
            if parts[0] != "ACK":
                continue
            _, slot, b, first, last, appended, dups, attempts = parts
            out.append({
                "slot": slot, "batch": int(b),
                "first_seq": None if first == "-" else int(first),
                "last_seq": None if last == "-" else int(last),
                "appended": int(appended), "duplicates": int(dups), "attempts": int(attempts),
            })
        return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def batch_files(root: Path) -> dict[int, Path]:
    return {int(p.name[:20]): p for p in root.iterdir() if p.name.endswith(".parquet") and p.name[:20].isdigit()}


def markers(root: Path) -> list[tuple[int, str, Path]]:
    out = []
    for p in root.iterdir():
        if p.name.endswith(".sum"):
            seq, sha, _ = p.name.split(".")
            out.append((int(seq), sha, p))
    return out


def assert_clean_markers(root: Path) -> None:
    """Exactly one marker per committed batch, named with that batch's SHA-256; nothing else."""
    expected = {f"{first:020d}.{sha256(p)}.sum" for first, p in batch_files(root).items()}
    actual = {p.name for _, _, p in markers(root)}
    assert actual == expected, f"stray: {sorted(actual - expected)}; missing: {sorted(expected - actual)}"


def assert_whole_ledger(root: Path, expected_keys: set[str]) -> pa.Table:
    """A fresh handle's view: verify() ok, every expected key exactly once, seq 1..head, time monotone."""
    ledger = Ledger(root)
    report = ledger.verify()
    assert report.ok, report.problems
    t = ledger.read(columns=["seq", "idempotency_key", "recorded_at"])
    keys = t.column("idempotency_key").to_pylist()
    dup = [k for k, n in Counter(keys).items() if n > 1]
    assert not dup, f"duplicated entries: {dup[:5]}"
    assert set(keys) == expected_keys, (
        f"missing {sorted(expected_keys - set(keys))[:5]}, unexpected {sorted(set(keys) - expected_keys)[:5]}"
    )
    seqs = t.column("seq").to_pylist()
    assert seqs == list(range(1, len(seqs) + 1)), "seq not gap-free from 1"
    assert report.head == ledger.head() == len(seqs) == report.entries
    rec = t.column("recorded_at").to_pylist()
    assert all(a <= b for a, b in zip(rec, rec[1:])), "recorded_at decreases along seq"
    return t


# --------------------------------------------------------------------------- 1. kill -9


def run_kill_trials(base: Path, trials: int, seed: int) -> dict:
    """A trial is one SIGKILL of a writer at a random moment. Writers run in pairs appending
    concurrently; both of a pair are killed at independent random moments, the ledger is checked
    as the dead writers left it, and the next pair restarts each from its first unacknowledged
    batch (a retry of a batch whose outcome is unknown)."""
    rng = random.Random(seed)
    slots = ["A", "B"]
    stats: Counter = Counter()
    pairs = (trials + 1) // 2
    done = 0
    while done < pairs:
        n = min(PAIRS_PER_LEDGER, pairs - done)
        _kill_round(base / f"ledger-{done}", slots, n, rng, stats)
        done += n
    return dict(stats)


def _kill_round(root: Path, slots: list[str], pairs: int, rng: random.Random, stats: Counter) -> None:
    nxt = {s: 0 for s in slots}  # first batch of each slot without an acknowledgement
    obs = Ledger(root)  # the test's own handle; its cache persists so checks stay incremental
    seen: dict[str, int] = {}  # key -> seq
    head, last_rec = 0, None
    sha_of: dict[str, str] = {}

    def check() -> None:
        """Run when every writer that appended is dead (the pair spawned ahead is alive but idle)."""
        nonlocal head, last_rec
        removed = obs.recover()
        stats["recover_tmp_removed"] += removed["tmp"]
        stats["recover_markers_removed"] += removed["markers"]
        assert list(obs.tmp.iterdir()) == [], "temp files of dead writers survived recover()"
        new = obs.read(columns=["seq", "idempotency_key", "recorded_at"], since_seq=head)
        seqs = new.column("seq").to_pylist()
        assert seqs == list(range(head + 1, head + 1 + len(seqs))), "seq gap or reorder"
        keys, recs = new.column("idempotency_key").to_pylist(), new.column("recorded_at").to_pylist()
        for seq, key, rec in zip(seqs, keys, recs):
            assert key not in seen, f"{key} duplicated at seq {seen[key]} and {seq}"
            seen[key] = seq
            assert last_rec is None or rec >= last_rec, f"recorded_at went back at seq {seq}"
            last_rec = rec
        head = seqs[-1] if seqs else head
        assert obs.head() == head
        # whole batches only: every acknowledged batch fully present, the in-flight one all or nothing
        for s in slots:
            for b in range(nxt[s] + 1):
                present = sum(k in seen for k in lw.batch_keys(s, b))
                size = lw.batch_size(s, b)
                if b < nxt[s]:
                    assert present == size, f"acknowledged batch {s}/{b}: {present}/{size} entries"
                else:
                    assert present in (0, size), f"torn batch {s}/{b}: {present}/{size} entries visible"
                    stats["inflight_landed_unacked"] += present == size
        stray = set(seen) - {k for s in slots for b in range(nxt[s] + 1) for k in lw.batch_keys(s, b)}
        assert not stray, f"entries nobody wrote: {sorted(stray)[:5]}"
        # markers: one matching marker per batch; a marker without a batch only for seq head+1
        files = batch_files(root)
        for seq, sha, p in markers(root):
            if seq in files:
                real = sha_of.setdefault(files[seq].name, sha256(files[seq]))
                assert sha == real, f"marker {p.name} does not match its batch (a loser's marker survived)"
            else:
                assert seq == head + 1, f"marker {p.name} for a missing batch beyond head+1 ({head + 1})"
                stats["dead_marker_pending"] += 1
        for seq, p in files.items():
            sha = sha_of.setdefault(p.name, sha256(p))
            assert (root / f"{seq:020d}.{sha}.sum").exists(), f"{p.name} lost its marker"

    spawn = lambda: [Writer(root, s, log_dir=root.parent) for s in slots]  # noqa: E731
    first_append = [0.03]  # seconds from "go" to a writer's first ACK, as observed
    ahead = spawn()
    for i in range(pairs):
        ws = ahead
        for w in ws:
            w.wait_ready()
        for w in ws:
            w.go(start=nxt[w.slot])
        # The next pair starts (imports, opens the ledger, runs recover()) while this one appends.
        ahead = spawn() if i + 1 < pairs else []
        _kill_pair(ws, rng, first_append, stats)
        for w in ws:
            acks = w.acks()
            assert [a["batch"] for a in acks] == list(range(w.start, w.start + len(acks))), "out-of-order ACKs"
            for a in acks:
                size = lw.batch_size(w.slot, a["batch"])
                assert (a["appended"], a["duplicates"]) in ((size, 0), (0, size)), f"partial append {a}"
                if a["appended"] == 0:
                    stats["retry_was_noop"] += 1  # the first attempt had landed without an ACK
                stats["acked_batches"] += 1
                stats["lost_races"] += a["attempts"] > 1
            nxt[w.slot] = w.start + len(acks)
            if acks:
                first_append.append(w.ack_times()[0] - w.go_at)
        check()

    # Last retries, no kill: every batch ever attempted must now be in exactly once.
    ws = [Writer(root, s, start=nxt[s], end=nxt[s] + 1, wait=False, log_dir=root.parent) for s in slots]
    for w in ws:
        w.finish()
        nxt[w.slot] += 1
    check()
    expected = {k for s in slots for b in range(nxt[s]) for k in lw.batch_keys(s, b)}
    assert_whole_ledger(root, expected)
    assert list((root / "_tmp").iterdir()) == []
    assert_clean_markers(root)
    stats["entries"] += len(expected)
    stats["files"] += len(batch_files(root))
    stats["ledgers"] += 1


def _kill_pair(ws: list[Writer], rng: random.Random, first_append: list[float], stats: Counter) -> None:
    """SIGKILL each writer at its own random moment: after its k-th ACK (k uniform in
    0..MAX_ACKS_BEFORE_KILL; k = 0 is "go"), a uniform fraction of 1.2 times its previous
    append's duration later, i.e. anywhere in the next append (or just past it)."""
    plan = {w: rng.randint(0, MAX_ACKS_BEFORE_KILL) for w in ws}
    kill_at: dict[Writer, float] = {}
    alive = list(ws)
    give_up = time.monotonic() + 120
    while alive:
        assert time.monotonic() < give_up, "writers stopped acknowledging"
        for w in list(alive):
            if w not in kill_at:
                acks, k = w.ack_times(), plan[w]
                if len(acks) >= k:
                    marks = [w.go_at] + acks
                    prev = marks[k] - marks[k - 1] if k else statistics.median(first_append[-50:])
                    kill_at[w] = marks[k] + rng.uniform(0, 1.2 * prev)
                elif w.proc.poll() is not None:
                    raise AssertionError(f"writer {w.slot} died on its own: {w.stderr()}")
            if w in kill_at and time.monotonic() >= kill_at[w]:
                w.kill()
                alive.remove(w)
                stats["trials"] += 1
        time.sleep(0.0005)


def _seed() -> int:
    """Random per run; printed first (pytest shows it on failure); MEMC_KILL_SEED replays one."""
    seed = int(os.environ.get("MEMC_KILL_SEED") or int.from_bytes(os.urandom(4), "big"))
    print(f"\nMEMC_KILL_SEED={seed}")
    return seed


@pytest.mark.covered_by_slow
@pytest.mark.parametrize("trials", [40])
def test_kill9_random_points_40_trials(tmp_path, trials):
    seed = _seed()
    stats = run_kill_trials(tmp_path, trials, seed=seed)
    print(f"\nkill -9: {trials} trials: {stats}")
    assert stats["trials"] == trials
    assert stats["acked_batches"] > trials // 2  # the kills landed among appends, not before them


@pytest.mark.slow
@pytest.mark.parametrize("trials", [scaled(300, least=40)])  # MEMC_SLOW_SCALE reduces it in CI
def test_kill9_random_points_300_trials_slow(tmp_path, trials):
    seed = _seed()
    stats = run_kill_trials(tmp_path, trials, seed=seed)
    print(f"\nkill -9: {trials} trials: {stats}")
    assert stats["trials"] == trials
    assert stats["acked_batches"] > trials // 2  # the kills landed among appends, not before them


# --------------------------------------------------------------------------- 2. concurrency


def test_concurrent_writers_all_entries_once_gap_free_monotone_time(tmp_path):
    root = tmp_path / "ledger"
    slots, batches = ["W0", "W1", "W2", "W3"], 30
    ws = [Writer(root, s, 0, batches) for s in slots]
    for w in ws:
        w.wait_ready()
    for w in ws:
        w.go()
    for w in ws:
        w.finish()
    t = assert_whole_ledger(root, {k for s in slots for b in range(batches) for k in lw.batch_keys(s, b)})
    seq_of = dict(zip(t.column("idempotency_key").to_pylist(), t.column("seq").to_pylist()))
    races = 0
    for w in ws:
        acks = w.acks()
        assert [a["batch"] for a in acks] == list(range(batches))
        prev_last = 0
        for a in acks:
            keys = lw.batch_keys(w.slot, a["batch"])
            assert a["appended"] == len(keys) and a["duplicates"] == 0
            # the ACK's seq range is exactly where the batch's entries are, contiguous and in order
            assert [seq_of[k] for k in keys] == list(range(a["first_seq"], a["last_seq"] + 1))
            assert a["first_seq"] > prev_last, "a writer's own batches out of order"
            prev_last = a["last_seq"]
            races += a["attempts"] - 1
    assert_clean_markers(root)
    print(f"\n4 writers x {batches} batches: {len(t)} entries, {races} lost publish races retried")


def test_recorded_at_never_runs_backwards_even_when_given_or_clock_behind(tmp_path):
    root = tmp_path / "ledger"
    ledger = Ledger(root)
    future = datetime.now(timezone.utc) + timedelta(days=3650)  # a writer whose clock runs ahead
    ledger.append(lw.batch_entries("t@2", 0), recorded_at=future)
    ledger.append(lw.batch_entries("t@2", 1))  # this clock is behind the head's
    ledger.append(lw.batch_entries("t@2", 2), recorded_at=datetime(2020, 1, 1, tzinfo=timezone.utc))
    w = Writer(root, "t@2", 3, 4, wait=False)  # and another process
    w.finish()
    rec = Ledger(root).read(columns=["recorded_at"]).column("recorded_at").to_pylist()
    assert rec == [future] * 8


def test_identical_concurrent_retries_with_explicit_recorded_at(tmp_path):
    """Two processes retry the same batches with the same recorded_at at the same time (an
    importer re-run after a crash): they build byte-identical files for the same seq, so the
    loser's checksum marker has the winner's name. Losing a race must not delete the winner's."""
    root = tmp_path / "ledger"
    batches = 40
    rec = datetime(2024, 6, 1, tzinfo=timezone.utc).isoformat()
    ws = [Writer(root, "twin@3", 0, batches, recorded_at=rec) for _ in range(2)]
    for w in ws:
        w.wait_ready()
    for w in ws:
        w.go()
    for w in ws:
        w.finish()
    t = assert_whole_ledger(root, {k for b in range(batches) for k in lw.batch_keys("twin@3", b)})
    assert len(t) == 3 * batches
    by_batch = Counter()
    for w in ws:
        for a in w.acks():
            by_batch[a["batch"]] += a["appended"]
    assert by_batch == {b: 3 for b in range(batches)}
    assert_clean_markers(root)


# --------------------------------------------------------------------------- 3. corruption


def _small_ledger(root: Path, batches: int = 5, size: int = 40, compression: str | None = None) -> Ledger:
    ledger = Ledger(root, compression=compression)
    for b in range(batches):
        ledger.append(lw.batch_entries(f"c@{size}", b))
    return ledger


def _flip_and_check(tmp_path: Path, pristine: Path, victim_name: str, positions: list[int]) -> None:
    """Each position flipped alone in a copy of ``pristine``: open does not "repair", verify()
    reports the file without raising, read() raises LedgerCorruption; put back, all is well."""
    root = tmp_path / "ledger"
    shutil.copytree(pristine, root)
    victim = root / victim_name
    first = int(victim_name[:20])
    good = victim.read_bytes()
    marker = root / f"{first:020d}.{sha256(victim)}.sum"
    last_first = max(batch_files(root))
    for pos in positions:
        data = bytearray(good)
        data[pos] ^= 0xFF
        victim.write_bytes(bytes(data))
        ledger = Ledger(root)  # opening runs recover(): it must not "repair" anything
        assert marker.exists(), f"@{pos}: recover() deleted the only checksum marker of a damaged batch"
        report = ledger.verify()  # reports, never raises
        assert not report.ok, f"flip @{pos} not detected"
        assert any(victim.name in p for p in report.problems), (pos, report.problems)
        with pytest.raises(LedgerCorruption, match=victim.name[:20]):
            Ledger(root).read()
        with pytest.raises(LedgerCorruption):
            Ledger(root).read(columns=["content"], since_seq=last_first)
    # Put the bytes back: the untouched marker proves the file good again.
    victim.write_bytes(good)
    fresh = Ledger(root)
    assert fresh.verify().ok
    assert fresh.read().equals(Ledger(pristine).read())
    shutil.rmtree(root)


@pytest.mark.parametrize("where", ["start", "page", "middle", "footer", "footer_len", "end_magic", "random"])
@pytest.mark.parametrize("which", ["middle_file", "last_file"])
def test_flipped_byte_is_detected(tmp_path, where, which, seed):
    pristine = tmp_path / "pristine"
    _small_ledger(pristine)
    files = sorted(batch_files(pristine).items())
    victim = (files[2] if which == "middle_file" else files[-1])[1]
    size = victim.stat().st_size
    pos = {
        "start": 0,  # the PAR1 magic
        "page": 8,  # the first page header
        "middle": size // 2,
        "footer": size - 40,  # inside the thrift FileMetaData
        "footer_len": size - 6,  # the footer length
        "end_magic": size - 1,
        "random": random.Random(seed).randrange(size),  # the seed fixture prints it for a replay
    }[where]
    _flip_and_check(tmp_path, pristine, victim.name, [pos])


@pytest.mark.parametrize("value", ["key_text", "recorded_at"])
def test_flipped_byte_in_a_stored_value_is_detected(tmp_path, value):
    """Uncompressed (the forensic profile), a flip can land in a value itself: bytes that are not
    UTF-8 in an idempotency key, a timestamp beyond year 9999. Still corruption, not a crash."""
    pristine = tmp_path / "pristine"
    ledger = _small_ledger(pristine, compression="none")
    first, victim = sorted(batch_files(pristine).items())[2]
    data = victim.read_bytes()
    if value == "key_text":
        needle = lw.batch_keys("c@40", 2)[7].encode()
        pos = data.index(needle) + 1
    else:
        rec = ledger.read(columns=["recorded_at"], since_seq=first - 1).column("recorded_at")[0]
        micros = rec.cast("int64").as_py()
        pos = data.index(micros.to_bytes(8, "little", signed=True)) + 7  # the most significant byte
    _flip_and_check(tmp_path, pristine, victim.name, [pos])


def test_flipped_byte_sweep(tmp_path, seed):
    """~120 positions across a compressed batch file, one flip at a time."""
    pristine = tmp_path / "pristine"
    _small_ledger(pristine)
    victim = sorted(batch_files(pristine).values())[2]
    size = victim.stat().st_size
    stride = max(1, size // 120)
    offset = random.Random(seed).randrange(stride)  # the seed fixture prints it for a replay
    _flip_and_check(tmp_path, pristine, victim.name, list(range(offset, size, stride)))


# --------------------------------------------------------------------------- 4. idempotency


def test_retry_is_a_noop_in_process(tmp_path):
    ledger = Ledger(tmp_path / "ledger")
    batch = lw.batch_entries("i@5", 0)
    r1 = ledger.append(batch)
    assert (r1.appended, r1.duplicates, r1.first_seq, r1.last_seq, r1.head) == (5, 0, 1, 5, 5)
    files = sorted(batch_files(ledger.root))
    r2 = ledger.append(batch)
    assert (r2.appended, r2.duplicates, r2.first_seq, r2.head) == (0, 5, None, 5)
    assert ledger.head() == 5 and sorted(batch_files(ledger.root)) == files
    # a batch repeating an entry counts the repeat once; a mixed retry appends only the new ones
    r3 = ledger.append(lw.batch_entries("i@5", 0)[:2] + lw.batch_entries("i@5", 1)[:1] * 2)
    assert (r3.appended, r3.duplicates, r3.first_seq, r3.head) == (1, 3, 6, 6)


def test_explicit_idempotency_key_wins_over_content(tmp_path):
    ledger = Ledger(tmp_path / "ledger")
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    first = NewEntry(kind="observation", content="v1", valid_at=when, idempotency_key="order-42")
    assert ledger.append([first]).appended == 1
    again = NewEntry(kind="observation", content="v2, reworded by the retry", valid_at=when + timedelta(1),
                     idempotency_key="order-42")
    r = ledger.append([again])
    assert (r.appended, r.duplicates, r.head) == (0, 1, 1)
    assert ledger.read(columns=["content"]).column("content").to_pylist() == ["v1"]
    # without a key, the key is derived from the identity: same entry deduplicated, a new one not
    plain = NewEntry(kind="message", content="hello", valid_at=when, actor="u1")
    assert ledger.append([plain]).appended == 1
    assert ledger.append([NewEntry(kind="message", content="hello", valid_at=when, actor="u1")]).duplicates == 1
    assert ledger.append([NewEntry(kind="message", content="hello!", valid_at=when, actor="u1")]).appended == 1
    assert ledger.head() == 3


@pytest.mark.parametrize("derived_keys", [False, True], ids=["explicit_keys", "derived_keys"])
def test_retry_from_another_process_is_a_noop(tmp_path, derived_keys):
    root = tmp_path / "ledger"
    w = Writer(root, "p@7", 0, 2, derived_keys=derived_keys, wait=False)
    w.finish()
    assert [a["appended"] for a in w.acks()] == [7, 7]
    head = Ledger(root).head()
    files = sorted(batch_files(root))
    # a second process retries both batches (and appends a third): derived keys must be stable
    # across processes (no per-process hash seed in them)
    w2 = Writer(root, "p@7", 0, 3, derived_keys=derived_keys, wait=False)
    w2.finish()
    assert [(a["appended"], a["duplicates"]) for a in w2.acks()] == [(0, 7), (0, 7), (7, 0)]
    assert Ledger(root).head() == head + 7
    assert sorted(batch_files(root))[: len(files)] == files
    # and this process retrying what the others wrote is a no-op too
    ledger = Ledger(root)
    r = ledger.append(lw.batch_entries("p@7", 1, derived_keys=derived_keys))
    assert (r.appended, r.duplicates, r.head) == (0, 7, head + 7)
    keys = ledger.read(columns=["idempotency_key"]).column("idempotency_key").to_pylist()
    assert len(keys) == len(set(keys)) == 21


# --------------------------------------------------------------------------- 5. leftovers


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _stopped_in_write(tmp: Path, writer: Writer) -> list[Path]:
    """The temp files of a writer started with ``stop_in_write``, once it has stopped itself
    between writing its batch to ``_tmp`` and that file's fsync."""
    procfs.until(lambda: procfs.state(writer.pid) == "T", 60, f"writer {writer.slot} stopped in its write")
    found = [p for p in tmp.iterdir() if p.name.startswith(f"{writer.pid}-")]
    assert len(found) == 1, found
    return found


def test_crash_leftovers_are_removed_on_open_and_commits_untouched(tmp_path):
    root = tmp_path / "ledger"
    _small_ledger(root, batches=3, size=20)
    head = Ledger(root).head()
    committed = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in batch_files(root).values()}
    committed_markers = {p.name for _, _, p in markers(root)}
    old = time.time() - STALE_MARKER_SECONDS - 60
    for name in committed_markers:  # committed markers are kept however old
        os.utime(root / name, (old, old))

    # A real crashed writer: SIGKILL while it writes a big batch into _tmp.
    crashed = Writer(root, "crash@30000", 0, 1, wait=False, stop_in_write=True)
    crashed_tmp = _stopped_in_write(root / "_tmp", crashed)
    crashed.kill()
    # A writer killed between publishing and removing its temp name leaves a hard link to a commit.
    dead = _dead_pid()
    linked = root / "_tmp" / f"{dead}-{uuid.uuid4().hex}.parquet"
    os.link(next(iter(batch_files(root).values())), linked)
    # Markers without a batch: one older than the stale limit (its writer died), one fresh (a
    # writer may be between marker and publish); and a race loser's marker for a committed seq.
    stale = root / f"{head + 1:020d}.{'a' * 64}.sum"
    fresh = root / f"{head + 2:020d}.{'b' * 64}.sum"
    loser = root / f"{1:020d}.{'c' * 64}.sum"
    for p in (stale, fresh, loser):
        p.touch()
    os.utime(stale, (old, old))

    # A live writer paused in the middle of writing its temp file: must be left alone.
    paused = Writer(root, "paused@30000", 0, 1, wait=False, stop_in_write=True)
    paused_tmp = _stopped_in_write(root / "_tmp", paused)
    try:
        ledger = Ledger(root)  # open = recover
        assert not any(p.exists() for p in crashed_tmp), "dead writer's temp file kept"
        assert not linked.exists() and not stale.exists() and not loser.exists()
        assert fresh.exists(), "a young marker without a batch may belong to a live writer"
        assert all(p.exists() for p in paused_tmp), "recover() removed a live writer's temp file"
        assert {p.name for _, _, p in markers(root)} == committed_markers | {fresh.name}
        for p in batch_files(root).values():
            assert (p.read_bytes(), p.stat().st_mtime_ns) == committed[p.name], f"{p.name} touched"
            assert p.stat().st_nlink == 1
        assert ledger.verify().ok and ledger.head() == head
        assert ledger.recover() == {"tmp": 0, "markers": 0}  # idempotent
    finally:
        os.kill(paused.pid, signal.SIGCONT)
    paused.finish()
    assert paused.acks()[0]["appended"] == 30000
    os.utime(fresh, (old, old))
    removed = Ledger(root).recover()
    assert removed["tmp"] == 0 and not fresh.exists()
    assert list((root / "_tmp").iterdir()) == []
    assert_clean_markers(root)
    assert Ledger(root).verify().ok


# --------------------------------------------------------------------------- 6. compaction

COMPACTOR = Path(__file__).resolve().parents[1] / "ledger_compactor.py"


def _one_entry_appends(ledger: Ledger, slot: str, batches: range) -> set[str]:
    for b in batches:
        ledger.append(lw.batch_entries(slot, b))
    return {k for b in batches for k in lw.batch_keys(slot, b)}


def test_compaction_keeps_every_entry_and_its_key(tmp_path):
    root = tmp_path / "ledger"
    ledger = Ledger(root)
    keys = _one_entry_appends(ledger, "s@1", range(120))
    keys |= _one_entry_appends(ledger, "big@12000", range(1))  # a big batch is left as it is
    keys |= _one_entry_appends(ledger, "t@3", range(40))
    stale = Ledger(root)  # a second writer whose view of the files predates the compaction
    keys |= _one_entry_appends(stale, "u@2", range(1))
    before = ledger.read()
    files_before = len(batch_files(root))

    report = ledger.compact(small_rows=1000, target_rows=100)
    # 120 one-entry files -> two runs (100 + 20 rows); the 12,000-row batch stays; 40 three-entry
    # files and the last two-entry one -> runs of at most 100 rows
    assert [r[2] for r in report.runs] == [100, 20, 33, 8]
    assert len(batch_files(root)) == files_before - sum(n - 1 for _, _, n in report.runs) == 5
    assert not (root / ".compaction.json").exists() and list((root / "_tmp").iterdir()) == []
    assert_clean_markers(root)
    after = Ledger(root).read()
    assert after.equals(before), "compaction changed a value"
    assert_whole_ledger(root, keys)

    # idempotency: re-appending a compacted entry (from this writer and the stale one) is a no-op
    for w in (ledger, stale):
        r = w.append(lw.batch_entries("s@1", 7) + lw.batch_entries("t@3", 39))
        assert (r.appended, r.duplicates) == (0, 4)
    # the stale writer's head file was merged away: it must not publish into a freed name
    r = stale.append(lw.batch_entries("v@2", 0))
    assert (r.appended, r.first_seq) == (2, before.num_rows + 1)
    keys |= set(lw.batch_keys("v@2", 0))
    assert_whole_ledger(root, keys)
    # the stale writer's new file merges into the last merged one (23 + 2 rows)
    assert ledger.compact(small_rows=1000, target_rows=100).files_merged == 2
    assert_whole_ledger(root, keys)
    assert_clean_markers(root)


def test_purge_after_compaction_leaves_no_copy(tmp_path):
    root = tmp_path / "ledger"
    ledger = Ledger(root, compression="none")  # uncompressed: a byte search proves the erasure
    secret = "the launch code is 0000-SWORDFISH"
    ids = []
    for i in range(30):
        e = NewEntry(kind="message", content=secret if i == 17 else f"turn {i}", valid_at=lw.VALID_AT,
                     idempotency_key=f"k{i}")
        ids.append(ledger.append([e]).entry_ids[0])
    assert ledger.compact(small_rows=100).files_merged == 30
    assert len(batch_files(root)) == 1
    pr = ledger.purge({ids[17]: "e_erasure"})
    assert (pr.rows_stubbed, pr.missing) == (1, [])
    fresh = Ledger(root)
    assert fresh.verify().ok
    t = fresh.read(columns=["entry_id", "content", "idempotency_key"])
    assert t.column("entry_id").to_pylist() == ids
    assert secret not in t.column("content").to_pylist()
    assert all(secret.encode() not in p.read_bytes() for p in root.rglob("*") if p.is_file())
    # the stub keeps the key: the erased evidence does not come back with a re-ingest
    again = NewEntry(kind="message", content=secret, valid_at=lw.VALID_AT, idempotency_key="k17")
    assert fresh.append([again]).duplicates == 1
    assert_clean_markers(root)


def test_compaction_refuses_a_damaged_batch(tmp_path):
    root = tmp_path / "ledger"
    ledger = Ledger(root)
    _one_entry_appends(ledger, "d@1", range(10))
    victim = sorted(batch_files(root).values())[4]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(LedgerCorruption, match=victim.name[:20]):
        Ledger(root).compact()
    assert len(batch_files(root)) == 10, "a damaged batch was merged (laundered) or a file removed"
    assert not (root / ".compaction.json").exists()


def _listing_skips_once(monkeypatch, ledger: Ledger, name: str) -> list[int]:
    """The handle's next directory listing leaves out ``name`` while listing the files after it,
    as a listing taken while another writer links that batch can (ext4 returns names in hash
    order: a name linked behind the listing's position is not returned, one ahead of it is).
    Returns a list with one item per listing made, so a test can check that more were taken."""
    real, calls = ledger._scan, []

    def scan():
        calls.append(1)
        files = real()
        return [f for f in files if f.name != name] if len(calls) == 1 else files

    monkeypatch.setattr(ledger, "_scan", scan)
    return calls


def test_a_listing_that_skips_a_batch_is_taken_again_not_compacted_around(tmp_path, monkeypatch):
    """CI at 9308912 failed test_kill9_compaction_random_points with a compactor's "seqs of the
    files from ... do not run": its one listing had missed a batch the concurrent writer had just
    linked, and the run it merged had a hole. A listing with a gap is now taken again."""
    root = tmp_path / "ledger"
    keys = _one_entry_appends(Ledger(root), "g@1", range(30))
    compactor = Ledger(root)
    skipped = sorted(batch_files(root).values())[24].name
    calls = _listing_skips_once(monkeypatch, compactor, skipped)
    report = compactor.compact(small_rows=100)
    assert len(calls) >= 3 and report.runs == [(1, 30, 30)]
    assert len(batch_files(root)) == 1
    assert_whole_ledger(root, keys)
    assert_clean_markers(root)


def test_a_writer_whose_listing_skips_a_batch_still_knows_its_keys(tmp_path, monkeypatch):
    """A writer reads only the files listed since its last append; a listing that skipped one
    would leave that batch's idempotency keys out, and a retried entry of it would be appended
    twice. The writer lists again instead."""
    root = tmp_path / "ledger"
    writer, other = Ledger(root), Ledger(root)
    keys = _one_entry_appends(writer, "a@1", range(5))
    keys |= _one_entry_appends(other, "b@1", range(3))  # seqs 6, 7, 8: new to `writer`
    _listing_skips_once(monkeypatch, writer, sorted(batch_files(root).values())[5].name)
    r = writer.append(lw.batch_entries("b@1", 0))  # the skipped batch's entry, retried
    assert (r.appended, r.duplicates) == (0, 1)
    keys |= _one_entry_appends(writer, "c@1", range(1))
    assert_whole_ledger(root, keys)


def test_compaction_refuses_a_ledger_with_a_missing_batch(tmp_path):
    root = tmp_path / "ledger"
    _one_entry_appends(Ledger(root), "m@1", range(10))
    victim = sorted(batch_files(root).values())[6]
    victim.unlink()
    with pytest.raises(LedgerCorruption, match=f"seq gap, expected a batch starting at {int(victim.name[:20])}"):
        Ledger(root).compact()
    assert len(batch_files(root)) == 9, "files were merged across the gap"
    assert not (root / ".compaction.json").exists()


class Compactor:
    def __init__(self, root: Path, small_rows: int, die_after: str | None = None):
        self.proc = subprocess.Popen(
            [sys.executable, str(COMPACTOR), "--root", str(root), "--small-rows", str(small_rows)]
            + (["--die-after", die_after] if die_after else []),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
        )
        _LIVE.append(self)
        line = self.proc.stdout.readline()
        assert line.startswith("READY"), line + self.proc.stderr.read()
        self.go_at = 0.0

    def go(self) -> None:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        self.go_at = time.monotonic()

    def kill(self) -> None:
        try:
            os.kill(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def _reader_loop(root: Path, stop: threading.Event, errors: list, reads: list) -> None:
    """Reads the whole ledger again and again through one long-lived handle that never runs
    recover(): every read must hold each entry exactly once, seqs 1..head."""
    reader = Ledger(root)
    while not stop.is_set():
        try:
            t = reader.read(columns=["seq", "idempotency_key"])
            seqs = t.column("seq").to_pylist()
            keys = t.column("idempotency_key").to_pylist()
            assert seqs == list(range(1, len(seqs) + 1)), "a read saw a gap or a seq twice"
            assert len(set(keys)) == len(keys), "a read saw an entry twice"
            reads.append(len(seqs))
        except Exception as exc:  # noqa: BLE001 - reported to the test thread
            errors.append(exc)
            return


def run_compaction_kills(root: Path, trials: int, seed: int) -> Counter:
    """Each trial: 40-80 one-entry appends, then a compactor subprocess killed at a random moment
    of its run while a writer subprocess appends and a reader thread reads; then the ledger as
    the kill left it (read by the never-recovering reader and checked), recovered by a fresh
    handle, checked again (every entry exactly once, markers clean, no journal)."""
    rng = random.Random(seed)
    stats: Counter = Counter()
    ledger = Ledger(root)
    keys: set[str] = set()
    durations: list[float] = []  # go -> DONE of uninterrupted runs, as observed
    nxt = 0
    ahead = Writer(root, "cw@1")
    tmp_markers = root.parent / "markers-aside"
    tmp_markers.mkdir()
    for trial in range(trials):
        keys |= _one_entry_appends(ledger, f"k{trial}@1", range(rng.randint(40, 80)))
        comp = Compactor(root, small_rows=400)
        w = ahead
        w.wait_ready()
        stop, errors, reads = threading.Event(), [], []
        rt = threading.Thread(target=_reader_loop, args=(root, stop, errors, reads), daemon=True)
        rt.start()
        w.go(start=nxt)
        comp.go()
        # every third run goes to the end: its duration calibrates where the others are killed,
        # uniformly over 1.2 times a run (the swap and removals are its last few percent)
        calibrate = trial % 3 == 0
        kill_at = comp.go_at + (120 if calibrate else rng.uniform(0, 1.2 * statistics.median(durations[-5:])))
        while time.monotonic() < kill_at and comp.proc.poll() is None:
            time.sleep(0.0005)
        done = comp.proc.poll() is not None
        if done:
            out = comp.proc.stdout.read()
            assert comp.proc.returncode == 0 and out.startswith("DONE"), out + comp.proc.stderr.read()
            durations.append(time.monotonic() - comp.go_at)
            stats["completed"] += 1
        else:
            comp.kill()
            stats["killed"] += 1
            journal = (root / ".compaction.json").exists()
            stats["killed_with_journal"] += journal
        w.kill()  # the writer too, mid-append or not
        acks = w.acks()
        nxt_before, nxt = nxt, w.start + len(acks)
        stop.set()
        rt.join(30)
        assert not errors, errors[0]
        stats["reads_during"] += len(reads)
        # the writer's in-flight batch (unacknowledged) is retried from nxt: all or nothing now
        keys |= {k for b in range(nxt_before, nxt) for k in lw.batch_keys("cw@1", b)}
        inflight = set(lw.batch_keys("cw@1", nxt))
        # as the kill left it, before any recovery: exactly once already
        t = ledger.read(columns=["seq", "idempotency_key"])
        seen = t.column("idempotency_key").to_pylist()
        assert len(seen) == len(set(seen)) and t.column("seq").to_pylist() == list(range(1, len(seen) + 1))
        assert keys <= set(seen) <= keys | inflight
        if inflight <= set(seen):
            keys |= inflight
            nxt += 1
        fresh = Ledger(root)  # recover(): finishes or undoes the dead compaction
        assert not (root / ".compaction.json").exists()
        # the next trial's writer starts only now: its own start-up recover() would otherwise
        # race this one, and a recover() that finds another finishing the compaction leaves the
        # journal to it (non-blocking publish lock), which this check would take for a leftover
        ahead = Writer(root, "cw@1") if trial + 1 < trials else None
        assert list((root / "_tmp").iterdir()) == []
        assert_whole_ledger(root, keys)
        # clean markers, but for the killed writer's own: one for head + 1 with no batch (young,
        # so kept: its writer might be alive; the next publish at that seq makes it a loser's)
        head, files = fresh.head(), batch_files(root)
        pending = [p for seq, _, p in markers(root) if seq not in files]
        assert all(seq == head + 1 for seq, _, p in markers(root) if seq not in files), pending
        stats["dead_writer_marker"] += len(pending)
        for p in pending:
            p.rename(tmp_markers / p.name)
        assert_clean_markers(root)
        for p in pending:
            (tmp_markers / p.name).rename(p)
        assert fresh.append(lw.batch_entries("cw@1", max(0, nxt - 1))).appended == 0  # keys still known
    # and a last compaction, not interrupted, over whatever the kills left
    files = batch_files(root)  # once: listed per marker, thousands of them made this minutes long
    for p in root.glob("*.sum"):  # the last killed writer's marker: stale by now for the test
        if int(p.name[:20]) not in files:
            p.unlink()
    ledger.compact(small_rows=400)
    assert_whole_ledger(root, keys)
    assert_clean_markers(root)
    stats["files_at_end"] = len(batch_files(root))
    stats["entries"] = len(keys)
    return stats


def test_a_read_slower_than_its_retry_budget_still_retries(tmp_path, monkeypatch):
    """A read that meets a compaction's swap tries again for READ_RETRY_SECONDS counted from that
    change, and at least READ_RETRY_MIN_TRIES times: a read that alone took longer than the budget
    (a starved machine) is not reported as files that never stopped changing. Files that do never
    stop changing still are."""
    from ledger import store

    monkeypatch.setattr(store, "READ_RETRY_SECONDS", 0.05)
    ledger = Ledger(tmp_path / "ledger")
    calls: list[float] = []

    def slow_then_settled():
        calls.append(time.monotonic())
        if len(calls) == 1:
            time.sleep(0.1)  # twice the whole budget, then the files moved under it
            raise store._Moved()
        return "read"

    assert ledger._stable(slow_then_settled) == "read" and len(calls) == 2

    def always_moving():
        raise store._Moved()

    with pytest.raises(LedgerCorruption, match="files kept changing"):
        ledger._stable(always_moving)


def test_kill9_compaction_random_points(tmp_path):
    seed = _seed()
    stats = run_compaction_kills(tmp_path / "ledger", trials=10, seed=seed)
    print(f"\ncompaction kill -9: {dict(stats)}")
    assert stats["killed"] + stats["completed"] == 10
    assert stats["killed"] >= 2  # of the 6 runs meant to be killed, most die before their end


@pytest.mark.parametrize("step", ["journal", "commit", "removal"])
def test_compaction_killed_after_each_step(tmp_path, step):
    """The compactor SIGKILLs itself right after one step: before recovery a reader already sees
    every entry once; recover() rolls the run back (journal only) or forward (swapped in)."""
    root = tmp_path / "ledger"
    ledger = Ledger(root)
    keys = _one_entry_appends(ledger, "x@1", range(30))
    before = ledger.read()
    comp = Compactor(root, small_rows=100, die_after=step)
    comp.go()
    assert comp.proc.wait(60) == -signal.SIGKILL
    assert (root / ".compaction.json").exists(), "the kill came after the journal was removed"
    assert ledger.read().equals(before)  # the handle from before: no recover() has run
    assert ledger.verify().ok
    fresh = Ledger(root)
    assert not (root / ".compaction.json").exists()
    assert fresh.read().equals(before)
    assert_whole_ledger(root, keys)
    assert_clean_markers(root)
    assert len(batch_files(root)) == (30 if step == "journal" else 1)
    assert fresh.append(lw.batch_entries("x@1", 29)).duplicates == 1


def test_columns_read_once_are_served_from_the_process_cache_until_their_file_changes(tmp_path, monkeypatch):
    """ledger.store._ColumnCache and _FileFacts: a second read of the same columns, through any
    handle of the process, opens no batch file for them, and a new handle neither reads a file's
    rows and keys nor checks it again; a purge's new files are read again, and the old files'
    columns leave the cache."""
    from ledger import store

    root = tmp_path / "ledger"
    ledger = _small_ledger(root)
    whole = ledger.read()
    asked: list[list[str] | None] = []
    real = store.read_batch
    monkeypatch.setattr(store, "read_batch", lambda source, columns=None: asked.append(columns) or real(source, columns))

    # A new handle knows each file's rows and keys, and that it was verified (its checksum and
    # seqs), from the process; the columns asked for come from the cache: no file is read.
    checked = []
    check = Ledger._check
    monkeypatch.setattr(Ledger, "_check", lambda self, f, *a, **k: checked.append(f.name) or check(self, f, *a, **k))
    other = Ledger(root)
    assert other.read().equals(whole) and other.read(columns=["content"]).column("content").equals(whole.column("content"))
    assert asked == [] and checked == []
    assert ledger.read(columns=["entry_id"], since_seq=41).num_rows == 200 - 41 and asked == []
    alias = tmp_path / "alias"  # the same folder by another path: the same entries of the caches
    alias.symlink_to(root)
    assert Ledger(alias).read().equals(whole)
    assert asked == [] and checked == []
    # A file whose bytes changed where this process did not write them (its size or mtime moved):
    # checked and read again, by any handle.
    first = min(batch_files(root).values())
    os.utime(first, ns=(first.stat().st_atime_ns, first.stat().st_mtime_ns + 1))
    assert Ledger(root).read().equals(whole)
    assert checked == [first.name] and ("seq",) in {tuple(c) for c in asked} and len(asked) == 2  # checked, its columns read again
    asked.clear()

    erased = whole.column("entry_id")[7].as_py()
    assert ledger.purge({erased: "e_erasure"}).rows_stubbed == 1
    folder = os.path.realpath(root)
    keys = {k for k in store._COLUMNS._files if k[0] == folder}
    assert keys == set(), keys  # dropped with the purge
    after = Ledger(root).read(columns=["entry_id", "content"])
    assert after.column("content")[7].as_py() != whole.column("content")[7].as_py()
    assert ledger.read(columns=["content"]).column("content").equals(after.column("content"))
    held = {k[1:3] for k in store._COLUMNS._files if k[0] == folder}
    assert held == {(p.name, p.stat().st_ino) for p in batch_files(root).values()}  # the new files only

    Ledger(root).read()
    mine = sum(c.nbytes for k, columns in store._COLUMNS._files.items() if k[0] == folder for c in columns.values())
    limit = mine // 2  # room for about half of this ledger's five files
    monkeypatch.setenv("MEMC_LEDGER_CACHE_BYTES", str(limit))
    store._COLUMNS.keep_only(folder, set())
    assert Ledger(root).read().column("entry_id").equals(after.column("entry_id"))
    assert 0 < store._COLUMNS._bytes <= limit  # the least recently read went first
    assert 0 < len([k for k in store._COLUMNS._files if k[0] == folder]) < 5

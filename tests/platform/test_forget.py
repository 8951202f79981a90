"""Forgetting: selectors and their errors, the ledger purge protocol, the journal, pending
erasures excluded at once, the CLI, and SIGKILL at random points of a real cascade.

Most tests run on small ledgers written here (no build). The kill trials copy one home built
through Dagster (tests/forget_homes.py) and kill a child process running the cascade
without its final rebuild (ledger rewrite, inbox/Dagster scrub, view drops), and (slow) with
it, during the rebuild; after each the cascade is run again and must finish the erasure. The
full cascade with its rebuild, checked in every store, runs in tests/platform/test_canaries.py.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import scaled
from forget_homes import copy_home, files_containing, forensic_home

from forgetting import forget, journals, pending, resume
from forgetting.cascade import ForgetReport
from ledger import Ledger, NewEntry
from ledger.stubs import is_erased_stub
from memc.home import MemcHome
from memc.visibility import ADMIN
from views.marts import ENTITIES, mart_path

REPO = Path(__file__).resolve().parents[2]
T = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def small(tmp_path, monkeypatch):
    """A home with three batches: alice's secret and a public message; a derived claim computed
    from the secret; bob's entry in another scope."""
    monkeypatch.setenv("MEMC_PARQUET_COMPRESSION", "none")
    home = MemcHome.resolve(tmp_path / "home").ensure()
    ledger = Ledger(home.ledger)
    a = ledger.append(
        [
            NewEntry(kind="message", content="alice says QzR8vN2kLp0Xw7Tq9Ym4 in private", valid_at=T, actor="alice", visibility=("alice",), source_uri="file:///x/a.jsonl"),
            NewEntry(kind="message", content="a public hello", valid_at=T, actor="bob", source_uri="file:///x/a.jsonl"),
        ]
    )
    d = ledger.append(
        [NewEntry(kind="derived_claim", content="claim: alice centrality = 0.5", valid_at=T, derived_from=(a.entry_ids[0],), producer="dreaming", producer_version="1", visibility=("alice",))]
    )
    b = ledger.append([NewEntry(kind="document", scope="hr", content="bob's own note", valid_at=T, visibility=("bob",))])
    return home, {"secret": a.entry_ids[0], "public": a.entry_ids[1], "derived": d.entry_ids[0], "bob": b.entry_ids[0]}


def _rows(home) -> dict[str, dict]:
    return {r["entry_id"]: r for r in Ledger(home.ledger).iter_entries()}


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kw, message",
    [
        ({}, "say what to forget"),
        ({"scope": "a", "subject": "ent_" + "0" * 24}, "exactly one kind of selector"),
        ({"entry_ids": ["e_" + "0" * 24], "source_uri": "file:///x"}, "exactly one kind of selector"),
        ({"entry_ids": ["not-an-id"]}, "malformed entry id"),
        ({"entry_ids": ["e_" + "0" * 24]}, "no such entry"),
        ({"scope": "../etc"}, "malformed scope"),
        ({"subject": "Elena"}, "give an entity id"),
        ({"scope": "default", "reason": "  "}, "needs a reason"),
        ({"scope": "default", "by": ""}, "needs the principal"),
        ({"scope": "default", "by": "bob' OR 1=1"}, "malformed principal"),
    ],
)
def test_bad_requests_are_refused_before_anything_changes(small, kw, message):
    home, _ = small
    before = {p.name: p.read_bytes() for p in home.ledger.iterdir() if p.is_file()}
    kw = {"reason": "because", "by": "alice", **kw}
    with pytest.raises(ValueError, match=message):
        forget(home, rebuild=False, **kw)
    assert {p.name: p.read_bytes() for p in home.ledger.iterdir() if p.is_file()} == before
    assert journals(home) == []


def test_tombstones_cannot_be_erased(small):
    home, ids = small
    rep = forget(home, entry_ids=[ids["bob"]], reason="r", by="bob", rebuild=False)
    with pytest.raises(ValueError, match="tombstones cannot be erased"):
        forget(home, entry_ids=[rep.erasure_id], reason="r", by="bob", rebuild=False)


# --------------------------------------------------------------------------- the cascade on a small ledger


def test_erasure_purges_the_named_entry_and_its_derived_claims_only(small):
    home, ids = small
    before = _rows(home)
    rep = forget(home, entry_ids=[ids["secret"]], reason="user asked", by="alice", rebuild=False)
    assert rep.status == "done" and rep.named == [ids["secret"]] and rep.cascaded == [ids["derived"]]
    assert rep.ledger_rows_stubbed == 2 and rep.ledger_files_rewritten == 2
    after = _rows(home)
    ledger = Ledger(home.ledger)
    assert ledger.verify().ok and ledger.head() == 5  # seqs kept, one tombstone appended
    for e in (ids["secret"], ids["derived"]):
        stub = after[e]
        assert is_erased_stub(stub) and stub["content"] == "" and stub["visibility"] == [ADMIN]
        assert stub["seq"] == before[e]["seq"] and stub["actor"] is None and stub["source_uri"] is None
    for e in (ids["public"], ids["bob"]):
        assert after[e] == before[e], "an entry the erasure did not name changed"
    tomb = after[rep.erasure_id]
    assert tomb["kind"] == "erasure" and tomb["visibility"] == [ADMIN] and tomb["actor"] == "alice"
    attrs = json.loads(tomb["attributes"])
    assert attrs["entry_ids"] == sorted([ids["secret"], ids["derived"]]) and attrs["reason"] == "user asked"
    assert "QzR8vN2kLp0Xw7Tq9Ym4" not in json.dumps(tomb, default=str)
    assert files_containing(home.root, ["QzR8vN2kLp0Xw7Tq9Ym4"]) == {}
    assert [j["step"] for j in journals(home)] == ["done"]

    # Again: nothing to do, no second tombstone.
    again = forget(home, entry_ids=[ids["secret"]], reason="user asked", by="alice", rebuild=False)
    assert again.status == "nothing_to_erase" and again.already_erased == [ids["secret"]]
    assert Ledger(home.ledger).head() == 5


def test_source_and_scope_selectors(small):
    home, ids = small
    rep = forget(home, source_uri="file:///x/a.jsonl", reason="source withdrawn", by="ops", rebuild=False)
    assert rep.named == sorted([ids["secret"], ids["public"]]) and rep.cascaded == [ids["derived"]]
    rep = forget(home, scope="hr", reason="tenant left", by="ops", rebuild=False)
    assert rep.named == [ids["bob"]]
    nothing = forget(home, source_uri="../../etc/passwd", reason="r", by="ops", rebuild=False)
    assert nothing.status == "nothing_to_erase"
    assert all(is_erased_stub(r) or json.loads(r["attributes"] or "{}").get("entry_ids") for r in Ledger(home.ledger).iter_entries())


def _interrupt_after_tombstone(home, entry_id: str) -> None:
    """A forget that stops (as if killed) right after its tombstone is appended."""

    class Stop(Exception):
        pass

    def stop(_eid, step):
        if step == "recorded":
            raise Stop

    with pytest.raises(Stop):
        forget(home, entry_ids=[entry_id], reason="r", by="alice", rebuild=False, on_step=stop)


def test_a_pending_erasure_is_excluded_from_compiles_before_the_purge(small):
    """Stop the cascade right after the tombstone is appended: the content is still in the
    ledger, yet the independent checker already refuses it to everyone; resume purges."""
    from query.acl import check_context
    from query.context import Context, ContextItem, StateFact

    home, ids = small

    _interrupt_after_tombstone(home, ids["secret"])
    rows = _rows(home)
    assert "QzR8vN2kLp0Xw7Tq9Ym4" in rows[ids["secret"]]["content"], "the purge must not have run yet"
    assert len(pending(home)) == 1

    def item(e):
        return ContextItem(entry_id=e, source_ref=None, scope="default", kind="message", actor=None, text="t", valid_at="", recorded_at="", routes=["fulltext"], score=1.0, entry_ids=[e])

    ctx = Context(question="q", asker="alice", scope=None, ledger_head=0, watermarks={})
    ctx.items = [item(ids["secret"]), item(ids["public"])]
    ctx.state = [StateFact(subject="alice", predicate="centrality", object="0.5", valid_from="", valid_to=None, source_entry_id=ids["derived"], source_ref=None, quote="", scope="default")]
    rep = check_context(ctx, Ledger(home.ledger))
    assert [it.entry_id for it in ctx.items] == [ids["public"]] and ctx.state == []
    assert rep.dropped == 2 and {v["why"] for v in rep.violations} == {"erased"}

    done = resume(home, rebuild=False)
    assert done.resumed and pending(home) == []
    assert is_erased_stub(_rows(home)[ids["secret"]])


def test_a_build_finishes_an_interrupted_erasure_before_compiling(tmp_path, monkeypatch):
    """An erasure stopped right after its tombstone (a crash) must not let the next build compile
    the erased text into a view: the build purges and drops first, then compiles. (A home of two
    messages outside any session: its interactions, sessions and relations marts are empty.)"""
    from orchestration.runner import build
    from views.vectors import LanceVectorStore

    monkeypatch.setenv("MEMC_PARQUET_COMPRESSION", "none")  # so that a byte search can prove the erasure
    home = MemcHome.resolve(tmp_path / "home").ensure()
    a = Ledger(home.ledger).append(
        [
            NewEntry(kind="message", content="alice says QzR8vN2kLp0Xw7Tq9Ym4 in private", valid_at=T, actor="alice", visibility=("alice",)),
            NewEntry(kind="message", content="a public hello", valid_at=T, actor="bob"),
        ]
    )
    ids = {"secret": a.entry_ids[0], "public": a.entry_ids[1]}

    _interrupt_after_tombstone(home, ids["secret"])
    assert len(pending(home)) == 1
    report = build(home)
    assert report.success and len(report.erasures_finished) == 1 and pending(home) == []
    assert is_erased_stub(_rows(home)[ids["secret"]])
    index = LanceVectorStore(home.vectors)
    assert ids["public"] in {r for r in (h["entry_id"] for h in index.search(text="public hello", principals=["alice"], scope=None, k=10))}
    assert not index.search(text="QzR8vN2kLp0Xw7Tq9Ym4", principals=["alice"], scope=None, k=10)
    assert not any(b"QzR8vN2kLp0Xw7Tq9Ym4" in p.read_bytes() for p in home.root.rglob("*") if p.is_file())


def test_readers_never_see_a_half_rewritten_ledger(tmp_path, monkeypatch):
    """A reader process verifies and reads the whole ledger in a loop while the purge rewrites
    every file: it must never meet a checksum mismatch, a missing batch or a torn file."""
    monkeypatch.setenv("MEMC_PARQUET_COMPRESSION", "none")
    home = MemcHome.resolve(tmp_path / "home").ensure()
    ledger = Ledger(home.ledger)
    ids = []
    for i in range(60):
        ids += ledger.append([NewEntry(kind="message", content=f"m{i}-{j}", valid_at=T) for j in range(3)]).entry_ids
    reader = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import os, sys, time
            sys.path.insert(0, {str(REPO)!r})
            from ledger import Ledger
            n, t_end = 0, time.time() + 60
            print("ready", flush=True)
            while time.time() < t_end:
                l = Ledger({str(home.ledger)!r})
                t = l.read(["seq", "content"])
                assert t.column("seq").to_pylist() == list(range(1, t.num_rows + 1)), "seq gap"
                rep = l.verify()
                assert rep.ok, rep.problems
                n += 1
                if os.path.exists({str(tmp_path / 'stop')!r}):
                    break
            print("reads", n, flush=True)
        """)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )
    assert reader.stdout.readline().strip() == "ready"
    erased = {e: "e_" + "f" * 24 for e in ids[::2]}
    rep = ledger.purge(erased)
    (tmp_path / "stop").write_text("x")
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err
    assert len(rep.files_rewritten) == 60 and rep.rows_stubbed == len(erased)
    print(f"reader made {out.split()[-1]} full verified reads during a 60-file rewrite")
    assert ledger.verify().ok


def test_inbox_archives_holding_erased_text_are_removed_and_others_kept(small):
    home, ids = small
    processed, rejected = home.inbox / "processed", home.inbox / "rejected"
    processed.mkdir(parents=True)
    rejected.mkdir(parents=True)
    (processed / "a.jsonl").write_text('{"text": "alice says QzR8vN2kLp0Xw7Tq9Ym4 in private"}\n')
    (rejected / "bad.jsonl").write_text("broken QzR8vN2kLp0Xw7Tq9Ym4\n")
    (rejected / "bad.jsonl.error.json").write_text("{}")
    (rejected / "other.jsonl").write_text("relationships internationalization Potsdam\n")
    (home.root / "querylog").mkdir()
    (home.root / "querylog" / "2024-05-01.jsonl").write_text('{"question": "what is QzR8vN2kLp0Xw7Tq9Ym4?"}\n{"question": "hello"}\n')
    outside = home.root.parent / "outside.txt"
    outside.write_text("QzR8vN2kLp0Xw7Tq9Ym4")
    rep = forget(home, entry_ids=[ids["secret"]], reason="r", by="alice", rebuild=False)
    assert sorted(rep.files_removed) == ["inbox/processed/a.jsonl", "inbox/rejected/bad.jsonl", "inbox/rejected/bad.jsonl.error.json"]
    assert rep.files_rewritten == ["querylog/2024-05-01.jsonl"]
    assert (rejected / "other.jsonl").exists(), "plain words are no needles: an unrelated file stays"
    assert (home.root / "querylog" / "2024-05-01.jsonl").read_text().count("\n") == 2
    assert outside.read_text() == "QzR8vN2kLp0Xw7Tq9Ym4", "nothing outside the memory home is touched"
    assert files_containing(home.root, ["QzR8vN2kLp0Xw7Tq9Ym4"]) == {}


def test_erased_text_in_dagsters_event_log_and_compute_logs_is_scrubbed_in_every_encoding(small):
    """A real Dagster run on the home logs an entry's text (as a view logging sample rows would):
    Dagster's event log stores it as JSON with non-ASCII characters escaped (Müller is
    M\\u00fcller), the compute logs as UTF-8. Before the scrub searched the JSON forms, the
    escaped copy survived the erasure in every SQLite file that held it. ~10 s (one Dagster run)."""
    from canary_stores import _dagster_db_hits, _text_file_hits, compute_log_files, log_through_dagster

    home, ids = small
    text = 'Frau Müller-Lüdenscheidt said "the vault code is 4471"'
    (eid,) = Ledger(home.ledger).append([NewEntry(kind="message", content=text, valid_at=T, actor="alice", visibility=("alice",), source_ref="call-7Hq2Zx9Lw3Ps")]).entry_ids
    log_through_dagster(home, [eid, ids["public"]])
    markers = ["Müller-Lüdenscheidt", "call-7Hq2Zx9Lw3Ps", "a public hello"]
    before_db = _dagster_db_hits(home, markers)
    assert set(before_db) == set(markers), f"the run must have put the text in the event log: {before_db}"
    # The database files with their write-ahead logs: memc's event log keeps its connections open
    # (orchestration/eventlog.py), so the newest events may still be in a -wal file.
    raw = b"".join(p.read_bytes() for p in home.dagster.rglob("*.db*"))
    assert "Müller-Lüdenscheidt".encode() not in raw and b"M\\u00fcller-L\\u00fcdenscheidt" in raw, "escaped, as the scrub must expect"
    assert set(_text_file_hits(home.root, compute_log_files(home), markers)) == set(markers)

    rep = forget(home, entry_ids=[eid], reason="asked", by="alice", rebuild=False)
    assert rep.status == "done" and rep.named == [eid]
    assert any(p.startswith("dagster/history/runs/") for p in rep.sqlite_scrubbed), rep.sqlite_scrubbed
    assert any("/compute_logs/" in p for p in rep.files_rewritten), rep.files_rewritten
    erased = markers[:2]
    assert not set(_dagster_db_hits(home, erased)) and not set(_text_file_hits(home.root, compute_log_files(home), erased))
    assert files_containing(home.root, erased) == {}
    # what the erasure did not name is still logged: the scrub cut only the erased entry's text
    assert "a public hello" in _dagster_db_hits(home, markers) and "a public hello" in _text_file_hits(home.root, compute_log_files(home), markers)


def test_cli_forget(small):
    from cli.main import cli

    home, ids = small
    runner = CliRunner()
    r = runner.invoke(cli, ["forget", "--home", str(home.root), "--entry", ids["secret"], "--by", "alice"], obj={})
    assert r.exit_code == 2 and "--reason" in r.output
    r = runner.invoke(cli, ["forget", "--home", str(home.root), "--scope", "hr", "--entry", ids["bob"], "--reason", "x", "--by", "a"], obj={})
    assert r.exit_code == 1 and "exactly one kind of selector" in r.output
    r = runner.invoke(cli, ["forget", "--home", str(home.root), "--entry", ids["secret"], "--reason", "asked", "--by", "alice", "--no-rebuild", "--json"], obj={})
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["status"] == "done" and d["erased"] == sorted([ids["secret"], ids["derived"]])
    r = runner.invoke(cli, ["forget", "--home", str(home.root), "--entry", ids["secret"], "--reason", "asked", "--by", "alice", "--no-rebuild"], obj={})
    assert r.exit_code == 0 and "nothing to erase" in r.output and "1 already erased" in r.output
    r = runner.invoke(cli, ["forget", "--home", str(home.root), "--resume", "--no-rebuild"], obj={})
    assert r.exit_code == 0 and "resumed 0" in r.output


def test_forgetting_does_not_import_dagster():
    code = "import sys; import forgetting, forgetting.cascade, query.acl; print('dagster' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- SIGKILL at random points

CHILD = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, {repo!r})
    os.environ["MEMC_PARQUET_COMPRESSION"] = "none"
    from forgetting import forget
    from memc.home import MemcHome
    home = MemcHome.resolve({home!r})
    print("ready", flush=True)
    t0 = time.perf_counter()
    def step(_eid, name):
        print("step", name, time.perf_counter() - t0, flush=True)
    rebuild = False
    if {rebuild!r}:
        from orchestration.runner import rebuild_views as rebuild
    rep = forget(home, entry_ids={ids!r}, reason="kill test", by="alice", rebuild=rebuild, on_step=step)
    print("done", time.perf_counter() - t0, rep.status, flush=True)
""")


def _child(home, ids, rebuild: bool = False) -> subprocess.Popen:
    code = CHILD.format(repo=str(REPO), home=str(home.root), ids=list(ids), rebuild=rebuild)
    # A build's log goes to a file: a pipe nobody reads while the build runs would fill and stall it.
    if rebuild:
        with open(home.root.parent / "child.err", "w") as err:
            return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)


def _kill_trials(tmp_path_factory, trials: int, seed: int) -> None:
    fh = forensic_home(tmp_path_factory)
    canaries = list(fh.canaries)
    erase = [fh.canaries[canaries[0]], fh.canaries[canaries[1]]]  # public message, alice's inbox document
    keep_canary = canaries[2]  # bob/carol's event: must survive every trial
    base_rows = _rows(fh.home)
    rng = random.Random(seed)

    # How long an undisturbed cascade takes in a child (after its imports): the kill window.
    probe = copy_home(fh, tmp_path_factory.mktemp("probe") / "home")
    p = _child(probe.home, erase)
    assert p.stdout.readline().strip() == "ready"
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    at = {ln.split()[1]: float(ln.split()[2]) for ln in out.splitlines() if ln.startswith("step ")}
    window = float(out.splitlines()[-1].split()[1])
    # Most kills land inside the cascade proper (journal written .. done), the rest anywhere.
    order = ["requested", "recorded", "aux_scrubbed", "ledger_purged", "views_dropped", "done"]
    erased = set(journals(probe.home)[0]["erased"])  # the two entries and what dreaming derived from them

    steps_at_kill: Counter = Counter()
    t_start = time.perf_counter()
    for trial in range(trials):
        h = copy_home(fh, tmp_path_factory.mktemp(f"kill{trial}") / "home").home
        p = _child(h, erase)
        assert p.stdout.readline().strip() == "ready"
        if rng.random() < 0.3:  # anywhere in the run
            time.sleep(rng.uniform(0, window * 1.1))
        else:  # inside a chosen step: wait for the one before it, then a random part of its length
            i = rng.randrange(len(order) - 1)
            while True:
                line = p.stdout.readline()
                if not line or line.startswith(f"step {order[i]} "):
                    break
            time.sleep(rng.uniform(0, 1.2 * (at[order[i + 1]] - at[order[i]])))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
        js = journals(h)
        steps_at_kill[js[0]["step"] if js else "not started"] += 1

        # Run again: it completes (resuming, or starting afresh when the kill came first).
        rep = forget(h, entry_ids=erase, reason="kill test", by="alice", rebuild=False)
        assert rep.status in ("done", "nothing_to_erase"), rep.to_dict()
        assert pending(h) == [] and [j["step"] for j in journals(h)] == ["done"], f"trial {trial}"
        ledger = Ledger(h.ledger)
        assert ledger.verify().ok, ledger.verify().problems
        rows = _rows(h)
        tombs = [r for r in rows.values() if r["kind"] == "erasure" and not is_erased_stub(r)]
        assert len(tombs) == 1, f"trial {trial}: {len(tombs)} tombstones"
        for e, before in base_rows.items():
            if e in erased:
                assert is_erased_stub(rows[e]), f"trial {trial}: {e} not purged"
            else:
                assert rows[e] == before, f"trial {trial}: entry {e} ({before['visibility']}) changed"
        assert len(rows) == len(base_rows) + 1
        found = files_containing(h.root, canaries)
        assert canaries[0] not in found and canaries[1] not in found, f"trial {trial}: {found}"
        assert any(f.startswith("ledger/") for f in found.get(keep_canary, [])), "an entry the erasure did not name lost its text"
        assert not any(h.view_dirs()[v].exists() for v in h.view_dirs()), "views are dropped for the next build"
    print(
        f"kill trials: {trials} (seed {seed}); cascade {window:.2f} s, steps at {at}; journal step at the kill: "
        f"{dict(steps_at_kill)}; {time.perf_counter() - t_start:.1f} s"
    )


@pytest.mark.covered_by_slow
def test_kill_forget_at_random_points_10_trials(tmp_path_factory):
    _kill_trials(tmp_path_factory, trials=10, seed=8)


@pytest.mark.slow
def test_kill_forget_at_random_points_60_trials(tmp_path_factory, seed):
    """60 at full scale (MEMC_SLOW_SCALE reduces it in CI), from a fresh seed each run (printed;
    MEMC_TEST_SEED replays the kill points, the machine's timing aside)."""
    _kill_trials(tmp_path_factory, trials=scaled(60, least=10), seed=seed)


def _kill_during_rebuild(tmp_path_factory, trials: int, seed: int) -> None:
    """kill -9 of `forget` with its rebuild, after the purge and the view drop, at a random moment
    of the Dagster build that compiles the views again (dbt, LanceDB, Kùzu, dreaming appending
    derived claims); then `forget` again, with its rebuild: it resumes, builds, and leaves no
    canary in any store and every entry it did not name as it was."""
    from canary_stores import all_hits

    from orchestration.runner import rebuild_views

    fh = forensic_home(tmp_path_factory)
    canaries = list(fh.canaries)
    erase = [fh.canaries[canaries[0]], fh.canaries[canaries[1]]]
    keep = canaries[2]
    base_rows = _rows(fh.home)
    rng = random.Random(seed)
    landed: Counter = Counter()
    t_start = time.perf_counter()
    # The rebuild's length depends on the machine: 40-100 s on two loaded cores (2026-12-02), under
    # 30 s on an idle one since builds got faster. A kill drawn after the rebuild had finished
    # is not a trial: it is drawn again, from half the range, on a fresh copy of the home.
    latest = 30.0
    for trial in range(trials):
        while True:
            h = copy_home(fh, tmp_path_factory.mktemp(f"rebuildkill{trial}") / "home").home
            p = _child(h, erase, rebuild=True)
            assert p.stdout.readline().strip() == "ready"
            while True:
                line = p.stdout.readline()
                assert line, f"trial {trial}: the child ended before dropping the views: {(h.root.parent / 'child.err').read_text()[-2000:]}"
                if line.startswith("step views_dropped "):
                    break
            time.sleep(rng.uniform(1, latest))
            p.send_signal(signal.SIGKILL)
            p.wait(timeout=60)
            (j,) = journals(h)
            landed[j["step"]] += 1
            if j["step"] == "views_dropped" or latest <= 2:
                break
            latest /= 2  # the rebuild was done: kill sooner
        assert j["step"] == "views_dropped", f"trial {trial}: the kill came after the rebuild ({j['step']}) even within 2 s of its start"

        rep = forget(h, entry_ids=erase, reason="kill test", by="alice", rebuild=rebuild_views)
        assert rep.status == "nothing_to_erase" and rep.resumed == [j["erasure_id"]] and rep.rebuilt, rep.to_dict()
        assert pending(h) == [] and [x["step"] for x in journals(h)] == ["done"]
        assert Ledger(h.ledger).verify().ok
        rows = _rows(h)
        erased = set(j["erased"])
        for e, before in base_rows.items():
            if e in erased:
                assert is_erased_stub(rows[e]), f"trial {trial}: {e} not purged"
            else:
                assert rows[e] == before, f"trial {trial}: entry {e} ({before['visibility']}) changed"
        new = [r for e, r in rows.items() if e not in base_rows]
        assert sum(r["kind"] == "erasure" for r in new) == 1, f"trial {trial}: {len(new)} new rows"
        assert all(r["kind"] in ("erasure", "derived_claim") for r in new), "only the tombstone and recomputed derived claims are new"
        gone = all_hits(h, canaries[:2], [])
        assert gone == {k: {} for k in gone}, f"trial {trial}: {gone}"
        kept = all_hits(h, [keep], [])
        for store in ("ledger", "parquet", "duckdb", "lancedb", "kuzu"):
            assert kept[store], f"trial {trial}: the {store} lost the entry the erasure did not name"
    print(f"rebuild kill trials: {trials} (seed {seed}); journal step at the kill: {dict(landed)}; {time.perf_counter() - t_start:.1f} s")


@pytest.mark.slow
def test_kill_forget_during_its_rebuild(tmp_path_factory, seed):
    """3 at full scale, 1 in CI (MEMC_SLOW_SCALE=0.2): each ~2-3 min on 2 busy cores (a killed
    build, then a whole one; 160 s measured at load 8)."""
    _kill_during_rebuild(tmp_path_factory, trials=scaled(3, least=1), seed=seed)


def test_forget_report_is_json_ready():
    d = ForgetReport(status="done", named=["e_1"], cascaded=["e_2"]).to_dict()
    assert json.loads(json.dumps(d))["erased"] == ["e_1", "e_2"]


def test_subject_selector_erases_what_is_about_an_entity(tmp_path_factory):
    """--subject: the turns the entity spoke or is mentioned in, the sources of claims about it,
    and the derived claims about it (Mallory: the lunch conversation holds a canary)."""
    import pyarrow.parquet as pq

    fh = copy_home(forensic_home(tmp_path_factory), tmp_path_factory.mktemp("subject") / "home")
    ents = pq.read_table(mart_path(fh.home, ENTITIES)).to_pylist()
    (mallory,) = [e for e in ents if e["name"] == "Mallory"]
    canary_entry = fh.canaries[next(iter(fh.canaries))]  # "Mallory: I moved to <canary>..."
    before = _rows(fh.home)
    rep = forget(fh.home, subject=mallory["entity_id"], reason="right to be forgotten", by="mallory", rebuild=False)
    assert canary_entry in rep.named
    assert set(mallory["evidence"]) <= set(rep.named)
    about = [e for e, r in before.items() if r["kind"] == "derived_claim" and json.loads(r["attributes"] or "{}").get("subject_id") == mallory["entity_id"]]
    assert about and set(about) <= set(rep.erased)
    after = _rows(fh.home)
    assert all(after[e] == before[e] for e in before if e not in rep.erased)
    with pytest.raises(ValueError, match="entity id"):
        forget(fh.home, subject="Mallory", reason="r", by="mallory", rebuild=False)

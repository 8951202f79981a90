"""Shared fixtures. Everything runs against real engines (Dagster, dbt on DuckDB, LanceDB, Kùzu,
the packaged MiniLM model) in throwaway memory homes."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Callable

import pytest

os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples" / "corpus"


# The test files that took longest in CI's last measured run (worker seconds on 2 loaded cores,
# 2026-12-02), longest first. `make test` hands whole files to pytest-xdist workers in collection
# order (`--dist loadfile --no-loadscope-reorder`), so these start first and the short files fill
# in behind them. xdist's default order, by number of tests, sent the single-test files of several
# minutes (the daemon, the S3 home) out last: the run's last six minutes waited on them alone.
LONGEST_FIRST = (
    "tests/platform/test_forget.py",
    "tests/platform/test_daemon.py",
    "tests/platform/test_storage_s3.py",
    "tests/platform/test_security.py",
    "tests/platform/test_memory_actions.py",
    "tests/platform/test_state.py",
    "tests/engine/test_ledger.py",
    "tests/platform/test_build_lock.py",
    "tests/platform/test_replay.py",
    "tests/platform/test_profile.py",
    "tests/platform/test_backfill.py",
    "tests/platform/test_current_first.py",
    "tests/engine/test_ledger_s3.py",
    "tests/platform/test_canaries.py",
    "tests/platform/test_ask_warm.py",
    "tests/platform/test_api.py",
    "tests/engine/test_vectors.py",
    "tests/platform/test_compare.py",
    "tests/platform/test_first_use.py",
    "tests/platform/test_eval_locomo.py",
    "tests/platform/test_end_to_end.py",
    "tests/platform/test_platform_health.py",
    "tests/platform/test_ui_browser.py",
)


def pytest_collection_modifyitems(config, items):
    """The longest files first (LONGEST_FIRST); the rest, and the tests within a file, keep
    their order (a stable sort on the file alone)."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def ingest_sample_corpus(home) -> None:
    """The demo's corpus: the team's files are public; one conversation is private to two people."""
    from ingestion import ingest_paths
    from ledger import Ledger

    ledger = Ledger(home.ledger)
    ingest_paths(ledger, [SAMPLES / "team"], scope="team", visibility=("public",))
    ingest_paths(ledger, [SAMPLES / "private"], scope="team", visibility=("elena", "priya"))


def built_once(tmp_path_factory, name: str, make: Callable[[Path], dict]) -> tuple[Path, dict]:
    """A memory home built once per test session for every pytest-xdist worker, and this worker's
    own copy of it: ``make(folder)`` builds ``folder/home`` and returns JSON facts about it.

    The first worker to ask builds under a file lock in the session's shared temp folder; the
    others wait for it instead of building the same home again (a build of the sample corpus is
    60-130 s on 2 cores, and 3 workers each built every shared home). Each worker gets a copy
    (under a second), so no two processes ever open one home's DuckDB or Kùzu files."""
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / f"shared-{name}"
    facts = shared / "facts.json"
    with FileLock(f"{shared}.lock"):
        if not facts.exists():  # a worker whose build failed left no facts: the next one retries
            shutil.rmtree(shared, ignore_errors=True)
            shared.mkdir(parents=True)
            facts.write_text(json.dumps(make(shared)))
    mine = tmp_path_factory.mktemp(name)
    shutil.copytree(shared / "home", mine / "home", symlinks=True)
    relocate_warehouse(mine / "home", shared / "home")
    return mine / "home", json.loads(facts.read_text())


def relocate_warehouse(home_root: Path, built_at: Path) -> None:
    """Point a copied home's warehouse views at the copy's files. dbt-duckdb writes the staging
    views and the marts' external views with absolute paths, so in a copy they still read the
    home it was copied from (and `memc sql --admin`, which may read only files under its own
    home, refuses them). Each view whose SQL names ``built_at`` is created again naming
    ``home_root``; a build of the copy would do the same."""
    import duckdb

    db = home_root / "warehouse" / "memc.duckdb"
    if not db.exists():
        return
    old, new = f"{built_at.resolve()}/", f"{home_root.resolve()}/"
    with duckdb.connect(str(db)) as con:
        views = con.execute("select schema_name, view_name, sql from duckdb_views() where not internal").fetchall()
        for schema, name, sql in views:
            if old in sql:
                body = sql[sql.index(" AS ") + 4:].replace(old, new)
                con.execute(f'create or replace view "{schema}"."{name}" as {body}')


def _build_sample_home(folder: Path) -> dict:
    from memc.home import MemcHome
    from orchestration.runner import build

    home = MemcHome.resolve(folder / "home").ensure()
    ingest_sample_corpus(home)
    report = build(home)
    assert report.success, report.failed_steps
    return dataclasses.asdict(report)


@pytest.fixture(scope="session")
def built_home(tmp_path_factory):
    """A memory home with the sample corpus ingested and every view built through Dagster (one
    build per session, this worker's copy of it: ``built_once``). Read it; copy it to change it."""
    from memc.home import MemcHome
    from orchestration.runner import BuildReport

    root, report = built_once(tmp_path_factory, "built", _build_sample_home)
    return MemcHome.resolve(root), BuildReport(**report)


@pytest.fixture(scope="session")
def ceph_rgw(tmp_path_factory):
    """A real single-node Ceph RGW on loopback for the session (tests/ceph_rgw.py; 16-31 s to start)."""
    from ceph_rgw import start_ceph_rgw

    rgw = start_ceph_rgw(tmp_path_factory.mktemp("ceph"))
    print(f"\nCeph RGW on {rgw.endpoint}: up in {rgw.start_seconds:.1f} s, {rgw.rss_mb():.0f} MB resident")
    try:
        yield rgw
    finally:
        rgw.stop()


# ---------------------------------------------------------------------------------- scale and seeds


def scaled(full: int, least: int) -> int:
    """How many trials (compiles, examples) a heavy ``slow`` variant runs: ``full`` times
    MEMC_SLOW_SCALE (default 1, the full variant), never fewer than ``least``. CI runs the slow
    variants at a reduced scale (.ci/run); ``make test-slow`` at full scale."""
    scale = float(os.environ.get("MEMC_SLOW_SCALE") or 1)
    if not 0 < scale <= 1:
        raise ValueError(f"MEMC_SLOW_SCALE={scale}: give a fraction in (0, 1]")
    return max(least, round(full * scale))


@pytest.fixture
def seed(request) -> int:
    """A seed for a test's random choices: MEMC_TEST_SEED when set (to replay a failure), else a
    fresh one. Printed (pytest shows a failing test's output) and recorded as a user property
    (in --junitxml), so any failure names the seed that replays it."""
    value = int(os.environ.get("MEMC_TEST_SEED") or int.from_bytes(os.urandom(4), "big"))
    request.node.user_properties.append(("seed", value))
    print(f"MEMC_TEST_SEED={value}  # replay: MEMC_TEST_SEED={value} pytest '{request.node.nodeid}'")
    return value


# ---------------------------------------------------------------------------------- skips in CI
# A skip in CI used to pass the run: the browser test without Chromium, the root-only branch of a
# permission test. When CI=true, any skip not listed in tests/allowed_skips.txt fails the session.

ALLOWED_SKIPS = Path(__file__).with_name("allowed_skips.txt")
_skips: list[tuple[str, str]] = []
_BAD_SKIPS = pytest.StashKey[list]()


def allowed_skips(path: Path = ALLOWED_SKIPS) -> dict[str, str]:
    """nodeid -> reason, one per line as ``<nodeid>  # <reason>``; a line without a reason is an error."""
    out: dict[str, str] = {}
    for n, line in enumerate(path.read_text().splitlines() if path.exists() else [], 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        nodeid, sep, reason = line.partition(" # ")
        if not sep or not reason.strip() or not nodeid.strip():
            raise pytest.UsageError(f"{path.name}:{n}: write '<nodeid>  # <why this skip is allowed in CI>'")
        out[nodeid.strip()] = reason.strip()
    return out


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _skip_reason(report) -> str:
    lr = report.longrepr
    return str(lr[2]) if isinstance(lr, tuple) and len(lr) == 3 else str(lr)


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _skips.append((report.nodeid, _skip_reason(report)))


def pytest_collectreport(report):
    if report.skipped:  # pytest.skip(allow_module_level=True), importorskip at import
        _skips.append((report.nodeid, _skip_reason(report)))


def unallowed_skips(skips: list[tuple[str, str]], allowed: dict[str, str]) -> list[tuple[str, str]]:
    return [(nodeid, reason) for nodeid, reason in skips if nodeid not in allowed]


def pytest_sessionfinish(session, exitstatus):
    if not _in_ci():
        return
    bad = unallowed_skips(_skips, allowed_skips())
    session.config.stash[_BAD_SKIPS] = bad
    if bad and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    bad = config.stash.get(_BAD_SKIPS, [])
    if bad:
        terminalreporter.section("skips not allowed in CI", sep="=", red=True, bold=True)
        for nodeid, reason in bad:
            terminalreporter.line(f"SKIPPED {nodeid}: {reason}", red=True)
        terminalreporter.line(f"CI=true: a skip fails the run unless {ALLOWED_SKIPS.relative_to(REPO)} lists it with a reason.")


"""Benchmarks (`make bench`): measured, never asserted. Results go to docs/benchmarks.md."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def built_sample_home(root: Path):
    """The corpus the demo and the tests use, ingested into a fresh home under ``root`` and
    built through Dagster: what the server and ask benchmarks measure against."""
    sys.path.insert(0, str(REPO / "tests"))
    from conftest import ingest_sample_corpus

    from memc.home import MemcHome
    from orchestration.runner import build

    home = MemcHome.resolve(Path(root) / "home").ensure()
    ingest_sample_corpus(home)
    report = build(home)
    if not report.success:
        raise SystemExit(f"build failed: {report.failed_steps}")
    return home

"""Shared fixtures. Everything runs against real engines (Dagster, dbt on DuckDB, LanceDB, Kùzu,
the packaged MiniLM model) in throwaway memory homes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("DAGSTER_DISABLE_TELEMETRY", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples" / "corpus"


def ingest_sample_corpus(home) -> None:
    """The demo's corpus: the team's files are public; one conversation is private to two people."""
    from ingestion import ingest_paths
    from ledger import Ledger

    ledger = Ledger(home.ledger)
    ingest_paths(ledger, [SAMPLES / "team"], scope="team", visibility=("public",))
    ingest_paths(ledger, [SAMPLES / "private"], scope="team", visibility=("elena", "priya"))


@pytest.fixture(scope="session")
def built_home(tmp_path_factory):
    """A memory home with the sample corpus ingested and every view built through Dagster."""
    from memc.home import MemcHome
    from orchestration.runner import build

    home = MemcHome.resolve(tmp_path_factory.mktemp("built") / "home").ensure()
    ingest_sample_corpus(home)
    report = build(home)
    assert report.success, report.failed_steps
    return home, report

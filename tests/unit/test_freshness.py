"""Freshness policies on the views: targets per tier (state 5 min, embeddings 15 min, graph
60 min, dreaming within 60 min of its nightly tick), overridden by the memory home's memc.toml
and by the environment. That the daemon reports a stale view as failing is tested live in
tests/platform/test_daemon.py."""

from __future__ import annotations

from datetime import timedelta

import dagster as dg
import pytest

from orchestration.definitions import build_definitions
from catalog.keys import CENTRALITY, CLAIMS, ENTITY_GRAPH, EVIDENCE_INDEX, LEDGER, STATE_CURRENT
from orchestration.settings import load_settings


def _window(graph, key) -> timedelta:
    return graph.get(key).freshness_policy.fail_window.to_timedelta()


@pytest.fixture
def clean_env(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith("MEMC_FRESHNESS_") or name in ("MEMC_DREAMING_CRON", "MEMC_SENSOR_INTERVAL_SECONDS"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_default_targets_per_view(tmp_path, clean_env):
    graph = build_definitions(str(tmp_path / "home")).resolve_asset_graph()
    assert _window(graph, STATE_CURRENT) == timedelta(minutes=5)
    assert _window(graph, CLAIMS) == timedelta(minutes=5)
    assert _window(graph, dg.AssetKey("stg_memc__ledger_entries")) == timedelta(minutes=5)
    assert _window(graph, EVIDENCE_INDEX) == timedelta(minutes=15)
    assert _window(graph, ENTITY_GRAPH) == timedelta(minutes=60)
    dreaming = graph.get(CENTRALITY).freshness_policy
    assert type(dreaming).__name__ == "CronFreshnessPolicy"
    assert dreaming.deadline_cron == "0 4 * * *" and dreaming.lower_bound_delta == timedelta(minutes=60)
    assert graph.get(LEDGER).freshness_policy is None  # a source asset: Dagster cannot attach one
    # every materializable asset has a policy
    missing = [k.to_user_string() for k in graph.materializable_asset_keys if graph.get(k).freshness_policy is None]
    assert missing == []


def test_targets_from_the_home_config_and_the_environment(tmp_path, clean_env):
    home = tmp_path / "home"
    home.mkdir()
    (home / "memc.toml").write_text(
        '[freshness]\nstate = 2\nembeddings = 30\nentity_graph = 7\ndreaming = 90\n\n[automation]\ndreaming_cron = "15 1 * * *"\n'
    )
    clean_env.setenv("MEMC_FRESHNESS_EMBEDDINGS_MINUTES", "45")
    graph = build_definitions(str(home)).resolve_asset_graph()
    assert _window(graph, STATE_CURRENT) == timedelta(minutes=2)
    assert _window(graph, EVIDENCE_INDEX) == timedelta(minutes=45), "the environment wins over the file"
    assert _window(graph, ENTITY_GRAPH) == timedelta(minutes=7), "an asset's own target wins over its tier"
    dreaming = graph.get(CENTRALITY).freshness_policy
    assert dreaming.deadline_cron == "45 2 * * *" and dreaming.lower_bound_delta == timedelta(minutes=90)
    assert graph.get(CENTRALITY).automation_condition.get_label() == "nightly (15 1 * * *)"


def test_targets_under_a_minute_are_refused(tmp_path, clean_env):
    clean_env.setenv("MEMC_FRESHNESS_STATE_MINUTES", "0.5")
    with pytest.raises(ValueError, match="at least 1 minute"):
        load_settings(tmp_path)

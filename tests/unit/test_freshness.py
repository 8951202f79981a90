"""Freshness: an event-driven view's is its lag behind the ledger, held to its tier's target
(state 5 min, embeddings 15 min, graph 60 min), with no Dagster time-window policy (which counts
from the last materialization, so a view holding the ledger head turned "Failed"); the scheduled
assets keep cron policies (dreaming within 60 min of its nightly tick, the query profile after
its daily cron). Targets are overridden by the memory home's memc.toml and by the environment.
The lag verdicts are tested on a real ledger in tests/platform/test_automation.py, live under
the daemon in tests/platform/test_daemon.py."""

from __future__ import annotations

from datetime import timedelta

import dagster as dg
import pytest

from orchestration.definitions import build_definitions
from catalog.keys import CENTRALITY, LEDGER, QUERY_PROFILE
from orchestration.automation import lag_targets
from orchestration.settings import load_settings


def _lag_targets(defs) -> dict[str, str]:
    """The lag checks' targets, as their catalog text states them."""
    out = {}
    for checks_def in defs.asset_checks:
        for spec in checks_def.check_specs:
            if spec.name.endswith("_watermark_lag"):
                out[spec.asset_key.to_user_string()] = spec.description.split("than its target (")[1].split(")")[0]
    return out


@pytest.fixture
def clean_env(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith("MEMC_FRESHNESS_") or name in ("MEMC_DREAMING_CRON", "MEMC_SENSOR_INTERVAL_SECONDS"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_event_driven_views_have_no_time_window_and_scheduled_ones_a_cron(tmp_path, clean_env):
    defs = build_definitions(str(tmp_path / "home"))
    graph = defs.resolve_asset_graph()
    dreaming = graph.get(CENTRALITY).freshness_policy
    assert type(dreaming).__name__ == "CronFreshnessPolicy"
    assert dreaming.deadline_cron == "0 4 * * *" and dreaming.lower_bound_delta == timedelta(minutes=60)
    assert type(graph.get(QUERY_PROFILE).freshness_policy).__name__ == "CronFreshnessPolicy"
    assert graph.get(LEDGER).freshness_policy is None  # a source asset: Dagster cannot attach one
    # no event-driven view is judged by the time since its last build
    timed = [k.to_user_string() for k in graph.materializable_asset_keys if graph.get(k).freshness_policy is not None]
    assert sorted(timed) == ["centrality", "query_profile"]
    assert lag_targets(load_settings(tmp_path / "home")) == {"claims": 5, "state": 5, "evidence_index": 15, "entity_graph": 60}
    assert _lag_targets(defs) == {"claims": "5 min", "state_current": "5 min", "evidence_index": "15 min", "entity_graph": "60 min"}
    assert defs.resolve_sensor_def("view_lag_sensor").default_status == dg.DefaultSensorStatus.RUNNING


def test_targets_from_the_home_config_and_the_environment(tmp_path, clean_env):
    home = tmp_path / "home"
    home.mkdir()
    (home / "memc.toml").write_text(
        '[freshness]\nstate = 2\nembeddings = 30\nentity_graph = 7\ndreaming = 90\n\n[automation]\ndreaming_cron = "15 1 * * *"\n'
    )
    clean_env.setenv("MEMC_FRESHNESS_EMBEDDINGS_MINUTES", "45")
    defs = build_definitions(str(home))
    targets = _lag_targets(defs)
    assert targets["state_current"] == targets["claims"] == "2 min"
    assert targets["evidence_index"] == "45 min", "the environment wins over the file"
    assert targets["entity_graph"] == "7 min", "an asset's own target wins over its tier"
    graph = defs.resolve_asset_graph()
    dreaming = graph.get(CENTRALITY).freshness_policy
    assert dreaming.deadline_cron == "45 2 * * *" and dreaming.lower_bound_delta == timedelta(minutes=90)
    assert graph.get(CENTRALITY).automation_condition.get_label() == "nightly (15 1 * * *)"


def test_targets_under_a_minute_are_refused(tmp_path, clean_env):
    clean_env.setenv("MEMC_FRESHNESS_STATE_MINUTES", "0.5")
    with pytest.raises(ValueError, match="at least 1 minute"):
        load_settings(tmp_path)


def test_a_malformed_memc_toml_names_its_file_and_line(tmp_path, clean_env):
    """It raised tomllib's bare error, which names neither (now memc/toml.py's reader, shared with
    the inbox sidecars and the claims lexicon)."""
    from memc.toml import TomlError

    (tmp_path / "memc.toml").write_text("[freshness]\nstate = 5\n[automation\n")
    with pytest.raises(TomlError, match=r"memc\.toml:3: not valid TOML") as info:
        load_settings(tmp_path)
    assert info.value.line == 3 and info.value.path == tmp_path / "memc.toml"

"""Platform settings: freshness targets, the dreaming and compaction crons, sensor intervals.

Plain module (no Dagster import): the definitions read it when they are built, i.e. when a
code location loads, never at import. Sources, later ones winning:

1. the defaults below;
2. ``<home>/memc.toml`` (``[freshness]``, ``[automation]``), for the memory home in use;
3. environment variables ``MEMC_FRESHNESS_<NAME>_MINUTES`` (NAME a tier or an asset, upper
   case) and ``MEMC_DREAMING_CRON``, ``MEMC_COMPACTION_CRON``, ``MEMC_SENSOR_INTERVAL_SECONDS``.

Example ``memc.toml``::

    [freshness]          # minutes; a tier, or one asset by name (the asset wins)
    state = 5
    embeddings = 15
    graph = 60
    dreaming = 60        # minutes after the dreaming cron by which dreaming must have run
    state_current = 2

    [automation]
    dreaming_cron = "0 3 * * *"
    compaction_cron = "30 4 * * 0"
    sensor_interval_seconds = 30
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from memc.toml import read_toml

CONFIG_FILE = "memc.toml"

# Freshness tiers, in minutes (the targets): how long a view may lack a ledger entry
# before its watermark-lag check fails. "state" holds the claims and state_current; "embeddings"
# the evidence index; "graph" the entity graph; "dreaming" is measured from the nightly dreaming
# tick, a cron freshness policy (see orchestration/automation.py).
DEFAULT_FRESHNESS_MINUTES = {"state": 5, "embeddings": 15, "graph": 60, "dreaming": 60}
DEFAULT_DREAMING_CRON = "0 3 * * *"
# Weekly: LanceDB keeps one version per write, so a week of eager refreshes is a few hundred
# small versions; compacting them takes seconds on the sample corpus.
DEFAULT_COMPACTION_CRON = "30 4 * * 0"
DEFAULT_SENSOR_INTERVAL = 30


@dataclass(frozen=True)
class Settings:
    freshness_minutes: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_FRESHNESS_MINUTES))
    dreaming_cron: str = DEFAULT_DREAMING_CRON
    compaction_cron: str = DEFAULT_COMPACTION_CRON
    sensor_interval_seconds: int = DEFAULT_SENSOR_INTERVAL

    def freshness_for(self, asset: str, tier: str) -> float:
        """Minutes: the asset's own target if one is set, else its tier's."""
        return self.freshness_minutes.get(asset, self.freshness_minutes[tier])


def load_settings(home_root: str | os.PathLike[str] | None = None) -> Settings:
    fresh: dict[str, float] = dict(DEFAULT_FRESHNESS_MINUTES)
    auto: dict[str, object] = {}
    if home_root is not None:
        path = Path(home_root) / CONFIG_FILE
        if path.exists():
            data = read_toml(path)  # a malformed file: TomlError naming the file and line
            fresh.update({str(k): float(v) for k, v in data.get("freshness", {}).items()})
            auto.update(data.get("automation", {}))
    prefix, suffix = "MEMC_FRESHNESS_", "_MINUTES"
    for name, value in os.environ.items():
        if name.startswith(prefix) and name.endswith(suffix) and value:
            fresh[name[len(prefix) : -len(suffix)].lower()] = float(value)
    for key, env in (("dreaming_cron", "MEMC_DREAMING_CRON"), ("compaction_cron", "MEMC_COMPACTION_CRON"),
                     ("sensor_interval_seconds", "MEMC_SENSOR_INTERVAL_SECONDS")):  # fmt: skip
        if os.environ.get(env):
            auto[key] = os.environ[env]
    bad = {k: v for k, v in fresh.items() if v < 1}
    if bad:
        # Dagster refuses windows under a minute ("system constraints"); say so at load time.
        raise ValueError(f"freshness targets must be at least 1 minute: {bad}")
    return Settings(
        freshness_minutes=fresh,
        dreaming_cron=str(auto.get("dreaming_cron", DEFAULT_DREAMING_CRON)),
        compaction_cron=str(auto.get("compaction_cron", DEFAULT_COMPACTION_CRON)),
        sensor_interval_seconds=int(auto.get("sensor_interval_seconds", DEFAULT_SENSOR_INTERVAL)),
    )

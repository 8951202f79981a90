"""Dagster's notices about its own APIs (beta, preview, superseded) are for memc's developers,
not for someone running a build or reading a log: the code location uses ``backfill_policy``
and sensor ``owners`` (beta in Dagster 1.13), and every process that loaded it (the code server
of `memc up`, each run worker) logged a BetaWarning per use on every load.

Importing this module silences them; orchestration/definitions.py imports it before the assets
and sensors, whose decorators emit them at import."""

import warnings

import dagster as dg


def silence() -> None:
    for category in (dg.BetaWarning, dg.PreviewWarning, dg.SupersessionWarning):
        warnings.filterwarnings("ignore", category=category)


silence()

"""Command groups of the `memc` CLI beyond the core ones in ``memc.cli``.

Each module here defines ``register(cli)`` and keeps its heavy imports inside its commands, so
that `memc --help` stays instant.
"""

from __future__ import annotations

import importlib

import click

# In the order a user meets them: inspect claims, state and SQL, forget, evaluate, serve, operate.
MODULES = ("claims_cmd", "state_cmd", "forget_cmd", "eval_cmd", "serve_cmd", "ops_cmd")


def register(cli: click.Group) -> None:
    for name in MODULES:
        importlib.import_module(f"memc.commands.{name}").register(cli)

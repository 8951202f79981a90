"""`memc docs`: dbt's catalog of every model and column (descriptions, types, tests, lineage),
generated for one home into a folder of its own.

``dbt docs generate`` run in the project as dbt's guide shows writes ``target/``: the folder
whose manifest.json the Dagster code location loads, so a running `memc up` would then load a
manifest from another parse. Here dbt's target and logs go to ``<home>/dbt-docs`` (or ``--out``);
the project's target/ is not written. ``--static`` makes one self-contained
``static_index.html`` that a browser opens offline (the ordinary index.html fetches
manifest.json and catalog.json, which browsers refuse from file://).

The catalog's column types come from the warehouse, so it needs a build first, and it takes
the build lock: a build rewriting the warehouse meanwhile would leave dbt reading half a swap.
The catalog holds names, types and descriptions, never a row of evidence.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from catalog.dbt_project import dbt_command
from memc.home import MemcHome
from memc.locks import exclusive


class DocsError(RuntimeError):
    """No warehouse to describe yet, or dbt failed (with the end of its output)."""


def generate_docs(home: MemcHome, out: Path | None = None) -> Path:
    """Generate the catalog into ``out`` (default ``<home>/dbt-docs``); returns the static page.
    Raises ``memc.locks.HomeBusy`` while a build holds the home."""
    if not home.warehouse_db.exists():
        raise DocsError(f"no warehouse at {home.warehouse_db}: run `memc build` first (the catalog reads its column types)")
    folder = Path(out) if out is not None else home.root / "dbt-docs"
    with exclusive(home.build_lock, "memc docs", wait=False):
        cmd, env = dbt_command(home.root, ["docs", "generate", "--static", "--quiet"], folder)
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise DocsError(f"dbt docs generate failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return folder / "target" / "static_index.html"

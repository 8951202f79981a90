"""`memc compare`: fold the same ledger from two extractor versions' claims, each into a scratch
warehouse of its own, and diff their write policy and state (query/compare.py).

The live view is never touched: each fold is a real dbt run of the fold's models with
``extractor_key`` set to one version, its DuckDB file (``MEMC_WAREHOUSE_DB``), its marts
(``var('marts_dir')``), its target and its log folders all in a private temporary folder, outside
Dagster (no run, no materialization). The home's warehouse/memc.duckdb and warehouse/marts are
not opened, and the repository's manifest is not rewritten. Both folds read the ledger up to the
head seen when the comparison starts (``watermark``), so they fold the same entries even while
another process appends.

The scratch folders are deleted when the comparison ends: they hold quotes, and a copy an
erasure does not know of would outlive it (forgetting/cascade.py drops only the views it knows).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from catalog.dbt_project import DBT_PROJECT_DIR, dbt_command
from claims.store import CLAIMS_FILE, days, extractor_dir, extractor_keys
from ledger import open_ledger
from memc.home import MemcHome
from query.compare import COMPARED_MARTS, diff_folds

# The models each fold runs: the marts compared and what they read (staging, the fold), nothing
# else. `dbt run`, not `build`: the data tests audit the live build; here they would double the
# time (about 11 s a fold on the demo home) and decide nothing the diff reports.
FOLD_SELECTION = tuple(f"+{m}" for m in COMPARED_MARTS)


class CompareError(ValueError):
    """A comparison refused before anything ran (the message names the versions on disk), or a
    fold that failed (with the end of dbt's output)."""


def versions_with_claims(home: MemcHome) -> list[str]:
    """The extractor keys with at least one claims file on disk (day folders or the flat layout)."""
    return [k for k in extractor_keys(home.claims) if any(extractor_dir(home.claims, k).rglob(CLAIMS_FILE))]


def check_versions(home: MemcHome, a: str, b: str) -> None:
    """Refuse two equal keys, or a key with no claims on disk (naming those that have some)."""
    if a == b:
        raise CompareError(f"compare two different extractor versions: both are {a!r}")
    present = versions_with_claims(home)
    missing = [k for k in (a, b) if k not in present]
    if missing:
        have = ", ".join(present) if present else "none"
        raise CompareError(
            f"no claims on disk for {', '.join(missing)} in {home.claims} (versions with claims: {have}); "
            "extract them first, e.g. `memc backfill --claims-only --extractor KEY --from DAY --to DAY`"
        )


def fold_command(home: MemcHome, key: str, scratch: Path, watermark: int) -> tuple[list[str], dict[str, str]]:
    """The dbt command and environment that fold ``key``'s claims into ``scratch``."""
    marts = scratch / "marts"
    marts.mkdir(parents=True, exist_ok=True)
    vars_ = {"extractor_key": key, "watermark": watermark, "marts_dir": str(marts)}
    args = ["run", "--quiet", "--select", *FOLD_SELECTION, "--vars", json.dumps(vars_)]
    return dbt_command(home.root, args, scratch, warehouse=scratch / "memc.duckdb")


def fold_versions(home: MemcHome, keys: tuple[str, str], scratch: Path, watermark: int) -> dict[str, Path]:
    """Fold each version into ``scratch/<n>``; the two dbt runs go side by side (each is one
    thread, and they share nothing but the files they read). Returns each key's marts folder."""
    procs = []
    for n, key in enumerate(keys):
        folder = scratch / f"fold-{n}"  # not the key: a key is a folder name we did not choose
        cmd, env = fold_command(home, key, folder, watermark)
        procs.append((key, folder, subprocess.Popen(cmd, env=env, cwd=DBT_PROJECT_DIR, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
    failed = []
    for key, _, proc in procs:
        out, _ = proc.communicate()
        if proc.returncode != 0:
            failed.append(f"the fold of {key} failed (dbt exit {proc.returncode}):\n{out[-3000:]}")
    if failed:
        raise CompareError("\n".join(failed))
    return {key: folder / "marts" for key, folder, _ in procs}


def compare_extractors(
    home: MemcHome,
    a: str,
    b: str,
    *,
    principal: str | None,
    entity: str | None = None,
    scope: str | None = None,
) -> dict[str, Any]:
    """What the write policy decides and what holds now, folded from version ``a``'s claims
    against ``b``'s, over the same ledger (query/compare.py says how rows are matched)."""
    check_versions(home, a, b)
    watermark = open_ledger(home.ledger, write=False).head()
    days_a, days_b = set(days(home.claims, a)), set(days(home.claims, b))
    with tempfile.TemporaryDirectory(prefix="memc-compare-") as tmp:  # 0700: readable by this user only
        marts = fold_versions(home, (a, b), Path(tmp), watermark)
        result = diff_folds(marts[a], marts[b], principal=principal, entity=entity, scope=scope)
    return {
        "a": a,
        "b": b,
        "ledger_watermark": watermark,
        # A ledger day only one version has compiled: every action of it differs for that reason alone.
        "days_only_in": {a: sorted(days_a - days_b), b: sorted(days_b - days_a)},
        **result,
    }


__all__ = ["CompareError", "FOLD_SELECTION", "check_versions", "compare_extractors", "fold_command", "fold_versions", "versions_with_claims"]

"""Moving the demo home from rules 0.2.0 to the clause extractor (rules 0.3.0) is a partitioned
backfill through Dagster: every ledger day is re-extracted into the new version's folder, the old
folder is left byte for byte, and the state is folded from the new claims."""

from __future__ import annotations

import json
import shutil

from click.testing import CliRunner

from claims.extractors.registry import CLAUSES, RULES
from claims.ledger_days import ledger_days
from claims.store import days, read_claims
from ledger import Ledger
from memc.home import MemcHome
from views.marts import STATE_CURRENT, mart_path, read_mart


def _snapshot(home: MemcHome, key: str) -> dict[str, tuple[int, bytes]]:
    root = home.claims / f"extractor={key}"
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(root.rglob("*.parquet"))}


def test_the_demo_home_moves_to_the_clause_extractor_by_backfill(built_home, tmp_path, monkeypatch):
    from cli.main import cli

    for var in ("DAGSTER_HOME", "MEMC_HOME", "MEMC_EXTRACTOR"):
        monkeypatch.setenv(var, "")  # the runner sets them; monkeypatch restores them afterwards
    monkeypatch.delenv("MEMC_EXTRACTOR")
    src, _ = built_home
    home = MemcHome.resolve(tmp_path / "home")
    shutil.copytree(src.root, home.root)
    ledger_day_list = [str(d) for d in ledger_days(Ledger(home.ledger))]
    old = _snapshot(home, RULES.key)
    assert old and days(home.claims, CLAUSES.key) == []

    out = CliRunner().invoke(
        cli,
        ["backfill", "--from", ledger_day_list[0], "--to", ledger_day_list[-1], "--extractor", CLAUSES.key, "--home", str(home.root), "--json"],
        obj={},
    )
    assert out.exit_code == 0, out.output
    report = json.loads(out.output[out.output.index("{") :])
    assert report["extractor"] == CLAUSES.key
    assert sorted(report["out_of_date"]) == ledger_day_list, "every day is new to the new version"

    assert _snapshot(home, RULES.key) == old, "the old version's claims are untouched"
    assert days(home.claims, CLAUSES.key) == ledger_day_list
    new_claims = read_claims(home.claims, CLAUSES.key)
    assert new_claims.num_rows > read_claims(home.claims, RULES.key).num_rows
    assert set(new_claims.column("extractor_version").to_pylist()) == {CLAUSES.version}
    # The views below the claims were compiled from the new version: the state folds its claims.
    state = read_mart(mart_path(home, STATE_CURRENT)).to_pylist()
    ids = set(new_claims.column("claim_id").to_pylist())
    assert state and all(r["claim_id"] in ids for r in state)

"""Checks on the ledger itself."""

import dagster as dg

from catalog.keys import LEDGER
from catalog.resources import MemcResource


@dg.asset_check(asset=LEDGER, blocking=True, description="Every ledger file matches its checksum and seqs run 1..head without gaps or duplicates.")
def ledger_integrity(memc: MemcResource) -> dg.AssetCheckResult:
    report = memc.ledger().verify()
    return dg.AssetCheckResult(
        passed=report.ok,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "files": report.files,
            "entries": report.entries,
            "head_seq": report.head,
            "problems": "\n".join(report.problems[:50]) or "none",
        },
    )

CHECKS = [ledger_integrity]

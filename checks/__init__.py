"""Data-quality checks, run as Dagster asset checks. A check reads; it never modifies the ledger."""

import dagster as dg

from views.audit import Audit


def audit_result(audit: Audit) -> dg.AssetCheckResult:
    """An audit (views/audit.py) as a check result: passed, its metadata, and its first problems."""
    return dg.AssetCheckResult(
        passed=audit.passed,
        metadata={**audit.metadata, "first_problems": "\n".join(audit.problems) or "none"},
    )

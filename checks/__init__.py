"""Data-quality checks, run as Dagster asset checks. A check reads; it never modifies the ledger."""

"""Checks on the claims view."""

import dagster as dg

from claims.extract import RULES
from claims.store import read_claims
from orchestration.keys import CLAIMS
from orchestration.resources import MemcResource


@dg.asset_check(asset=CLAIMS, blocking=True, description="Every claim's source entry is in the ledger and its quote occurs there verbatim.")
def claims_provenance(memc: MemcResource) -> dg.AssetCheckResult:
    claims = read_claims(memc.home.claims, RULES.key).select(["claim_id", "source_entry_id", "quote"]).to_pylist()
    wanted = {c["source_entry_id"] for c in claims}
    content = {
        r["entry_id"]: r["content"]
        for r in memc.ledger().read(["entry_id", "content"]).to_pylist()
        if r["entry_id"] in wanted
    }
    bad = [c["claim_id"] for c in claims if c["quote"] not in content.get(c["source_entry_id"], "")]
    return dg.AssetCheckResult(
        passed=not bad,
        metadata={"claims": len(claims), "failing": len(bad), "failing_claim_ids": ", ".join(bad[:50]) or "none"},
    )

CHECKS = [claims_provenance]

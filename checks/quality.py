"""Data-quality checks as Dagster asset checks: the Great Expectations suites (checks/gx.py) on
the ledger and the claims, and a watermark-lag check per view (checks/lag.py).

Every check only reads. The GX checks are blocking: in a run, a failure stops every asset
below the checked one (the views are not compiled from data that broke a promise). The lag
checks warn: a view that is behind is not wrong, it is late.
"""

import dagster as dg

from catalog.keys import CLAIMS, ENTITY_GRAPH, EVIDENCE_INDEX, LEDGER, STATE_CURRENT
from catalog.resources import MemcResource
from checks.gx import validate_claims, validate_ledger
from checks.lag import view_lag
from claims.extract import active_extractor_key
from claims.store import read_claims


@dg.asset_check(
    asset=LEDGER,
    blocking=True,
    description=(
        "Great Expectations suite on every ledger entry: schema; no nulls where required; seq and "
        "entry_id unique; seq gap-free from 1; recorded_at never decreasing with seq; known kind; "
        "visibility present and well formed; confidence in [0, 1]. Failing rows are named by entry_id."
    ),
)
def ledger_expectations(memc: MemcResource) -> dg.AssetCheckResult:
    report = validate_ledger(memc.ledger().read())
    return dg.AssetCheckResult(passed=report.success, severity=dg.AssetCheckSeverity.ERROR, metadata=report.metadata())


@dg.asset_check(
    asset=CLAIMS,
    blocking=True,
    description=(
        "Great Expectations suite on every claim of the active extractor (all days): schema; no nulls "
        "where required; claim_id unique; confidence in [0, 1]; polarity assert/retract; visibility well "
        "formed; source entry resolvable in the ledger; quote present in it. Failing rows are named by claim_id."
    ),
)
def claims_expectations(memc: MemcResource) -> dg.AssetCheckResult:
    key = active_extractor_key()
    report = validate_claims(read_claims(memc.home.claims, key), memc.ledger().read(["entry_id", "content"]))
    return dg.AssetCheckResult(
        passed=report.success, severity=dg.AssetCheckSeverity.ERROR, metadata={"extractor": key, **report.metadata()}
    )


def _lag_check(view: str, asset: dg.AssetKey) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=asset,
        name=f"{view}_watermark_lag",
        description=(
            f"The {view} view's ledger watermark against the ledger head: entries behind, and the age "
            "of the oldest entry it lacks. Warns when it is behind (freshness policies only say when "
            "the view was last materialized)."
        ),
    )
    def lag_check(memc: MemcResource) -> dg.AssetCheckResult:
        lag = view_lag(memc.home, view)
        return dg.AssetCheckResult(
            passed=lag.entries_behind == 0 and lag.watermark is not None,
            severity=dg.AssetCheckSeverity.WARN,
            metadata=lag.metadata(),
        )

    return lag_check


LAG_CHECKS = [
    _lag_check("claims", CLAIMS),
    _lag_check("state", STATE_CURRENT),
    _lag_check("evidence_index", EVIDENCE_INDEX),
    _lag_check("entity_graph", ENTITY_GRAPH),
]

CHECKS = [ledger_expectations, claims_expectations, *LAG_CHECKS]

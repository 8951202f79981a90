"""Data-quality checks as Dagster asset checks: the Great Expectations suites (checks/gx.py) on
the ledger and the claims, and a watermark-lag check per view (checks/lag.py).

Every check only reads. The GX checks are blocking: in a run, a failure stops every asset
below the checked one (the views are not compiled from data that broke a promise). The lag
checks are the event-driven views' freshness: a view that is behind is not wrong, it is late
(a warning while within its target, an error beyond it); they are built by ``lag_checks`` with
the home's targets.
"""

from typing import Mapping

import dagster as dg

from catalog.keys import CLAIMS, ENTITY_GRAPH, EVIDENCE_INDEX, LEDGER, STATE_CURRENT
from catalog.resources import MemcResource
from checks.gx import validate_claims, validate_ledger
from checks.lag import CURRENT, LATE, Lag, view_lag
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
    report = validate_claims(read_claims(memc.home.claims, key), memc.ledger().read(["entry_id", "content", "attributes"]))
    return dg.AssetCheckResult(
        passed=report.success, severity=dg.AssetCheckSeverity.ERROR, metadata={"extractor": key, **report.metadata()}
    )


# The asset each view's watermark belongs to (checks/lag.py names the views).
LAG_ASSETS = {"claims": CLAIMS, "state": STATE_CURRENT, "evidence_index": EVIDENCE_INDEX, "entity_graph": ENTITY_GRAPH}


def lag_check_name(view: str) -> str:
    return f"{view}_watermark_lag"


def lag_evaluation(lag: Lag, target_minutes: float) -> tuple[bool, dg.AssetCheckSeverity, dict]:
    """passed, severity and metadata of a view's lag check: passed while it holds the ledger head;
    a warning while it is behind by less than its target, an error beyond it."""
    state = lag.state(target_minutes * 60)
    severity = dg.AssetCheckSeverity.ERROR if state == LATE else dg.AssetCheckSeverity.WARN
    return state == CURRENT, severity, {**lag.metadata(), "state": state, "target_minutes": target_minutes}


def _lag_check(view: str, target_minutes: float) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        asset=LAG_ASSETS[view],
        name=lag_check_name(view),
        description=(
            f"The freshness of the {view} view: its ledger watermark against the ledger head. Passes "
            "while it holds the head, however long ago it was built; warns while it lacks entries "
            f"younger than its target ({target_minutes:g} min); fails (error) once the oldest entry it "
            "lacks is older. Evaluated after each build and, between builds, by the view_lag_sensor."
        ),
    )
    def lag_check(memc: MemcResource) -> dg.AssetCheckResult:
        passed, severity, metadata = lag_evaluation(view_lag(memc.home, view), target_minutes)
        return dg.AssetCheckResult(passed=passed, severity=severity, metadata=metadata)

    return lag_check


def lag_checks(targets_minutes: Mapping[str, float]) -> list[dg.AssetChecksDefinition]:
    """One lag check per view with a watermark, each held to its target (minutes, by view name)."""
    return [_lag_check(view, targets_minutes[view]) for view in LAG_ASSETS]


CHECKS = [ledger_expectations, claims_expectations]

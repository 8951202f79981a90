"""Staleness: each view's watermark against the ledger head, and what to do about the gap.

Per view, a policy:
- ``patch``: cover the not-yet-compiled tail of the ledger directly (the evidence index embeds
  and searches the few newest entries in memory), so a fact ingested a second ago is answerable;
- ``tolerate``: answer from the view as it is while the lag is within its SLO, and say so;
- ``fail``: refuse, with an error naming the view, its watermark, the head and the lag.
A lag beyond a patch or tolerate limit fails closed too. A tolerated view that was never built
(a fresh home) is reported as ``never_built`` rather than refused: it holds nothing stale.
Erasures recorded above a view's watermark are reported as pending, and the compiler must
exclude their ids: a pending erasure is never tolerated.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, Field

Policy = Literal["patch", "tolerate", "fail"]


class ViewPolicy(BaseModel):
    policy: Policy
    max_lag_entries: int = Field(default=1_000, ge=0)
    max_lag_seconds: float = Field(default=300.0, ge=0)


# The evidence index can be patched from the ledger tail; the folded views cannot (a fold of a
# partial tail could contradict the full one), so they are tolerated and the result says so.
# The defaults keep a memory usable between builds for a day; `memc up` keeps views within their
# freshness targets (state 5 min, graph 60 min), and a stricter SLO is one QueryConfig away.
DEFAULT_POLICIES: dict[str, ViewPolicy] = {
    "evidence_index": ViewPolicy(policy="patch", max_lag_entries=500, max_lag_seconds=86_400),
    "claims": ViewPolicy(policy="tolerate", max_lag_entries=10_000, max_lag_seconds=86_400),
    "state": ViewPolicy(policy="tolerate", max_lag_entries=10_000, max_lag_seconds=86_400),
    "entity_graph": ViewPolicy(policy="tolerate", max_lag_entries=100_000, max_lag_seconds=7 * 86_400),
}


class StaleViewError(Exception):
    """A view is too far behind the ledger to answer from (fail closed)."""

    def __init__(self, view: str, watermark: int | None, head: int, lag_entries: int, lag_seconds: float, reason: str):
        self.view, self.watermark, self.head = view, watermark, head
        self.lag_entries, self.lag_seconds, self.reason = lag_entries, lag_seconds, reason
        super().__init__(
            f"view {view} is stale: watermark {watermark if watermark is not None else 'none (never built)'}, "
            f"ledger head {head}, lag {lag_entries} entries / {lag_seconds:.0f} s ({reason})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "watermark": self.watermark,
            "head": self.head,
            "lag_entries": self.lag_entries,
            "lag_seconds": round(self.lag_seconds, 1),
            "reason": self.reason,
        }


def assess(ledger, head: int, watermarks: dict[str, int | None], policies: dict[str, ViewPolicy]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Per view: its lag and the decision (``fresh``, ``patched``, ``tolerated``); raises
    StaleViewError when a view must fail closed. Also returns the entry ids named by erasures
    recorded above the lowest watermark (to be excluded from every route)."""
    marks = [w or 0 for w in watermarks.values()] or [head]
    lowest = min(marks)
    tail = ledger.read(["seq", "recorded_at", "kind", "attributes"], since_seq=lowest).to_pylist() if head > lowest else []
    now = datetime.now(timezone.utc)
    erased: list[str] = []
    for row in tail:
        if row["kind"] == "erasure":
            erased += json.loads(row["attributes"] or "{}").get("entry_ids", [])
    report: dict[str, dict[str, Any]] = {}
    for view, watermark in watermarks.items():
        policy = policies.get(view, ViewPolicy(policy="tolerate"))
        behind = [r for r in tail if r["seq"] > (watermark or 0)]
        lag_entries = len(behind)
        lag_seconds = (now - behind[0]["recorded_at"]).total_seconds() if behind else 0.0
        status = {"watermark": watermark, "lag_entries": lag_entries, "lag_seconds": round(lag_seconds, 1), "policy": policy.policy}
        if not lag_entries:
            status["decision"] = "fresh"
        elif watermark is None and policy.policy == "tolerate":
            # A fresh home's first ask: nothing was compiled into this view yet, so nothing in it
            # can be stale. The compile answers from the views that exist (the evidence index is
            # patched from the ledger) and says which were never built; `memc serve` builds them.
            status["decision"] = "never_built"
        elif watermark is None and policy.policy == "fail":
            raise StaleViewError(view, watermark, head, lag_entries, lag_seconds, "never built")
        elif policy.policy == "fail":
            raise StaleViewError(view, watermark, head, lag_entries, lag_seconds, "policy is fail-closed")
        elif lag_entries > policy.max_lag_entries or lag_seconds > policy.max_lag_seconds:
            raise StaleViewError(view, watermark, head, lag_entries, lag_seconds, f"beyond its {policy.policy} limit")
        else:
            status["decision"] = "patched" if policy.policy == "patch" else "tolerated"
        if any(r["kind"] == "erasure" for r in behind):
            status["pending_erasure"] = True  # never tolerated: the compiler excludes the erased ids
        report[view] = status
    return report, sorted(set(erased))

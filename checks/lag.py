"""Watermark lag: how far each view is behind the ledger head. Plain module: no Dagster.

Dagster's freshness policies measure how long ago a view was materialized, not whether it
holds the ledger's newest entries (docs/stack-notes.md, "Freshness"). This is the other half: each
view records the highest seq it was compiled from (memc/watermark.py); the lag is the ledger
head minus that, in entries, and in seconds as the age of the oldest entry the view lacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ledger import Ledger
from memc.home import MemcHome
from query.compile import view_watermarks

# The views with a watermark, by the name query.compile.view_watermarks uses.
VIEWS = ("claims", "state", "evidence_index", "entity_graph")


@dataclass(frozen=True)
class Lag:
    view: str
    watermark: int | None  # None: never built
    head: int
    entries_behind: int
    seconds_behind: float  # age of the oldest entry the view lacks; 0 when current

    def metadata(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "view_watermark": -1 if self.watermark is None else self.watermark,
            "ledger_head": self.head,
            "entries_behind": self.entries_behind,
            "seconds_behind": round(self.seconds_behind, 1),
        }


def view_lag(home: MemcHome, view: str, *, now: datetime | None = None) -> Lag:
    ledger = Ledger(home.ledger)
    head = ledger.head()
    watermark = view_watermarks(home).get(view)
    behind = head - (watermark or 0)
    seconds = 0.0
    if behind > 0:
        first_missing = ledger.read(["seq", "recorded_at"], since_seq=watermark or 0, until_seq=(watermark or 0) + 1)
        if first_missing.num_rows:
            at = first_missing.column("recorded_at")[0].as_py()
            seconds = max(0.0, ((now or datetime.now(timezone.utc)) - at).total_seconds())
    return Lag(view=view, watermark=watermark, head=head, entries_behind=max(behind, 0), seconds_behind=seconds)

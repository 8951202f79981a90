"""Watermark lag: how far each view is behind the ledger head, and whether that is late. Plain
module: no Dagster.

This is the freshness of an event-driven view. Dagster's time-window freshness policies count
the time since the last materialization (observations do not count: freshness_evaluator.py in
Dagster 1.13), so a view that holds the ledger head showed red "Failed" minutes after its build,
as soon as the ledger stopped growing. Here each view records the highest seq it was compiled
from (memc/watermark.py); the lag is the ledger head minus that, in entries, and in seconds as
the age of the oldest entry the view lacks. A view that holds the head is fresh however long
ago it was built; one that lacks an entry is late by that entry's age, held to its tier's target
(orchestration/settings.py: state 5 min, embeddings 15, graph 60).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ledger import open_ledger
from memc.home import MemcHome
from query.compile import view_watermarks

# The views with a watermark, by the name query.compile.view_watermarks uses, and the freshness
# tier whose target (minutes, orchestration/settings.py) each one's lag is held to.
TIERS = {"claims": "state", "state": "state", "evidence_index": "embeddings", "entity_graph": "graph"}
VIEWS = tuple(TIERS)

CURRENT, CATCHING_UP, LATE = "current", "catching up", "late"


@dataclass(frozen=True)
class Lag:
    view: str
    watermark: int | None  # None: never built
    head: int
    entries_behind: int
    seconds_behind: float  # age of the oldest entry the view lacks; 0 when current

    def state(self, target_seconds: float) -> str:
        """CURRENT: holds the ledger head (an empty ledger counts). CATCHING_UP: behind, and the
        oldest entry it lacks is younger than ``target_seconds`` (the automation is on its way:
        a warning). LATE: behind for longer than its target (an error)."""
        if self.entries_behind == 0:
            return CURRENT
        return CATCHING_UP if self.seconds_behind < target_seconds else LATE

    def metadata(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "view_watermark": -1 if self.watermark is None else self.watermark,
            "ledger_head": self.head,
            "entries_behind": self.entries_behind,
            "seconds_behind": round(self.seconds_behind, 1),
        }


def view_lag(home: MemcHome, view: str, *, now: datetime | None = None) -> Lag:
    ledger = open_ledger(home.ledger, write=False)
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

"""Memory units in a context: a top hit expanded into the other turns of its unit (views/units.py:
the same speaker on the same topic in other sessions), shown as one item right after the hit's.

"Where has Mira camped?" finds one camping turn by its words; the unit brings the two other
camping turns of hers from months before and after, which share no word with the question. On
LoCoMo dev (rules-0.3.0 homes) recall of the whole context 0.858 -> 0.862 at 2,000 tokens and
0.917 -> 0.921 at 4,000, but 0.779 -> 0.760 at 1,000, where a unit item displaces a window: on in
the `thorough` preset only (docs/context.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from query.config import QueryConfig
from query.context import ContextItem, iso
from query.windows import turn_item, within_time
from views.units import KINDS, Units


def with_units(
    items: list[ContextItem],
    units: Units,
    store: Any,
    vector: Any,
    principals: list[str],
    scope: str | None,
    config: QueryConfig,
    when: tuple[datetime | None, datetime | None] = (None, None),
) -> list[ContextItem]:
    """``items`` with, after each of the first ``config.unit_seeds`` whose hit is in a unit, that
    unit's ``config.unit_turns`` turns most similar to the question that no item shows yet (in
    time order, each dated). The turns are read from the evidence index under the asker's
    visibility and the ask's time travel, so a unit shows only what the asker may see; a unit
    listing entries the index no longer holds (erased since) shows the others."""
    seeds = [(i, units.unit_of[it.entry_id]) for i, it in enumerate(items[: config.unit_seeds]) if it.entry_id in units.unit_of]
    if not seeds or not config.unit_turns:
        return items
    wanted = sorted({e for _, u in seeds for e in units.members[u]})
    rows: dict[str, dict[str, Any]] = {}
    for r in store.entry_rows(entry_ids=wanted, principals=principals, scope=scope, kinds=KINDS, with_vectors=True):
        if within_time(r, when):
            rows.setdefault(r["entry_id"], r)  # a long turn's first chunk
    q = np.asarray(vector, dtype=np.float32)
    shown = {e for it in items for e in (it.entry_ids or [it.entry_id])}
    after: dict[int, ContextItem] = {}
    done: set[str] = set()
    for i, unit in seeds:
        if unit in done:
            continue
        done.add(unit)
        candidates = [rows[e] for e in units.members[unit] if e in rows and e not in shown]
        if not candidates:
            continue
        candidates.sort(key=lambda r: (-float(np.dot(np.asarray(r["vector"], dtype=np.float32), q)), r["entry_id"]))
        best = candidates[0]
        turns = sorted(candidates[: config.unit_turns], key=lambda r: (r["valid_at"], r["seq"], r["entry_id"]))
        shown.update(t["entry_id"] for t in turns)
        seed = items[i]
        item = turn_item(best, turns, routes=["unit"], score=seed.score, relevance=seed.relevance, valid_at=turns[0]["valid_at"], unit_id=unit)
        item.turn_times = [iso(t["valid_at"]) for t in turns]
        after[i] = item
    out = []
    for i, it in enumerate(items):
        out.append(it)
        if i in after:
            out.append(after[i])
    return out

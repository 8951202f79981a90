"""Current first: when the fold has a current value for what a question asks, the evidence of
the values it superseded ranks below the evidence of the current one, and says so.

Asked "Where does Elena live now?", retrieval alone ranks the old Lisbon turn first (it shares
the most words with the question) and the move to Berlin below it: the context would mislead
about now. Here the state fold decides instead:

* the *keys* are the current facts of the predicates the question asks for (query/intent.py);
  their source turns join retrieval as the `state` route (query/retrieve.py), so the current
  value's evidence is in the context even when no search ranks it;
* the *superseded* are the claims of those subjects and predicates that a closer the asker may
  see has closed (the state_closings mart: a newer value, a correction, a retraction); every
  item showing such a claim's source turn, and not the current value's, is labelled with the
  value, the entry that superseded it and since when, and moves below the current value's item;
* history first only when the question asks for it: as-of / known-at, a time window it names,
  or words of the past ("used to", "before", "previously", "originally", ...). Then the order
  is retrieval's, and the labels stay.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow.compute as pc

from claims.ontology import ONTOLOGY
from memc.filecache import cached
from memc.home import MemcHome
from memc.visibility import may_see
from query import intent
from query.context import Context, ContextItem, StateFact, iso
from views.grouped import Grouped
from views.marts import STATE_CLOSINGS, mart_path, read_mart

# A question about the past: the superseded values are what it asks for.
_HISTORY = re.compile(
    r"\b(?:used to|use to|before|previous(?:ly)?|former(?:ly)?|original(?:ly)?|earlier|in the past|history|ago|prior|"
    r"first|back then|at the time|until|anymore|no longer|change[ds]?|old|older|past)\b",
    re.I,
)
# At most this many asked facts become keys: a question names a few predicates of a few people.
MAX_KEYS = 4


@dataclass(frozen=True)
class Plan:
    """What the state fold says of a question's evidence, before retrieval."""

    current: list[StateFact]  # the current facts of the predicates asked for, most asked first
    old: dict[str, list[dict[str, Any]]]  # source entry -> the superseded values it states
    keys: list[str]  # source entries the state route ranks, in order
    history: bool  # the question asks about the past (as-of, known-at, words of the past)


def plan(home: MemcHome, state: list[StateFact], question: str, ctx: Context) -> Plan:
    """The keys: the current facts' turns, or, when the question asks about the past, the
    superseded values' turns instead (the newest change first)."""
    asked = intent.asked(question)
    # Functional predicates only: they hold one value at a time, so "now" is a question of them.
    # Keys of every asked predicate were measured and dropped: the turns of multi-valued facts
    # ("What does she study?" -> every `studies` claim) crowd out the evidence (one LoCoMo dev
    # conversation at 2,000 tokens: 0.859 without the route, 0.834 with every asked fact as a key).
    picked = [
        f for f in state
        if f.predicate in asked and (p := ONTOLOGY.get(f.predicate)) is not None and p.cardinality == "functional" and not p.derived
    ]  # fmt: skip
    current = sorted(picked, key=lambda f: -asked[f.predicate])[:MAX_KEYS]
    old = superseded(home, current, ctx.asker, as_of=_time(ctx.as_of), known_at=_time(ctx.known_at))
    keys = [f.source_entry_id for f in current]
    history = bool(ctx.as_of or ctx.known_at or _HISTORY.search(question))
    if old and history:
        newest = sorted(old, key=lambda e: max(s["since"] for s in old[e]), reverse=True)
        keys = newest[:MAX_KEYS]  # the past is what is asked: the current value needs no help
    return Plan(current=current, old=old, keys=list(dict.fromkeys(keys)), history=history)


# The key of a closing's group: scope, subject and predicate, joined by a byte no id holds.
_SEP = "\x1f"
_GROUP_BY = ("scope", "subject_id", "predicate")
# The columns of state_closings that `superseded` reads.
_READ = [
    "claim_id", "closed_object", "closed_visibility", "closed_source_entry_id", "closer_claim_id", "closer_object",
    "reason", "close_at", "closer_recorded_at", "closer_source_entry_id", "closer_source_ref", "closer_visibility",
]  # fmt: skip


def _closings(home: MemcHome) -> Grouped | None:
    """The state_closings rows that name the closed claim's source entry, grouped by scope,
    subject and predicate, once per version of the mart. Grouped in Arrow, not converted to
    Python: at 100k ledger entries the conversion took the first compile after each build
    2.9 s; a lookup now converts only its group's rows."""
    path = mart_path(home, STATE_CLOSINGS)

    def load() -> Grouped:
        # Only what `superseded` reads (not the closer's quote, most of the mart's bytes): at the
        # 1M-entry bench home the mart is 5.4M rows, read whole and grouped in 18 s, the first
        # compile after a build.
        rows = read_mart(path, columns=[*_GROUP_BY, *_READ])
        closed = rows.column("closed_source_entry_id")
        # Pairs stored before the column existed carry no closed entry: a null key puts them in
        # no group (filtering the table instead copied every column, seconds at that size).
        named = pc.fill_null(pc.not_equal(closed, ""), False)
        key = pc.if_else(named, pc.binary_join_element_wise(*(rows.column(c) for c in _GROUP_BY), _SEP), None)
        return Grouped(rows.select(_READ).append_column("_group", key), "_group")

    return cached("state_closings", [path], load)


def prepare(home: MemcHome) -> None:
    """Read the state_closings mart's groups now (query/compile.py prepare)."""
    _closings(home)


def _time(iso_time: str | None) -> datetime | None:
    return datetime.fromisoformat(iso_time) if iso_time else None


def superseded(
    home: MemcHome, current: list[StateFact], asker: str, *, as_of: datetime | None = None, known_at: datetime | None = None
) -> dict[str, list[dict[str, Any]]]:
    """source entry id -> what it said that no longer holds, for the subjects and predicates of
    ``current``: claims the asker may see, closed by a claim the asker may see (the first such
    closer names the change), never the current claim itself. With ``as_of`` / ``known_at``,
    only closings in effect by that valid time and recorded by that transaction time."""
    index = _closings(home) if current else None
    if not index:
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for fact in current:
        first: dict[str, dict[str, Any]] = {}
        parts = (fact.scope, fact.subject_id or "", fact.predicate)
        for r in index.rows_of([_SEP.join(parts)] if all(isinstance(x, str) for x in parts) else []):
            if r["claim_id"] == fact.claim_id or r["closed_source_entry_id"] == fact.source_entry_id:
                continue
            if not (may_see(asker, r["closed_visibility"]) and may_see(asker, r["closer_visibility"])):
                continue
            if (as_of is not None and r["close_at"] > as_of) or (known_at is not None and r["closer_recorded_at"] > known_at):
                continue  # the change came later than the time asked about
            seen = first.get(r["claim_id"])
            if seen is None or (r["close_at"], r["closer_claim_id"]) < (seen["close_at"], seen["closer_claim_id"]):
                first[r["claim_id"]] = r
        for r in first.values():
            out.setdefault(r["closed_source_entry_id"], []).append(
                {
                    "subject": fact.subject,
                    "predicate": fact.predicate,
                    "object": r["closed_object"],
                    "now": fact.object,
                    "by_object": r["closer_object"],
                    "since": iso(r["close_at"]),
                    "reason": r["reason"],
                    "by_entry_id": r["closer_source_entry_id"],
                    "by_source_ref": r["closer_source_ref"],
                }
            )
    return out


def order(ctx: Context, plan: Plan) -> None:
    """Label the items that show superseded values and, unless the question asks about the past
    (the plan says so, or retrieval found a time window in it), move them below the first item
    that shows a current value's evidence (to the end when no item does). Stable: every other
    item keeps retrieval's order."""
    old = plan.old
    if not old:
        return
    now = {f.source_entry_id for f in plan.current}
    stale: list[ContextItem] = []
    for it in ctx.items:
        shown = it.entry_ids or [it.entry_id]
        labels = [s for e in shown for s in old.get(e, ())]
        if labels and not now.intersection(shown):
            it.superseded = labels
            stale.append(it)
    if not stale or plan.history or ctx.time_window:
        return
    rest = [it for it in ctx.items if not it.superseded]
    at = next((i + 1 for i, it in enumerate(rest) if now.intersection(it.entry_ids or [it.entry_id])), len(rest))
    ctx.items = rest[:at] + stale + rest[at:]


NO_PLAN = Plan(current=[], old={}, keys=[], history=False)  # the state route off (QueryConfig.state_weight 0)

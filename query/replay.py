"""Replay a logged compile: the same question, asker, scope, time travel and settings, compiled
again, and its plan against the logged one (query/plan.py diff): identical, or which step
changed first and how, and why where the ledger and the views can tell (entries added since,
views rebuilt, entries erased or no longer visible).

The log keeps no question (query/log.py), so the caller gives it again; it must match the
record's keyed fingerprint, or the replay is refused: a replay of another question would compare
two unrelated plans, and a fingerprint that accepted near-misses would say more of the question
than an exact guess. The same holds for a goal. See docs/context.md, "Read policy".
"""

from __future__ import annotations

import hmac
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ledger import shared_reader
from memc.home import MemcHome
from query.acl import Checker, ledger_facts
from query.asking import Goal
from query.compile import compile_context
from query.config import QueryConfig
from query.log import find_record, fingerprint, key_id, question_key
from query.plan import StepChange, diff


class ReplayError(Exception):
    """The compile cannot be replayed: no such query id, a question or goal that is not the
    logged one, or a record without a plan or under an earlier key; the message says which."""


@dataclass
class Replay:
    query_id: str
    logged_at: str
    asker: str
    scope: str | None
    replayed_id: str  # the replay's own compile, logged with replay_of
    steps: int  # in the logged plan
    changes: list[StepChange]
    why: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.changes

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "logged_at": self.logged_at,
            "asker": self.asker,
            "scope": self.scope,
            "replayed_id": self.replayed_id,
            "steps": self.steps,
            "identical": self.identical,
            "first_change": self.changes[0].to_dict() if self.changes else None,
            "changes": [c.to_dict() for c in self.changes],
            "why": self.why,
        }

    def render(self) -> str:
        where = f" in scope {self.scope}" if self.scope else ""
        lines = [f"replay of {self.query_id} (logged {self.logged_at[:19]}Z, as {self.asker}{where}), compiled again as {self.replayed_id}"]
        if self.identical:
            lines.append(f"identical: all {self.steps} steps of the plan are as logged")
            return "\n".join(lines + [f"  {w}" for w in self.why])
        first = self.changes[0]
        lines.append(f"differs: first at step {first.index} of {self.steps} ({first.step}); {len(self.changes)} step(s) changed")
        lines += [f"  {c.line()}" for c in self.changes]
        if self.why:
            lines.append("why:")
            lines += [f"  {w}" for w in self.why]
        return "\n".join(lines)


def replay(home: MemcHome, query_id: str, question: str, *, goal: str | None = None, embedder: Any = None) -> Replay:
    """Compile ``query_id``'s question again, as logged, and compare the plans. Raises
    ReplayError when the record is missing or without a plan, or ``question`` (or ``goal``) is
    not the one logged."""
    record = find_record(home, query_id)
    if record is None:
        raise ReplayError(f"no compile {query_id} in the query log ({home.querylog})")
    if "steps" not in (record.get("plan") or {}) or "config" not in record:
        raise ReplayError(f"{query_id} was logged without its plan (by an earlier memc): it cannot be replayed")
    wanted = check_question(home, record, question, goal)
    ctx = compile_context(
        question, record["asker"], home=home, scope=record["scope"], as_of=_time(record["as_of"]), known_at=_time(record["known_at"]),
        config=QueryConfig.model_validate(record["config"]), embedder=embedder, goal=wanted, uncolored=record["plan"].get("uncolored", False),
        replay_of=query_id,
    )  # fmt: skip
    now = find_record(home, ctx.query_id) or {}
    changes = diff(record["plan"]["steps"], now.get("plan", {}).get("steps", []))
    return Replay(
        query_id=query_id,
        logged_at=record["at"],
        asker=record["asker"],
        scope=record["scope"],
        replayed_id=ctx.query_id,
        steps=len(record["plan"]["steps"]),
        changes=changes,
        why=explain(home, record, now, changes),
    )


def check_question(home: MemcHome, record: dict[str, Any], question: str, goal: str | None) -> Goal | None:
    """The goal to compile with, when ``question`` and ``goal`` are the logged ones (by their
    fingerprints); else ReplayError."""
    key = question_key(home)
    if record.get("key_id") != key_id(key):
        raise ReplayError(
            f"{record.get('query_id')} was fingerprinted under an earlier key of this home (an erasure replaces it, "
            "docs/security.md): its question cannot be checked, so it cannot be replayed"
        )
    if not hmac.compare_digest(fingerprint(key, question), record.get("question_hmac") or ""):
        raise ReplayError(
            f"that is not the question of {record.get('query_id')}: it does not match the logged fingerprint "
            "(give the question exactly as it was asked)"
        )
    wanted = Goal.of(goal)
    logged = record.get("goal_hmac")
    if logged is None and wanted is not None:
        raise ReplayError(f"{record.get('query_id')} was compiled without a goal: replay it without --goal")
    if logged is not None:
        if wanted is None:
            raise ReplayError(f"{record.get('query_id')} was compiled for a goal: give it with --goal, exactly as it was")
        if not hmac.compare_digest(fingerprint(key, json.dumps(wanted.to_dict(), sort_keys=True)), logged):
            raise ReplayError(f"that is not the goal of {record.get('query_id')}: it does not match the logged fingerprint")
    return wanted


def explain(home: MemcHome, logged: dict[str, Any], now: dict[str, Any], changes: list[StepChange]) -> list[str]:
    """Why the plans may differ, from what the records and the ledger say: entries appended since
    (by kind), views rebuilt or still behind, and for the entry ids a step gained or lost,
    whether they are new since or erased or hidden from the asker now."""
    out = []
    was, head = logged.get("ledger_head") or 0, now.get("ledger_head") or 0
    ledger = shared_reader(home.ledger)
    added: dict[str, int] = {}
    if head > was:
        rows = [r for r in ledger.read(["seq", "entry_id", "kind"], since_seq=was).to_pylist() if r["seq"] > was]
        added = {r["entry_id"]: r["seq"] for r in rows}
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(Counter(r["kind"] for r in rows).items()))
        out.append(f"{head - was} entries were added to the ledger since (head {was} -> {head}: {kinds})")
    elif head == was:
        out.append(f"the ledger is as logged (head {head})")
    for view, w in (now.get("watermarks") or {}).items():
        before = (logged.get("watermarks") or {}).get(view)
        if w != before:
            out.append(f"view {view} was rebuilt since: watermark {before} -> {w}")
        elif w is not None and w < head:
            out.append(f"view {view} is still at {w}, {head - w} entries behind the ledger")
    gained, lost = _ids(changes)
    if gained:
        new = [e for e in gained if e in added]
        if new:
            out.append("new since: " + ", ".join(f"{e} (seq {added[e]})" for e in new[:10]) + (f" and {len(new) - 10} more" if len(new) > 10 else ""))
    if lost:
        checker = Checker(ledger_facts(ledger), logged["asker"])
        gone = {e: why for e in lost if (why := checker.why_not(e))}
        if gone:
            out.append("gone now: " + ", ".join(f"{e} ({why})" for e, why in list(gone.items())[:10]))
    if changes and head == was and all(w == (logged.get("watermarks") or {}).get(v) for v, w in (now.get("watermarks") or {}).items()):
        versions = f" (memc {logged.get('memc')} -> {now.get('memc')})" if logged.get("memc") != now.get("memc") else ""
        out.append(f"the ledger and the views are as logged: the compiler, its settings' meaning or its model changed{versions}")
    return out


def _ids(changes: list[StepChange]) -> tuple[list[str], list[str]]:
    """Entry ids some step gained and lost, in first-seen order."""
    gained: dict[str, None] = {}
    lost: dict[str, None] = {}
    for c in changes:
        for change in c.fields.values():
            gained.update(dict.fromkeys(change.get("added") or ()))
            lost.update(dict.fromkeys([*(change.get("removed") or ()), *(change.get("dropped") or ())]))
    return [e for e in gained if e.startswith("e_")], [e for e in lost if e.startswith("e_")]


def _time(iso_time: str | None) -> datetime | None:
    return datetime.fromisoformat(iso_time) if iso_time else None

"""The compiled context: its data model (Context, ContextItem, StateFact) and how it renders as
text, with a citation per turn. docs/context.md describes the JSON and the rendering.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from memc.visibility import RESERVED_PREFIX


@dataclass
class ContextItem:
    entry_id: str
    source_ref: str | None
    scope: str
    kind: str
    actor: str | None
    text: str
    valid_at: str
    recorded_at: str
    routes: list[str]
    score: float
    source_refs: list[str | None] = field(default_factory=list)  # every turn the item shows
    entry_ids: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)  # entries saying the same words, not shown again
    ingested_by: list[str | None] = field(default_factory=list)  # who wrote each entry shown (from the ledger)
    # Values this item is the evidence of that no longer hold: each names the value, the entry
    # that superseded it and since when (query/current.py). Such items rank below the current one's.
    superseded: list[dict[str, Any]] = field(default_factory=list)
    # The best share of a route's top score this item reached (1.0: the best hit of some route, or
    # asked for through a fact); the packer's relevance floor reads it.
    relevance: float = 1.0
    # A memory unit's turns (query/units.py): the unit's id, and each turn's valid time (the turns
    # come from several sessions, so each line is dated).
    unit_id: str | None = None
    turn_times: list[str] = field(default_factory=list)


@dataclass
class StateFact:
    subject: str
    predicate: str
    object: str
    valid_from: str
    valid_to: str | None
    source_entry_id: str
    source_ref: str | None
    quote: str
    scope: str
    source_ingested_by: str | None = None  # who wrote the source entry (from the ledger)
    subject_id: str | None = None
    claim_id: str | None = None
    # Every claim of this value, the newest first (its own source fields are the first's); a
    # restatement adds a source, not a fact line (query/state.py merge_restatements).
    sources: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Context:
    question: str
    asker: str
    scope: str | None
    ledger_head: int
    watermarks: dict[str, int | None]
    as_of: str | None = None
    known_at: str | None = None
    staleness: dict[str, dict[str, Any]] = field(default_factory=dict)  # per view: lag and decision
    items: list[ContextItem] = field(default_factory=list)
    state: list[StateFact] = field(default_factory=list)
    conflicts: list[dict[str, Any]] = field(default_factory=list)  # both sides, each with its source
    # How this was done before: skills (views/skills.py) whose trigger the question or goal
    # matches, each with its steps, how often following them worked and its trajectories' ids.
    skills: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0  # of the rendered context, counted with a real tokenizer
    latency_ms: float = 0.0
    acl_dropped: int = 0  # items and facts the independent checker (query/acl.py) dropped
    time_window: dict[str, str | None] | None = None  # the window the question named: phrase, start, end
    goal: dict[str, Any] | None = None  # the agent's task that shaped the compile: text, entities, predicates
    uncolored: bool = False  # facts about the asker left out (query/asking.py)
    # The compile's id in the query log, to replay it by (`memc replay`, query/replay.py); not
    # rendered: the agent's tokens are for evidence, and `memc ask` prints it below the context.
    query_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def header(self) -> list[str]:
        marks = ", ".join(f"{k}@{v if v is not None else 'missing'}" for k, v in self.watermarks.items())
        when = "".join(f" {k.replace('_', '-')} {v[:19]}" for k, v in (("as_of", self.as_of), ("known_at", self.known_at)) if v)
        # Views that all hold the head are said in about 10 tokens rather than named in 25-30: the same
        # news, and the rest of the budget is evidence's (the JSON keeps every watermark).
        current = bool(self.watermarks) and all(v == self.ledger_head for v in self.watermarks.values())
        lines = [
            f'Context for "{self.question}" as {self.asker}' + (f" in scope {self.scope}" if self.scope else "") + when,
            f"ledger head {self.ledger_head}; every view built to it" if current else f"ledger head {self.ledger_head}; views {marks}",
        ]
        if self.time_window:
            w = self.time_window
            lines.append(f"time window \"{w['phrase']}\": {(w['start'] or '-')[:10]} .. {(w['end'] or '-')[:10]}")
        if self.goal:
            g = self.goal
            shaped = [f'"{one_line(g["text"], 120)}"'] if g.get("text") else []
            shaped += [f"entities {', '.join(g['entities'])}"] if g.get("entities") else []
            shaped += [f"predicates {', '.join(g['predicates'])}"] if g.get("predicates") else []
            lines.append("shaped by the goal " + "; ".join(shaped))
        if self.uncolored:
            lines.append(f"uncolored: no facts about {self.asker}")
        behind = [f"{v} {s['decision']} ({s['lag_entries']} entries behind)" for v, s in self.staleness.items() if s.get("decision") not in (None, "fresh")]
        if behind:
            lines.append("staleness: " + "; ".join(behind))
        return lines

    def render(self) -> str:
        lines = self.header()
        if self.state:
            show = mixed_scopes(self.state)
            lines += ["", "What holds now:" if not (self.as_of or self.known_at) else "What held then:", *(state_line(f, self.asker, show_scope=show) for f in self.state)]
        if self.conflicts:
            lines += ["", "Conflicts (sources disagree; both sides kept):"]
            for c in self.conflicts:
                sides = " vs ".join(
                    f"{s['object']} ({s['source_ref'] or '-'} {s['source_entry_id']}{_via(s.get('ingested_by'), self.asker)})" for s in c["sides"]
                )
                lines.append(f"  {c['subject']} {c['predicate']} at {c['valid_at'][:10]}: {sides}")
        if self.skills:
            lines += ["", "How this was done before:", *(line for s in self.skills for line in skill_lines(s))]
        lines.append("")
        lines.append("Evidence:" if self.items else NO_EVIDENCE)
        for i, it in enumerate(self.items, 1):
            lines += item_lines(i, it, self.asker)
        return "\n".join(lines)


# The evidence section's title when no item is shown (query/pack.py counts it then).
NO_EVIDENCE = "Evidence: none visible to this asker."


def _via(writer: str | None, asker: str) -> str:
    """Who wrote an entry, when it is another principal: its actor and source ref are then that
    principal's claim, and the reader must be able to tell (docs/security.md). The home's own
    writers (``memc:cli``, ``memc:inbox``, producers) and the asker's own writes go unsaid, so
    the common case costs no tokens."""
    return f" via {writer}" if writer and writer != asker and not writer.startswith(RESERVED_PREFIX) else ""


def mixed_scopes(facts: list[StateFact]) -> bool:
    """Facts from more than one scope (an ask without a scope): each line then names its scope,
    or two scopes' "Elena lives_in" would read as one person's contradiction."""
    return len({f.scope for f in facts}) > 1


def state_line(f: StateFact, asker: str, *, show_scope: bool = False) -> str:
    """``show_scope``: prefix ``[scope]`` (when the shown facts come from several scopes).

    The source is cited as an item cites a turn (:func:`item_lines`): by its ref, by its entry
    id only when it has none. The id cost ~21 of a line's ~50 tokens; cited by ref alone, LoCoMo
    dev at 500 / 1,000 / 2,000 tokens went 0.728 / 0.849 / 0.904 -> 0.740 / 0.851 / 0.905 on
    homes built afresh (docs/context.md, "Facts cited by their ref, after the evidence")."""
    until = f" until {f.valid_to[:10]}" if f.valid_to else ""
    where = f"[{f.scope}] " if show_scope else ""
    # The older sources of a restated value by their refs only: the newest one's quote says it.
    also = "".join(f"; also {_cite(s.get('source_ref'), s['source_entry_id'])}" for s in f.sources[1:])
    return (
        f"  {where}{f.subject} {f.predicate} {f.object}  (since {f.valid_from[:10]}{until}; "
        f"source {_cite(f.source_ref, f.source_entry_id)}{_via(f.source_ingested_by, asker)}: \"{f.quote}\"{also})"
    )


def skill_lines(skill: dict[str, Any]) -> list[str]:
    """A skill as the agent reads it: what tasks it is for, how well it did against the other
    ways tried, its steps in order and when it is done. Its trajectories are cited by count
    (their entry ids are in the JSON): a skill stands for many, and their ids would cost more
    tokens than the steps."""
    lines = [
        f"  For tasks like \"{one_line(skill['example_task'], 120)}\": followed {skill['support']} times, "
        f"succeeded {skill['success_rate']:.0%} (other ways {skill['baseline_rate']:.0%} of {skill['compared']}); skill {skill['skill_id']}"
    ]
    lines += [f"    {i}. {step}" for i, step in enumerate(skill["steps"], 1)]
    lines.append(f"    done when: {skill['termination']}")
    return lines


def item_lines(i: int, it: ContextItem, asker: str) -> list[str]:
    """Lean on purpose: every token here is one the agent's budget does not spend on evidence.
    Routes, scores and ledger entry ids are in the JSON form; the text keeps the time and cites
    each turn by its source ref (what a reader knows it by), or by its entry id when it has none.
    An entry id costs ~12 tokens: left out where a ref cites the turn, 2,000 tokens hold about
    one item more (LoCoMo dev recall@10 0.842 -> 0.855, multi-hop 0.528 -> 0.548)."""
    head = f"  {i:>2}. {it.valid_at[:10]}"
    writers = it.ingested_by or [None] * max(1, len(it.entry_ids))
    if len(it.entry_ids) <= 1:
        return [f"{head} [{_cite(it.source_ref, it.entry_id)}{_via(writers[0], asker)}]", *superseded_lines(it), f"      {one_line(it.text, 600)}"]
    if it.unit_id and len(it.turn_times) == len(it.entry_ids):
        # a memory unit: turns of one speaker from several sessions, each with its date
        return [f"{head} same topic, other sessions", *superseded_lines(it)] + [
            f"      [{when[:10]} {_cite(ref, eid)}{_via(by, asker)}] {one_line(line, 600)}"
            for ref, eid, by, when, line in zip(it.source_refs, it.entry_ids, writers, it.turn_times, it.text.split("\n"))
        ]
    # a window: one line per turn, the hit marked
    return [head, *superseded_lines(it)] + [
        f"    {'>' if eid == it.entry_id else ' '} [{_cite(ref, eid)}{_via(by, asker)}] {one_line(line, 600)}"
        for ref, eid, by, line in zip(it.source_refs, it.entry_ids, writers, it.text.split("\n"))
    ]


def superseded_lines(it: ContextItem) -> list[str]:
    """"(superseded: Elena lives_in Lisbon -> Berlin by ET2:1 since 2024-04-01; now Potsdam)":
    what this evidence says no longer holds, what replaced it where and when, and what holds
    now when that changed again, so a reader does not take the old value for now."""
    out = []
    for s in it.superseded:
        by = f"{_cite(s['by_source_ref'], s['by_entry_id'])} since {s['since'][:10]}"
        said = f"{s['subject']} {s['predicate']} {s['object']}"
        if s.get("reason") == "retracted":
            out.append(f"      (no longer holds: {said}, retracted by {by})")
            continue
        then = s.get("by_object") or s["now"]
        out.append(f"      (superseded: {said} -> {then} by {by}{'; now ' + s['now'] if s['now'] != then else ''})")
    return out


def _cite(source_ref: str | None, entry_id: str) -> str:
    return source_ref or f"entry {entry_id}"


def one_line(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def iso(v: Any) -> str:
    return v.isoformat() if isinstance(v, datetime) else str(v)

"""State facts and conflicts for a question: from the entity dossiers when they hold the state
build, else from the state index of state_current; as of a valid time and known at a
transaction time through the bi-temporal marts.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from memc.home import MemcHome
from memc.visibility import may_see
from query import intent
from query.asking import Goal, asked_with_goal, subject_words
from query.config import QueryConfig
from query.context import StateFact, iso
from query.state import StateQueryError, merge_restatements, state_for_entity
from views import dossiers as dossier_views
from views.grouped import Keep
from views.lance_filters import arrow_filter
from views.marts import ENTITY_ANALYTICS, STATE_CURRENT, mart_path, read_mart
from views.state_index import STATE_SOURCE, state_index


def holds_for(r: dict[str, Any], asker: str, scope: str | None) -> bool:
    """A state_current row is a current fact for this asker: in scope, visible to it, and not
    closed by a later claim or a retraction it may see."""
    return (
        (scope is None or r["scope"] == scope)
        and may_see(asker, r["visibility"])
        and asker not in (r.get("closed_for") or ())
    )


def event_lookup(home: MemcHome, asker: str, scope: str | None, named: dict[str, str]):
    """For "before she moved": when the newest fact of ``predicate`` about the person began, from
    the current fold as this asker sees it (the person named in the phrase, else the one person
    of the question with such a fact; none when that is ambiguous)."""

    def lookup(predicate: str, names: list[str]) -> datetime | None:
        index = state_index(home)
        if index is None:
            return None
        wanted = {n.casefold() for n in (names or named.values())}
        rows, _ = index.rows_for(wanted, seen_by(asker, scope)) or ([], [])
        starts: dict[str, datetime] = {}
        for r in rows:
            if holds_for(r, asker, scope) and r["predicate"] == predicate and (r["subject"] or "").casefold() in wanted:
                key = r["subject_id"]
                starts[key] = max(starts.get(key, r["valid_from"]), r["valid_from"])
        return next(iter(starts.values())) if len(starts) == 1 else None

    return lookup


def state_facts(
    home: MemcHome,
    question: str,
    asker: str,
    scope: str | None,
    config: QueryConfig,
    *,
    as_of: datetime | None = None,
    known_at: datetime | None = None,
    goal: Goal | None = None,
    uncolored: bool = False,
    asked: dict[str, int] | None = None,
) -> tuple[list[StateFact], list[dict[str, Any]]]:
    """What holds for the entities the question (and the goal) names, for this asker, and the
    conflicts about them (both sides, each with its source). The current fold by default; with
    ``as_of`` or ``known_at``, the bi-temporal query over state_history instead. "I" names the
    asker; ``uncolored`` leaves every fact about the asker out (query/asking.py). ``asked`` is
    ``asked_with_goal(question, goal)`` when the caller has it already (query/compile.py needs it
    again to pack).

    The rows come from the entity dossiers (views/dossiers.py) when they hold the state build the
    marts hold and every subject the question can name has one; else from the index of
    state_current by subject (``views.state_index.state_index``, built once per version of the marts
    in a warm process). Either way the rows about the subjects the question's words can name, in
    mart order, are filtered below, so the answer is the same (tests/platform/test_profile.py);
    ``state_source()`` says which was read."""

    path = mart_path(home, STATE_CURRENT)
    if not path.exists() or config.max_state_facts == 0:
        STATE_SOURCE.set("none")
        return [], []
    words = subject_words(question, asker, goal, uncolored=uncolored)  # "Elena's employer" names Elena
    if asked is None:
        asked = asked_with_goal(question, goal)
    source, conflict_rows = state_rows(home, words, asker, scope)
    if intent.wants_analytics(question):
        source = [*source, *analytics_rows(home, words, {r["subject_id"] for r in source})]
    rows = [r for r in source if holds_for(r, asker, scope) and intent.shown(r["predicate"], question)]
    mentioned = {r["subject_id"] for r in rows if r["subject"].casefold() in words}
    if uncolored:
        mentioned -= {r["subject_id"] for r in rows if r["subject"].casefold() == asker.casefold()}
    if as_of is not None or known_at is not None:
        return state_as_of(home, sorted(mentioned), asker, scope, config, as_of, known_at, question, words, asked)
    newest: dict[tuple[str, str, str], dict[str, Any]] = {}
    facts = []
    # One line per value: a value restated in several entries (a move said again, a sister
    # named twice) is one fact, since its first claim, with every source (query/state.py).
    for r in merge_restatements([r for r in rows if r["subject_id"] in mentioned]):
        if r["cardinality"] == "functional":
            key = (r["scope"], r["subject_id"], r["predicate"])
            if r.get("in_conflict"):
                facts.append(r)  # two equally recent sources disagree: both sides are kept
                continue
            cur = newest.get(key)
            if cur is None or (r["valid_from"], r["recorded_at"]) > (cur["valid_from"], cur["recorded_at"]):
                newest[key] = r
        else:
            facts.append(r)
    facts = rank_facts([*newest.values(), *facts], words, asked)
    conflicts = [
        conflict_of(c)
        for c in conflict_rows
        if c.get("subject_id") in mentioned
        # both sides must be visible: a conflict shows each side's text
        and may_see(asker, c["visibility_a"])
        and may_see(asker, c["visibility_b"])
    ]
    return [fact_of(r) for r in facts[: config.max_state_facts]], conflicts


def state_rows(home: MemcHome, words: set[str], asker: str | None = None, scope: str | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(state rows, conflicts rows) about every subject ``words`` can name, in mart order: from the
    current dossiers when they cover the question, else from the index of the marts. Records
    which in ``state_source()``. With ``asker``, the index's state rows out of ``scope`` or not
    visible to the asker are left out before they become Python (``holds_for`` checks every
    row again)."""

    dossiers = dossier_views.load_dossiers(home)
    hit = dossiers.rows_for(words) if dossiers is not None else None
    if hit is not None:
        STATE_SOURCE.set("dossier")
        return hit
    STATE_SOURCE.set("state_current")
    index = state_index(home)
    keep = seen_by(asker, scope) if asker is not None else None
    return (index.rows_for(words, keep) if index is not None else None) or ([], [])


def seen_by(asker: str, scope: str | None) -> Keep:
    """The Arrow mask of the state rows in ``scope`` that ``asker`` may see (the search routes'
    test, views/lance_filters.py): a cut before rows become Python, ``holds_for`` still checks each."""
    return lambda rows: arrow_filter(rows, [asker], scope)


def analytics_rows(home: MemcHome, words: set[str], subject_ids: set[str]) -> list[dict[str, Any]]:
    """Dreaming's derived analytics (centrality, community) about the subjects ``words`` name
    (or the state rows found): read from their own mart, entity_analytics, only for a question
    about importance or groups. Rows read as state_current's (``holds_for``); a few per entity."""

    path = mart_path(home, ENTITY_ANALYTICS)
    if not path.exists():
        return []
    return [
        r
        for r in read_mart(path).to_pylist()
        if r["subject_id"] in subject_ids or (r["subject"] or "").casefold() in words
    ]


def state_source() -> str:
    """Where the latest ``state_facts`` in this thread (or task) read state from: "dossier",
    "state_current" or "none" (no state mart, or no state facts wanted). For the query log's plan."""

    return STATE_SOURCE.get()


def rank_facts(rows: list[dict[str, Any]], words: set[str], asked: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Facts about the entities the question names: of the predicates it asks for first
    (query/intent.py: "Where does Elena work?" asks for works_at, through the lexicon's lemmas),
    then those sharing words with the question, then the most recent."""
    asked = asked or {}

    def overlap(r: dict[str, Any]) -> int:
        said = set(re.findall(r"[\w'-]+", f"{r['predicate'].replace('_', ' ')} {r['object']} {r['quote']}".casefold()))
        return len((said & words) - _STOP)

    return sorted(rows, key=lambda r: (-asked.get(r["predicate"], 0), -overlap(r), -r["valid_from"].timestamp(), r["claim_id"]))


# Words that say nothing about which fact is wanted.
_STOP = frozenset(
    "a an the i me my you your he she her his it its we our they their is are was were be been do does did "
    "to of in on at for with and or what when where who whom which why how now then this that".split()
)


def fact_of(r: dict[str, Any]) -> StateFact:
    return StateFact(
        subject=r["subject"],
        predicate=r["predicate"],
        object=r["object"],
        valid_from=iso(r["valid_from"]),
        valid_to=iso(r["valid_to"]) if r.get("valid_to") else None,
        source_entry_id=r["source_entry_id"],
        source_ref=r["source_ref"],
        quote=r["quote"],
        scope=r["scope"],
        subject_id=r.get("subject_id"),
        claim_id=r.get("claim_id"),
        sources=[{k: iso(v) if isinstance(v, datetime) else v for k, v in src.items()} for src in r.get("sources", ())],
    )


def state_as_of(
    home, subjects, asker, scope, config, as_of, known_at, question: str, words: set[str], asked: dict[str, int]
) -> tuple[list[StateFact], list[dict[str, Any]]]:
    """What held then, chosen as the present-tense facts are: no fact line of a predicate the
    question may not show (``mentions``; derived analytics unless asked for), the asked
    predicates first (rank_facts), at most ``max_state_facts``."""
    now = datetime.now(timezone.utc)
    facts, conflicts = [], []
    for subject_id in subjects:
        try:
            res = state_for_entity(home.marts, subject_id, principal=asker, as_of=as_of or now, known_at=known_at or now, scope=scope)
        except StateQueryError:
            return [], []  # the history marts are not built yet
        facts += [r for r in res["facts"] if intent.shown(r["predicate"], question)]
        conflicts += [conflict_of(c) for c in res["conflicts"]]
    return [fact_of(r) for r in rank_facts(facts, words, asked)[: config.max_state_facts]], conflicts


def conflict_of(c: dict[str, Any]) -> dict[str, Any]:
    return {
        "subject": c["subject"],
        "predicate": c["predicate"],
        "valid_at": iso(c["valid_at"]),
        "resolution": c["resolution"],
        "sides": [
            {
                "object": c[f"object_{side}"],
                "source_entry_id": c[f"source_entry_id_{side}"],
                "source_ref": c[f"source_ref_{side}"],
                "quote": c[f"quote_{side}"],
                "recorded_at": iso(c[f"recorded_at_{side}"]),
            }
            for side in ("a", "b")
        ],
        "source_entry_ids": [c["source_entry_id_a"], c["source_entry_id_b"]],
    }

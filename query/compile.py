"""compile_context: for one question and one asker, a bounded context with provenance. The
pipeline, top to bottom; each stage is a module of its own:

1. staleness: each view's watermark against the ledger head (query/staleness.py);
2. state facts and conflicts from the fold or a dossier (query/facts.py);
3. retrieval: full text, vectors, the time window, the graph and the asked facts' own turns,
   fused (query/retrieve.py), with conversation windows (query/windows.py), memory units
   (query/units.py) and named entities (query/entities.py); superseded values' evidence below
   the current one's (query/current.py);
4. erased entries out, then the independent visibility check against the ledger (query/acl.py);
5. packing into the token budget (query/pack.py), then the query log (query/log.py).

Each stage adds its steps to the compile's plan (query/plan.py) as it runs; the log keeps the
plan under the compile's ``query_id``, by which `memc replay` compiles it again (query/replay.py).

See docs/context.md.
"""

from __future__ import annotations

import functools
import gc
import json
import time
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Callable

from claims.extractors import active_extractor_key
from claims.store import extractor_dir
from ledger import Ledger, shared_reader
from memc.home import MemcHome
from memc.visibility import PRINCIPAL_RE, SCOPE_RE, check_literal
from memc.watermark import read_watermark
from query import current
from query.acl import check_context, check_scope, ledger_facts
from query.asking import Goal, asked_with_goal
from query.config import EVIDENCE_KINDS, QueryConfig
from query.context import Context
from query.facts import state_facts, state_source
from query.log import fingerprint, key_id, question_key, record_compile
from query.pack import pack
from query.plan import PlanRecorder, new_query_id
from query.retrieve import embed_question, retrieve
from query.staleness import assess
from views.build import vector_store
from views.dossiers import load_dossiers
from views.profile import logged_entities
from views.published import PULL_TTL_S
from views.published import pull as pull_views
from views.skills import Skill, matching_skills
from views.state_index import state_index


# Every view that records the ledger watermark it was compiled from (memc/watermark.py), by name,
# and how to read it: from the view's directory, or from the index itself (a file in its
# directory, an object beside its tables on S3).
VIEW_MARKS: dict[str, Callable[[MemcHome], dict[str, Any] | None]] = {
    "claims": lambda home: read_watermark(extractor_dir(home.claims, active_extractor_key())),  # the claims dbt folds, too
    "state": lambda home: read_watermark(home.warehouse),
    "evidence_index": lambda home: vector_store(home).read_watermark(),
    "entity_graph": lambda home: read_watermark(home.graph),
    "memory_units": lambda home: read_watermark(home.units),
    "skills": lambda home: read_watermark(home.skills),
    "entity_dossiers": lambda home: read_watermark(home.dossiers),
}
# The views a compile reads and checks its context against.
COMPILED_FROM = ("claims", "state", "evidence_index", "entity_graph")


def view_marks(home: MemcHome, names: tuple[str, ...] = tuple(VIEW_MARKS)) -> dict[str, dict[str, Any] | None]:
    """The watermark record of each view in ``names``: the seq and what else it was built by."""
    return {name: VIEW_MARKS[name](home) for name in names}


def view_watermarks(home: MemcHome) -> dict[str, int | None]:
    return {name: (mark or {}).get("watermark") for name, mark in view_marks(home, COMPILED_FROM).items()}


def prepare(home: MemcHome) -> None:
    """Read what a compile reads once per version of the views and the ledger: the ledger's ACL
    facts, the state index and the dossiers, the closings, the evidence rows a process holds.
    A serving process calls it after each build (api/keeper.py), so the first ask after the
    build does not pay it: 1.5 s of the first compile on a 100k-entry home (docs/benchmarks.md,
    compile latency's last column), ~40 ms for every compile after it."""
    ledger_facts(shared_reader(home.ledger))  # read whole once per process, then only appends
    state_index(home)
    load_dossiers(home)
    current.prepare(home)
    vector_store(home).hold()  # nothing to hold for an index never built


def settle_heap() -> None:
    """What a serving process calls once it has read a new version of the views (:func:`prepare`):
    a full collection, then every object still alive moved out of the cyclic collector's reach
    (``gc.freeze``). The held evidence rows, the indexes and the loaded model are ~350k long-lived
    objects at 100k entries, and every full collection a compile's garbage set off walked them all
    (~100 ms, on one compile in a few hundred). At 100k entries, in one process, three rounds
    of 200 compiles: p50 49.7-50.0 -> 47.3-48.2 ms, p95 57.0-58.2 -> 54.2-55.1, p99 61-166 ->
    57-59 (docs/benchmarks.md). What an earlier call froze is thawed and collected first, so the
    objects of views since replaced are freed; objects freed by their reference counts (most) go
    at once either way."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def compile_context(
    question: str,
    asker: str,
    *,
    home: MemcHome | None = None,
    scope: str | None = None,
    as_of: datetime | None = None,
    known_at: datetime | None = None,
    budget_tokens: int | None = None,
    config: QueryConfig | None = None,
    embedder: Any = None,
    goal: Goal | str | None = None,
    uncolored: bool = False,
    replay_of: str | None = None,
) -> Context:
    """Compile the context for one question and one asker.

    ``as_of`` asks what held at a valid time, ``known_at`` what memc knew at a transaction time
    (both default to now: the current fold). ``goal`` (a text, or a Goal with entities and
    predicates) is the agent's current task: it shapes which facts and evidence rank first.
    ``uncolored`` leaves out every fact about the asker (query/asking.py). ``replay_of``: the
    query id this compile replays (query/replay.py), noted in its log record. Raises
    StaleViewError when a view must fail closed, and UnknownScopeError (query/acl.py) when
    ``scope`` holds nothing the asker may see."""
    started = time.perf_counter()
    home = home or MemcHome.resolve()
    config = config or QueryConfig()
    if budget_tokens is not None:
        config = config.model_copy(update={"budget_tokens": budget_tokens})
    ledger = shared_reader(home.ledger)
    # A view another node built and published (MEMC_STORAGE) is read from this node's copy.
    pull_views(home, max_age=PULL_TTL_S)
    # A malformed asker or scope is refused first, as malformed (never looked up, never widened);
    # an unknown scope is an error, not an empty context that reads as "memory knows nothing".
    check_literal(asker, PRINCIPAL_RE, "principal")
    if scope is not None:
        check_literal(scope, SCOPE_RE, "scope")
    # The question's vector is under way from here (ONNX Runtime releases the GIL), beside the
    # scope check, the watermarks and the state facts: at 100k entries its ~5 ms then end ~1.5 ms
    # before the vector routes can start, where it began after those checks (docs/benchmarks.md).
    embedder, embedding = embed_question(home, question, config, embedder, None)
    check_scope(ledger, asker, scope)
    head = ledger.head()
    ctx = Context(
        question=question,
        asker=asker,
        scope=scope,
        ledger_head=head,
        watermarks=view_watermarks(home),
        as_of=as_of.isoformat() if as_of else None,
        known_at=known_at.isoformat() if known_at else None,
        uncolored=uncolored,
        query_id=new_query_id(),
    )
    recorder = PlanRecorder()
    wanted = Goal.of(goal)
    ctx.goal = wanted.to_dict() if wanted else None
    ctx.staleness, erased = assess(ledger, head, ctx.watermarks, config.staleness)
    patch = None
    if ctx.staleness.get("evidence_index", {}).get("decision") == "patched":
        patch = (ctx.watermarks.get("evidence_index") or 0, head)
    recorder.add("staleness", views={v: s.get("decision") for v, s in ctx.staleness.items()}, pending_erasures=len(erased), patched=patch is not None)
    if embedding is None and patch is not None:  # no index built yet, its tail patched: the vector ranks the patch
        embedder, embedding = embed_question(home, question, config, embedder, patch)
    # What every route's search applies before it ranks (the store filters; query/acl.py re-checks after).
    recorder.add(
        "prefilter", principals=[asker], scope=scope, as_of=ctx.as_of, known_at=ctx.known_at, kinds=list(EVIDENCE_KINDS),
        goal=wanted is not None, uncolored=uncolored,
    )  # fmt: skip
    # State first: the facts the question asks for are keys to their evidence (query/current.py).
    asked = asked_with_goal(question, wanted)
    ctx.state, ctx.conflicts = state_facts(
        home, question, asker, scope, config, as_of=as_of, known_at=known_at, goal=wanted, uncolored=uncolored, asked=asked
    )
    # With time travel the facts come from state_history, whichever view named the subjects.
    source = "state_history" if (as_of or known_at) and state_source() != "none" else state_source()
    recorder.add(
        "state", source=source, max_facts=config.max_state_facts, facts=len(ctx.state), entry_ids=[f.source_entry_id for f in ctx.state],
        conflicts=len(ctx.conflicts),
    )  # fmt: skip
    # How this was done before: skills whose trigger the question or the goal names (views/skills.py).
    if config.max_skills:
        task = " ".join(t for t in (question, wanted.text if wanted else None) if t)
        ctx.skills = [_skill(s) for s in matching_skills(home, task, asker, scope, limit=config.max_skills)]
    recorder.add("skills", max_skills=config.max_skills, skill_ids=[s["skill_id"] for s in ctx.skills])
    fold = current.plan(home, ctx.state, question, ctx) if config.state_weight else current.NO_PLAN
    recorder.add("current", keys=fold.keys, superseded=sorted(fold.old), history=fold.history)
    ctx.items, window = retrieve(
        home, question, asker, scope, config, embedder, ledger=ledger, patch=patch, when=(as_of, known_at), keys=fold.keys,
        goal=wanted.text if wanted else None, recorder=recorder, embedding=embedding,
    )  # fmt: skip
    ctx.time_window = window.to_dict() if window else None
    current.order(ctx, fold)
    recorder.add("current_first", labelled=[it.entry_id for it in ctx.items if it.superseded], entry_ids=[it.entry_id for it in ctx.items])
    _exclude(ctx, set(erased), recorder)
    _recheck_visibility(ctx, ledger, recorder)
    # The asked predicate's current value comes first (query/facts.py rank_facts) and is shown
    # whatever the facts' share of the budget leaves.
    keep_first = bool(ctx.state) and asked.get(ctx.state[0].predicate, 0) > 0
    pack(ctx, config.budget_tokens, config.state_share, config.relevance_floor, recorder, keep_first=keep_first)
    ctx.latency_ms = round((time.perf_counter() - started) * 1000, 2)

    key = question_key(home)
    record_compile(
        home,
        {
            "query_id": ctx.query_id,
            **({"replay_of": replay_of} if replay_of else {}),
            # Keyed fingerprints, never the words: replay checks the question it is given against
            # them (query/log.py); key_id says which key, which an erasure replaces.
            "question_hmac": fingerprint(key, question),
            "goal_hmac": fingerprint(key, json.dumps(wanted.to_dict(), sort_keys=True)) if wanted else None,
            "key_id": key_id(key),
            "asker": asker,
            "scope": scope,
            # Entity ids, not the question's words: erased text quoted in a question must not
            # outlive the erasure here (docs/security.md).
            **logged_entities(home, question, {f.subject for f in ctx.state}, scope),
            "as_of": ctx.as_of,
            "known_at": ctx.known_at,
            "plan": {
                "routes": sorted({r for it in ctx.items for r in it.routes}),
                "k": config.k,
                "patched": patch is not None,
                "state": state_source(),
                "time_window": {k: v for k, v in (ctx.time_window or {}).items() if k != "phrase"} or None,
                # whether a goal shaped it and whether the asker's facts were left out, never the goal's words
                "goal": wanted is not None,
                "uncolored": uncolored,
                # The steps as they ran (query/plan.py): ids, counts, weights, tokens; no text.
                "steps": recorder.steps,
            },
            # Every knob, so that a replay compiles with the same settings (numbers and names only).
            "config": config.model_dump(mode="json"),
            "memc": _version(),
            "items": len(ctx.items),
            # Which entries the context showed (ids, never text): the query profile's evidence
            # usage, from which decay counts an entry's age (query/retrieve.py decay()).
            "shown": sorted({e for it in ctx.items for e in (it.entry_ids or [it.entry_id])} | {f.source_entry_id for f in ctx.state if f.source_entry_id}),
            "state_facts": len(ctx.state),
            "skills": [sk["skill_id"] for sk in ctx.skills],
            "tokens": ctx.tokens,
            "latency_ms": ctx.latency_ms,
            "acl_dropped": ctx.acl_dropped,
            "watermarks": ctx.watermarks,
            "ledger_head": head,
        },
    )
    return ctx


def _skill(s: Skill) -> dict[str, Any]:
    """What a context shows of a skill, and cites: its trajectories, which the ledger check
    (query/acl.py) looks up like any other evidence."""
    return {
        "skill_id": s.skill_id, "scope": s.scope, "example_task": s.example_task, "steps": list(s.steps),
        "termination": s.termination, "support": s.support, "success_rate": s.success_rate,
        "baseline_rate": s.baseline_rate, "compared": s.compared, "match": s.match,
        "source_entry_ids": list(s.source_entry_ids), "compared_entry_ids": list(s.compared_entry_ids),
    }  # fmt: skip


@functools.cache
def _version() -> str:
    # memc's installed version, recorded on every context: read from the package metadata once
    # per process (2.5 ms a compile otherwise, of ~60 on the sample home).
    try:
        return version("memc")
    except PackageNotFoundError:
        return "0"


def _exclude(ctx: "Context", erased: set[str], recorder: PlanRecorder) -> None:
    """Drop everything citing an entry an erasure names, before that erasure is purged."""
    before = (ctx.items, len(ctx.state), len(ctx.conflicts))
    if erased:
        ctx.items = [it for it in ctx.items if not erased.intersection(it.entry_ids or [it.entry_id])]
        ctx.state = [f for f in ctx.state if f.source_entry_id not in erased]
        ctx.conflicts = [c for c in ctx.conflicts if not erased.intersection(c.get("source_entry_ids", []))]
        ctx.skills = [s for s in ctx.skills if not erased.intersection([*s["source_entry_ids"], *s["compared_entry_ids"]])]
    kept = {id(it) for it in ctx.items}
    recorder.add(
        "filter", "erased", entry_ids=[it.entry_id for it in before[0] if id(it) not in kept],
        state_facts=before[1] - len(ctx.state), conflicts=before[2] - len(ctx.conflicts),
    )  # fmt: skip


def _recheck_visibility(ctx: Context, ledger: Ledger, recorder: PlanRecorder) -> None:
    """Independent of the store filters: query/acl.py looks every cited entry up in the ledger
    itself (each turn of a window, each state fact's source, a derived entry's whole lineage)
    and drops anything the asker may not see or that an erasure names (a store filter bug must
    not become a leak). ``ctx.acl_dropped`` counts the drops; each is logged."""

    report = check_context(ctx, ledger)
    ctx.acl_dropped = report.dropped
    recorder.add(
        "filter", "visibility", entry_ids=[v["item"] for v in report.violations if "item" in v],
        state_facts=report.dropped_facts, conflicts=report.dropped_conflicts, skills=report.dropped_skills,
    )  # fmt: skip

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

See docs/context.md.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from claims.extractors import active_extractor_key
from claims.store import extractor_dir
from ledger import Ledger, shared_reader
from memc.home import MemcHome
from memc.watermark import read_watermark
from query import current
from query.acl import check_context
from query.asking import Goal
from query.config import QueryConfig
from query.context import Context
from query.facts import state_facts, state_source
from query.log import record_compile
from query.pack import pack
from query.retrieve import retrieve
from query.staleness import assess
from views.profile import logged_entities


def view_watermarks(home: MemcHome) -> dict[str, int | None]:
    dirs = {
        "claims": extractor_dir(home.claims, active_extractor_key()),  # the claims dbt folds, too
        "state": home.warehouse,
        "evidence_index": home.vectors,
        "entity_graph": home.graph,
    }
    return {name: (read_watermark(d) or {}).get("watermark") for name, d in dirs.items()}


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
) -> Context:
    """Compile the context for one question and one asker.

    ``as_of`` asks what held at a valid time, ``known_at`` what memc knew at a transaction time
    (both default to now: the current fold). ``goal`` (a text, or a Goal with entities and
    predicates) is the agent's current task: it shapes which facts and evidence rank first.
    ``uncolored`` leaves out every fact about the asker (query/asking.py). Raises
    StaleViewError when a view must fail closed."""
    started = time.perf_counter()
    home = home or MemcHome.resolve()
    config = config or QueryConfig()
    if budget_tokens is not None:
        config = config.model_copy(update={"budget_tokens": budget_tokens})
    ledger = shared_reader(home.ledger)
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
    )
    wanted = Goal.of(goal)
    ctx.goal = wanted.to_dict() if wanted else None
    ctx.staleness, erased = assess(ledger, head, ctx.watermarks, config.staleness)
    patch = None
    if ctx.staleness.get("evidence_index", {}).get("decision") == "patched":
        patch = (ctx.watermarks.get("evidence_index") or 0, head)
    # State first: the facts the question asks for are keys to their evidence (query/current.py).
    ctx.state, ctx.conflicts = state_facts(home, question, asker, scope, config, as_of=as_of, known_at=known_at, goal=wanted, uncolored=uncolored)
    fold = current.plan(home, ctx.state, question, ctx) if config.state_weight else current.NO_PLAN
    ctx.items, window = retrieve(
        home, question, asker, scope, config, embedder, ledger=ledger, patch=patch, when=(as_of, known_at), keys=fold.keys,
        goal=wanted.text if wanted else None,
    )  # fmt: skip
    ctx.time_window = window.to_dict() if window else None
    current.order(ctx, fold)
    _exclude(ctx, set(erased))
    _recheck_visibility(ctx, ledger)
    pack(ctx, config.budget_tokens, config.state_share, config.relevance_floor)
    ctx.latency_ms = round((time.perf_counter() - started) * 1000, 2)

    record_compile(
        home,
        {
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
            },
            "items": len(ctx.items),
            # Which entries the context showed (ids, never text): the query profile's evidence
            # usage, from which decay counts an entry's age (query/retrieve.py decay()).
            "shown": sorted({e for it in ctx.items for e in (it.entry_ids or [it.entry_id])} | {f.source_entry_id for f in ctx.state if f.source_entry_id}),
            "state_facts": len(ctx.state),
            "tokens": ctx.tokens,
            "latency_ms": ctx.latency_ms,
            "acl_dropped": ctx.acl_dropped,
            "watermarks": ctx.watermarks,
            "ledger_head": head,
        },
    )
    return ctx


def _exclude(ctx: "Context", erased: set[str]) -> None:
    """Drop everything citing an entry an erasure names, before that erasure is purged."""
    if not erased:
        return
    ctx.items = [it for it in ctx.items if not erased.intersection(it.entry_ids or [it.entry_id])]
    ctx.state = [f for f in ctx.state if f.source_entry_id not in erased]
    ctx.conflicts = [c for c in ctx.conflicts if not erased.intersection(c.get("source_entry_ids", []))]


def _recheck_visibility(ctx: Context, ledger: Ledger) -> None:
    """Independent of the store filters: query/acl.py looks every cited entry up in the ledger
    itself (each turn of a window, each state fact's source, a derived entry's whole lineage)
    and drops anything the asker may not see or that an erasure names (a store filter bug must
    not become a leak). ``ctx.acl_dropped`` counts the drops; each is logged."""

    ctx.acl_dropped = check_context(ctx, ledger).dropped

"""compile_context: for one question and one asker, a bounded context with provenance.

Staleness first (query/staleness.py), then retrieval from the evidence index by full text and
vectors, plus the time-window route when the question names a window (query/timewindow.py) and
the graph route when it names someone with typed relations; the routes are fused by weighted
reciprocal rank, shown with their conversation windows, near-duplicates folded. State facts and
conflicts come from the fold (or an entity dossier, views/profile.py). Visibility is pushed into
every store query and re-checked against the ledger independently (query/acl.py); the result is
packed into the token budget and reports the watermarks every view was compiled against. See
docs/context.md.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any, Iterator

from pydantic import BaseModel, Field

from ledger import Ledger, shared_reader
from ledger.schema import RESERVED_PREFIX

from memc.filecache import cached
from memc.home import MemcHome
from memc.ids import entity_id
from memc.visibility import may_see
from memc.watermark import read_watermark
from query.log import record_compile
from query.timewindow import TimeWindow, question_window
from views.marts import ENTITIES, GRAPH_RELATIONS, STATE_CURRENT, mart_path, read_mart
from query.staleness import DEFAULT_POLICIES, StaleViewError, ViewPolicy, assess

log = logging.getLogger(__name__)

# What the evidence routes rank: the ledger's own text (claims rows in the same index are ranked
# by their own route).
EVIDENCE_KINDS = ("message", "document", "event", "observation", "correction")


class QueryConfig(BaseModel):
    """How much each route retrieves, how they are fused, and how much context is packed."""

    k: int = Field(default=10, ge=1, le=200)
    vector_k: int = Field(default=40, ge=1)
    fulltext_k: int = Field(default=40, ge=1)
    rrf_k: int = Field(default=60, ge=1)  # reciprocal rank fusion constant (Cormack et al.)
    max_state_facts: int = Field(default=10, ge=0)
    # Share of the budget state facts may take (facts are dense but not all relevant); on LoCoMo
    # dev a tenth of 2,000 tokens gives evidence recall@10 0.82, a quarter 0.80, all of it 0.74.
    state_share: float = Field(default=0.1, ge=0.0, le=1.0)
    budget_tokens: int = Field(default=2000, ge=50)
    staleness: dict[str, ViewPolicy] = Field(default_factory=lambda: dict(DEFAULT_POLICIES))
    # Route weights in the fusion. Full text leads: on LoCoMo dev, BM25-style full text alone
    # reaches recall@10 0.62 and MiniLM vectors 0.44; plain RRF of the two (equal weights) drops
    # to 0.58, while a 0.2 weight on vectors lifts it to 0.64.
    fulltext_weight: float = Field(default=1.0, ge=0)
    vector_weight: float = Field(default=0.2, ge=0)
    # Conversation turns before and after a hit shown with it, in the same session.
    window_before: int = Field(default=2, ge=0, le=10)
    # Tried on LoCoMo dev and dropped: 1+2 windows (recall@10 0.835 -> 0.833, multi-hop +0.02,
    # recall@5 -0.02); a penalty on repeated sessions (0.80); vector pseudo-relevance feedback
    # from the top 3 hits (0.81).
    window_after: int = Field(default=2, ge=0, le=10)
    # The graph route: evidence about the entities one typed relation (has_friend, has_relative,
    # ...) away from those the question names, for "where does Elena's friend work?". Ranking
    # the named entity's own evidence higher instead (a speaker filter) cost LoCoMo dev's
    # adversarial questions, which name the wrong person on purpose, 0.93 -> 0.73 recall@10.
    graph_weight: float = Field(default=0.5, ge=0)
    # The time-window route: evidence valid inside the window the question names ("in May
    # 2023", "last week", "before she moved"), ranked by full text and vectors within it.
    time_weight: float = Field(default=1.0, ge=0)

    @classmethod
    def preset(cls, name: str) -> "QueryConfig":
        try:
            return PRESETS[name].model_copy()
        except KeyError:
            raise ValueError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}") from None


PRESETS: dict[str, QueryConfig] = {
    "fast": QueryConfig(k=5, vector_k=15, fulltext_k=15, max_state_facts=8, budget_tokens=800, window_before=1, window_after=1),
    "balanced": QueryConfig(),
    "thorough": QueryConfig(k=20, vector_k=100, fulltext_k=100, max_state_facts=40, budget_tokens=4000),
}


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
    tokens: int = 0  # of the rendered context, counted with a real tokenizer
    latency_ms: float = 0.0
    acl_dropped: int = 0  # items and facts the independent checker (query/acl.py) dropped
    time_window: dict[str, str | None] | None = None  # the window the question named: phrase, start, end

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def header(self) -> list[str]:
        marks = ", ".join(f"{k}@{v if v is not None else 'missing'}" for k, v in self.watermarks.items())
        when = "".join(f" {k.replace('_', '-')} {v[:19]}" for k, v in (("as_of", self.as_of), ("known_at", self.known_at)) if v)
        lines = [
            f'Context for "{self.question}" as {self.asker}' + (f" in scope {self.scope}" if self.scope else "") + when,
            f"ledger head {self.ledger_head}; views {marks}",
        ]
        if self.time_window:
            w = self.time_window
            lines.append(f"time window \"{w['phrase']}\": {(w['start'] or '-')[:10]} .. {(w['end'] or '-')[:10]}")
        behind = [f"{v} {s['decision']} ({s['lag_entries']} entries behind)" for v, s in self.staleness.items() if s.get("decision") not in (None, "fresh")]
        if behind:
            lines.append("staleness: " + "; ".join(behind))
        return lines

    def render(self) -> str:
        lines = self.header()
        if self.state:
            lines += ["", "What holds now:" if not (self.as_of or self.known_at) else "What held then:", *(_state_line(f, self.asker) for f in self.state)]
        if self.conflicts:
            lines += ["", "Conflicts (sources disagree; both sides kept):"]
            for c in self.conflicts:
                sides = " vs ".join(
                    f"{s['object']} ({s['source_ref'] or '-'} {s['source_entry_id']}{_via(s.get('ingested_by'), self.asker)})" for s in c["sides"]
                )
                lines.append(f"  {c['subject']} {c['predicate']} at {c['valid_at'][:10]}: {sides}")
        lines.append("")
        lines.append("Evidence:" if self.items else "Evidence: none visible to this asker.")
        for i, it in enumerate(self.items, 1):
            lines += _item_lines(i, it, self.asker)
        return "\n".join(lines)


def _via(writer: str | None, asker: str) -> str:
    """Who wrote an entry, when it is another principal: its actor and source ref are then that
    principal's claim, and the reader must be able to tell (docs/security.md). The home's own
    writers (``memc:cli``, ``memc:inbox``, producers) and the asker's own writes go unsaid, so
    the common case costs no tokens."""
    return f" via {writer}" if writer and writer != asker and not writer.startswith(RESERVED_PREFIX) else ""


def _state_line(f: StateFact, asker: str) -> str:
    until = f" until {f.valid_to[:10]}" if f.valid_to else ""
    return (
        f"  {f.subject} {f.predicate} {f.object}  (since {f.valid_from[:10]}{until}; "
        f"source {f.source_ref or '-'} {f.source_entry_id}{_via(f.source_ingested_by, asker)}: \"{f.quote}\")"
    )


def _item_lines(i: int, it: ContextItem, asker: str) -> list[str]:
    """Lean on purpose: every token here is one the agent's budget does not spend on evidence.
    Routes, scores and ledger entry ids are in the JSON form; the text keeps the time and cites
    each turn by its source ref (what a reader knows it by), or by its entry id when it has none.
    An entry id costs ~12 tokens: left out where a ref cites the turn, 2,000 tokens hold about
    one item more (LoCoMo dev recall@10 0.842 -> 0.855, multi-hop 0.528 -> 0.548)."""
    head = f"  {i:>2}. {it.valid_at[:10]}"
    writers = it.ingested_by or [None] * max(1, len(it.entry_ids))
    if len(it.entry_ids) <= 1:
        return [f"{head} [{_cite(it.source_ref, it.entry_id)}{_via(writers[0], asker)}]", f"      {_one_line(it.text, 600)}"]
    # a window: one line per turn, the hit marked
    return [head] + [
        f"    {'>' if eid == it.entry_id else ' '} [{_cite(ref, eid)}{_via(by, asker)}] {_one_line(line, 600)}"
        for ref, eid, by, line in zip(it.source_refs, it.entry_ids, writers, it.text.split("\n"))
    ]


def _cite(source_ref: str | None, entry_id: str) -> str:
    return source_ref or f"entry {entry_id}"


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _iso(v: Any) -> str:
    return v.isoformat() if isinstance(v, datetime) else str(v)


def view_watermarks(home: MemcHome) -> dict[str, int | None]:
    from claims.extractors import active_extractor_key
    from claims.store import extractor_dir

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
) -> Context:
    """Compile the context for one question and one asker.

    ``as_of`` asks what held at a valid time, ``known_at`` what memc knew at a transaction time
    (both default to now: the current fold). Raises StaleViewError when a view must fail closed."""
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
    )
    ctx.staleness, erased = assess(ledger, head, ctx.watermarks, config.staleness)
    patch = None
    if ctx.staleness.get("evidence_index", {}).get("decision") == "patched":
        patch = (ctx.watermarks.get("evidence_index") or 0, head)
    ctx.items, window = _retrieve(home, question, asker, scope, config, embedder, ledger=ledger, patch=patch, when=(as_of, known_at))
    ctx.time_window = window.to_dict() if window else None
    ctx.state, ctx.conflicts = _state_facts(home, question, asker, scope, config, as_of=as_of, known_at=known_at)
    _exclude(ctx, set(erased))
    _recheck_visibility(ctx, ledger)
    _pack(ctx, config.budget_tokens, config.state_share)
    ctx.latency_ms = round((time.perf_counter() - started) * 1000, 2)
    from views.profile import logged_entities

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
            },
            "items": len(ctx.items),
            "state_facts": len(ctx.state),
            "tokens": ctx.tokens,
            "latency_ms": ctx.latency_ms,
            "acl_dropped": ctx.acl_dropped,
            "watermarks": ctx.watermarks,
            "ledger_head": head,
        },
    )
    return ctx


# Stands for the question's embedding in a route's search arguments until it is computed.
_EMBEDDING = object()
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _route_pool() -> ThreadPoolExecutor:
    """The threads the routes of every compile in this process run on (created on first use;
    a route's search is a leaf task, so compiles sharing the pool never wait on each other's)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memc-route")
        return _POOL


def _within_time(row: dict[str, Any], when: tuple[datetime | None, datetime | None]) -> bool:
    """A time-travel ask sees only evidence valid by ``as_of`` and recorded by ``known_at``."""
    as_of, known_at = when
    return (as_of is None or row["valid_at"] <= as_of) and (known_at is None or row["recorded_at"] <= known_at)


def _exclude(ctx: "Context", erased: set[str]) -> None:
    """Drop everything citing an entry an erasure names, before that erasure is purged."""
    if not erased:
        return
    ctx.items = [it for it in ctx.items if not erased.intersection(it.entry_ids or [it.entry_id])]
    ctx.state = [f for f in ctx.state if f.source_entry_id not in erased]
    ctx.conflicts = [c for c in ctx.conflicts if not erased.intersection(c.get("source_entry_ids", []))]


def _pack(ctx: Context, budget: int, state_share: float) -> None:
    """Keep the state facts, then the evidence items, that fit the token budget, in rank order.
    An item whose window does not fit is shown with a narrower one (down to the hit alone)
    rather than dropped: on LoCoMo dev this packs 9 items into 2,000 tokens instead of 8, and
    lifts evidence recall@10 0.835 -> 0.842 (multi-hop 0.500 -> 0.528)."""
    from query.tokens import count_tokens

    # Fixed lines (header, section titles) first; then each line as it would be rendered.
    used = count_tokens("\n".join([*ctx.header(), "", "What holds now:", "", "Evidence:"]))
    kept_state, kept_items = [], []
    # Facts are dense but not all relevant: they may take at most a share of the budget, so the
    # evidence always has room.
    state_budget = used + int(budget * state_share)
    for f in ctx.state:
        cost = count_tokens(_state_line(f, ctx.asker))
        if used + cost > min(budget, state_budget):
            break
        kept_state.append(f)
        used += cost
    for it in ctx.items:
        for form in _narrower(it):
            cost = count_tokens("\n".join(_item_lines(len(kept_items) + 1, form, ctx.asker)))
            if used + cost <= budget:
                kept_items.append(form)
                used += cost
                break
    ctx.state, ctx.items = kept_state, kept_items
    ctx.tokens = count_tokens(ctx.render())


def _narrower(it: ContextItem) -> Iterator[ContextItem]:
    """The item, then its window narrowed a turn at a time down to the hit alone: the turn before
    goes first (the reply after a hit more often holds the answer than the line before it)."""
    yield it
    lines = it.text.split("\n")
    if len(it.entry_ids) <= 1 or it.entry_id not in it.entry_ids or len(lines) != len(it.entry_ids):
        return
    hit = it.entry_ids.index(it.entry_id)
    before, after = hit, len(it.entry_ids) - hit - 1
    while before or after:
        if before >= after and before:
            before -= 1
        else:
            after -= 1
        lo, hi = hit - before, hit + after + 1
        writers = it.ingested_by[lo:hi] if len(it.ingested_by) == len(it.entry_ids) else []
        yield replace(it, text="\n".join(lines[lo:hi]), source_refs=it.source_refs[lo:hi], entry_ids=it.entry_ids[lo:hi], ingested_by=writers)


def _retrieve(
    home: MemcHome,
    question: str,
    asker: str,
    scope: str | None,
    config: QueryConfig,
    embedder: Any,
    *,
    ledger: Ledger,
    patch: tuple[int, int] | None = None,
    when: tuple[datetime | None, datetime | None] = (None, None),
) -> tuple[list[ContextItem], TimeWindow | None]:
    """The evidence items, best first, and the time window the question named (if any)."""
    from views.vectors import LanceVectorStore

    named = _named_entities(home, question, asker, scope)
    window = question_window(question, anchor=when[0], event_time=_event_lookup(home, asker, scope, named))
    if not home.vectors.exists() and patch is None:
        return [], window

    if embedder is None:
        from views.embedder import Embedder

        embedder = Embedder()
    store = LanceVectorStore(str(home.vectors))
    principals = [asker]
    model_version = getattr(embedder, "model_version", None)
    stores = [store] + ([_tail_store(ledger, patch, embedder)] if patch else [])
    # The routes run concurrently: LanceDB's searches and torch release the GIL, so the question
    # is embedded while the full-text routes run, and the vector routes follow the embedding. At
    # 100k entries on two cores, with the one torch thread the servers use, compile p50 85 ->
    # ~70 ms and p95 112 -> ~93 ms (docs/benchmarks.md).
    pool = _route_pool()
    embedding = pool.submit(lambda: embedder.encode([question])[0]) if config.vector_weight else None
    # Sub-routes ("family/how"): each ranks on its own and counts once per entry in the fusion.
    plan: dict[str, tuple[float, dict[str, Any]]] = {
        "fulltext": (config.fulltext_weight, {"text": question, "k": config.fulltext_k}),
        "vector": (config.vector_weight, {"vector": _EMBEDDING, "k": config.vector_k}),
    }
    if window is not None and config.time_weight:
        for how, (w, kw) in list(plan.items()):
            plan[f"time/{how}"] = (w * config.time_weight, {**kw, "valid_between": window.bounds()})
    related = _related_entities(home, named, asker, scope) if config.graph_weight else []
    if related:
        for how, (w, kw) in list(plan.items()):
            if "/" not in how:
                plan[f"graph/{how}"] = (w * config.graph_weight, {**kw, "entity_ids": related})

    def search(kw: dict[str, Any]) -> list[dict[str, Any]]:
        # Each store ranks on its own; the patch store's hits interleave by score within a route.
        hits = [
            h
            for st in stores
            for h in st.search(principals=principals, scope=scope, kinds=EVIDENCE_KINDS, model_version=model_version, **kw)
            if _within_time(h, when)
        ]
        if patch:
            hits.sort(key=lambda h: -(h.get("score") or 0.0))
        return hits

    wanted = {route: kw for route, (weight, kw) in plan.items() if weight}
    running = {route: pool.submit(search, kw) for route, kw in wanted.items() if kw.get("vector") is not _EMBEDDING}
    if embedding is not None:
        vector = embedding.result()
        running |= {route: pool.submit(search, {**kw, "vector": vector}) for route, kw in wanted.items() if kw.get("vector") is _EMBEDDING}
    routes = {route: running[route].result() for route in wanted}  # in plan order: the fusion's tie order
    fused: dict[str, dict[str, Any]] = {}
    for route, hits in routes.items():
        for rank, hit in enumerate(hits):
            slot = fused.setdefault(hit["entry_id"], {"hit": hit, "score": 0.0, "routes": []})
            if route in slot["routes"]:
                continue  # another chunk of the same entry already counted on this route
            slot["score"] += plan[route][0] / (config.rrf_k + rank + 1)
            slot["routes"].append(route)
    ranked = sorted(fused.values(), key=lambda s: (-s["score"], s["hit"]["entry_id"]))
    windows = _session_windows(store, ranked[: config.k * 3], principals, scope, config, when)

    items: list[ContextItem] = []
    covered: set[str] = set()
    shown: list[tuple[str, ContextItem]] = []  # normalised text of each kept item
    stretches: list[list[dict[str, Any]]] = []  # the turns each item shows
    for s in ranked:
        hit = s["hit"]
        if hit["entry_id"] in covered:
            continue  # already shown inside an earlier item's window
        text = hit.get("text") or ""
        if hit.get("actor") and text.startswith(f"{hit['actor']}: "):
            text = text[len(hit["actor"]) + 2 :]  # the index prefixes the speaker (views/evidence.py)
        said = _normalised(text)
        twin = next((it for seen, it in shown if _same_words(said, seen)), None)
        if twin is not None:
            # The same words from another source (a forwarded mail, a pasted note): named on
            # the item that shows them instead of taking a second slot. Disagreeing sources
            # never match (their words differ), so conflicts stay side by side.
            twin.duplicates.append(hit["entry_id"])
            covered.add(hit["entry_id"])
            continue
        # the hit with its neighbours, less the turns an earlier item already shows
        turns = [t for t in windows.get(hit["entry_id"]) or [hit] if t["entry_id"] not in covered]
        covered.update(t["entry_id"] for t in turns)
        joined = _join_stretch(items, stretches, turns, limit=2 * (config.window_before + config.window_after + 1))
        if joined is not None:
            joined.routes = sorted(set(joined.routes) | {r.split("/")[0] for r in s["routes"]})
            shown = [(_normalised(it.text) if it is joined else seen, it) for seen, it in shown]
            continue
        items.append(
            _set_turns(
                ContextItem(
                    entry_id=hit["entry_id"],
                    source_ref=hit.get("source_ref"),
                    scope=hit["scope"],
                    kind=hit["kind"],
                    actor=hit.get("actor"),
                    text="",
                    valid_at=_iso(hit["valid_at"]),
                    recorded_at=_iso(hit["recorded_at"]),
                    routes=sorted({r.split("/")[0] for r in s["routes"]}),
                    score=round(s["score"], 6),
                ),
                turns,
            )
        )
        stretches.append(turns)
        shown.append((_normalised(items[-1].text), items[-1]))
        if len(items) == config.k:
            break
    return items, window


def _set_turns(item: ContextItem, turns: list[dict[str, Any]]) -> ContextItem:
    # One line per turn (a turn's own line breaks become spaces), so that the rendering and the
    # packer can tell the turns of a window apart.
    item.text = turns[0]["text"] if len(turns) == 1 else "\n".join(" ".join(t["text"].split()) for t in turns)
    item.source_refs = [t.get("source_ref") for t in turns]
    item.entry_ids = [t["entry_id"] for t in turns]
    return item


def _join_stretch(items: list[ContextItem], stretches: list[list[dict[str, Any]]], turns: list[dict[str, Any]], *, limit: int) -> ContextItem | None:
    """The earlier item whose turns run on into ``turns`` (the same session, overlapping or next to
    them), now showing both as one stretch of the conversation, or None. Two hits a few turns
    apart then take one item slot, not two, while the stretch stays under ``limit`` turns: on
    LoCoMo dev recall@5 0.780 -> 0.803, recall@10 0.855 -> 0.856."""
    if not turns or "turn_no" not in turns[0]:
        return None  # not a conversation turn
    lo, hi = turns[0]["turn_no"], turns[-1]["turn_no"]
    for item, shown in zip(items, stretches):
        if (
            "turn_no" in shown[0]
            and shown[0].get("session_id") == turns[0].get("session_id")
            and lo <= shown[-1]["turn_no"] + 1
            and hi >= shown[0]["turn_no"] - 1
            and len(shown) + len(turns) <= limit
        ):
            shown[:] = sorted(shown + turns, key=lambda t: t["turn_no"])
            return _set_turns(item, shown)
    return None


# Containment counts only for texts this long: "Yes, sounds good." occurs in many a turn.
_MIN_DUPLICATE_WORDS = 6


def _same_words(a: str, b: str) -> bool:
    """One normalised text inside the other (a forward quoting a note, a note pasted into a mail)."""
    if not a or not b:
        return False
    if a == b:
        return True
    shorter, longer = (a, b) if len(a) < len(b) else (b, a)
    return shorter.count(" ") - 1 >= _MIN_DUPLICATE_WORDS and shorter in longer


def _normalised(text: str) -> str:
    """Lower-case words joined by single spaces, with a space at each end, so that ``a in b``
    means the words of ``a`` occur in ``b`` in a row."""
    words = re.findall(r"\w+", text.casefold())
    return f" {' '.join(words)} " if words else ""


_NAME = re.compile(r"\b[A-Z][\w-]*(?:'[\w-]+)*")


def _entity_rows(home: MemcHome) -> list[dict[str, Any]]:
    """The entities mart, read once per version of the file in a warm process."""
    path = mart_path(home, ENTITIES)
    cols = ["entity_id", "scope", "name", "aliases", "visibility"]
    rows = cached("entity_rows", [path], lambda: read_mart(path, columns=cols).to_pylist())
    return rows or []


def _named_entities(home: MemcHome, question: str, asker: str, scope: str | None) -> dict[str, str]:
    """Entity id -> the name the question calls it by, for the entities the question names.

    Ids are content-addressed (memc.ids.entity_id over scope and name), so a capitalised word
    maps to an id without reading any row; aliases entity resolution found ("Lena" -> Elena)
    come from the entities this asker may see. The ids only narrow searches that keep their
    visibility prefilter, so a name that is nobody's (or someone this asker may not see) adds
    nothing. An entity row derived from private evidence is visible only to who may see all of
    it, which is why names are not looked up only there."""
    rows = _entity_rows(home)
    scopes = [scope] if scope is not None else sorted({r["scope"] for r in rows})
    out: dict[str, str] = {}
    for word in _NAME.findall(question):
        name = re.sub(r"'s$", "", word)
        for sc in scopes:
            out.setdefault(entity_id(sc, name), name)
    words = set(re.findall(r"[\w'-]+", question.casefold()))
    words |= {w[:-2] for w in words if w.endswith("'s")}
    for r in rows:
        if (scope is None or r["scope"] == scope) and may_see(asker, r["visibility"]):
            said = [a for a in [r["name"], *(r["aliases"] or [])] if a.casefold() in words]
            if said:
                out[r["entity_id"]] = said[0]
    return out


def _related_entities(home: MemcHome, named: dict[str, str], asker: str, scope: str | None) -> list[str]:
    """Entities one typed relation away from the known entities the question names, walked in
    the graph view (GraphStore.neighbours, visibility pushed into the walk). ``mentions`` edges
    and who-talks-to-whom are not relations of this kind: in a conversation everyone is one
    such hop from everyone. Asked only when the graph has a typed relation at all (read from
    the graph_relations mart, cached per build), since opening the graph costs ~30 ms."""
    known = {r["entity_id"] for r in _entity_rows(home)}
    seeds = sorted(set(named) & known)
    if not seeds:
        return []
    from views.build import graph_store

    path = mart_path(home, GRAPH_RELATIONS)
    typed = cached("typed_relations", [path], lambda: bool(set(read_mart(path, columns=["predicate"]).column("predicate").to_pylist()) - {"mentions", None}))
    if not typed:
        return []

    try:
        # keep_open=False: Kùzu lets one process hold the file, and Dagster runs open it too
        with graph_store(home, keep_open=False) as graph:
            found = graph.neighbours(seeds, depth=1, scope=scope, principals=[asker])
    except RuntimeError as exc:  # the file is locked by a build: answer without the route
        log.warning("graph route skipped: %s", exc)
        return []
    return sorted(n["entity_id"] for n in found if set(n["relations"]) - {"mentions"})


def _holds_for(r: dict[str, Any], asker: str, scope: str | None) -> bool:
    """A state_current row is a current fact for this asker: in scope, visible to it, and not
    closed by a later claim or a retraction it may see."""
    return (
        (scope is None or r["scope"] == scope)
        and may_see(asker, r["visibility"])
        and asker not in (r.get("closed_for") or ())
    )


def _event_lookup(home: MemcHome, asker: str, scope: str | None, named: dict[str, str]):
    """For "before she moved": when the newest fact of ``predicate`` about the person began, from
    the current fold as this asker sees it (the person named in the phrase, else the one person
    of the question with such a fact; none when that is ambiguous)."""

    def lookup(predicate: str, names: list[str]) -> datetime | None:
        from views.profile import state_index

        index = state_index(home)
        if index is None:
            return None
        wanted = {n.casefold() for n in (names or named.values())}
        rows, _ = index.rows_for(wanted) or ([], [])
        starts: dict[str, datetime] = {}
        for r in rows:
            if _holds_for(r, asker, scope) and r["predicate"] == predicate and (r["subject"] or "").casefold() in wanted:
                key = r["subject_id"]
                starts[key] = max(starts.get(key, r["valid_from"]), r["valid_from"])
        return next(iter(starts.values())) if len(starts) == 1 else None

    return lookup


# Patched tails by (ledger directory, patch range, embedding model, ledger signature): between
# builds every compile patches the same tail, and embedding it costs 117 ms for 12 entries, 844
# ms for 100. The signature changes with every append and every erasure's rewrite.
_TAIL_STORES: OrderedDict[tuple, Any] = OrderedDict()
_TAIL_STORES_MAX = 4
_TAIL_LOCK = threading.Lock()


def _tail_store(ledger: Ledger, patch: tuple[int, int], embedder: Any):
    """The ledger entries the evidence index has not compiled yet, embedded and indexed in an
    in-memory LanceDB (the same engine and filters as the real index): a fact ingested a second
    ago is answerable before the next build. Bounded by the staleness policy's lag limit; kept
    for the next compiles while the ledger and the index stay as they are."""
    from views.evidence import evidence_rows
    from views.vectors import LanceVectorStore

    since, until = patch
    key = (str(ledger.root), since, until, getattr(embedder, "model_version", None), id(embedder), ledger.signature())
    with _TAIL_LOCK:
        store = _TAIL_STORES.get(key)
        if store is not None:
            _TAIL_STORES.move_to_end(key)
            return store
    store = LanceVectorStore("memory://")
    store.sync(evidence_rows(ledger.iter_entries(since_seq=since, until_seq=until)), embedder)
    with _TAIL_LOCK:
        _TAIL_STORES[key] = store
        while len(_TAIL_STORES) > _TAIL_STORES_MAX:
            _TAIL_STORES.popitem(last=False)
    return store


def _session_windows(
    store,
    ranked: list[dict[str, Any]],
    principals: list[str],
    scope: str | None,
    config: QueryConfig,
    when: tuple[datetime | None, datetime | None] = (None, None),
) -> dict[str, list[dict[str, Any]]]:
    """For conversation turns, the turns around each hit in the same session (``window_before``
    and ``window_after``): the answer to a question is often the reply to the hit, or the line
    that set it up. On LoCoMo dev, windows of 2+2 turns lift evidence recall@10 from 0.64 to 0.86
    for about 5x the tokens per item. The neighbours are fetched under the same visibility filter."""
    if not (config.window_before or config.window_after):
        return {}
    sessions = sorted({s["hit"]["session_id"] for s in ranked if s["hit"].get("kind") == "message" and s["hit"].get("session_id")})
    if not sessions:
        return {}
    by_session: dict[str, list[dict[str, Any]]] = {}
    for row in store.session_rows(session_ids=sessions, principals=principals, scope=scope, kinds=("message",)):
        if not _within_time(row, when):
            continue
        by_session.setdefault(row["session_id"], []).append(row)
    out: dict[str, list[dict[str, Any]]] = {}
    for turns in by_session.values():
        turns.sort(key=lambda r: (r["valid_at"], r["seq"], r["id"]))
        # one row per entry (a long message may have several chunks): keep the first chunk
        seen, unique = set(), []
        for r in turns:
            if r["entry_id"] not in seen:
                seen.add(r["entry_id"])
                unique.append(r)
        for i, r in enumerate(unique):
            r["turn_no"] = i  # its place in the session as this asker sees it
        for i, r in enumerate(unique):
            out[r["entry_id"]] = unique[max(0, i - config.window_before) : i + config.window_after + 1]
    return out


def _state_facts(
    home: MemcHome,
    question: str,
    asker: str,
    scope: str | None,
    config: QueryConfig,
    *,
    as_of: datetime | None = None,
    known_at: datetime | None = None,
) -> tuple[list[StateFact], list[dict[str, Any]]]:
    """What holds for the entities the question names, for this asker, and the conflicts about
    them (both sides, each with its source). The current fold by default; with ``as_of`` or
    ``known_at``, the bi-temporal query over state_history instead.

    The rows come from the entity dossiers (views/profile.py) when they hold the state build the
    marts hold and every subject the question can name has one; else from the index of
    state_current by subject (``views.profile.state_index``, built once per version of the marts
    in a warm process). Either way the rows about the subjects the question's words can name, in
    mart order, are filtered below, so the answer is the same (tests/test_profile.py);
    ``state_source()`` says which was read."""
    from views.profile import STATE_SOURCE

    path = mart_path(home, STATE_CURRENT)
    if not path.exists() or config.max_state_facts == 0:
        STATE_SOURCE.set("none")
        return [], []
    words = set(re.findall(r"[\w'-]+", question.casefold()))
    source, conflict_rows = _state_rows(home, words)
    rows = [r for r in source if _holds_for(r, asker, scope)]
    mentioned = {r["subject_id"] for r in rows if r["subject"].casefold() in words}
    if as_of is not None or known_at is not None:
        return _state_as_of(home, sorted(mentioned), asker, scope, config, as_of, known_at)
    newest: dict[tuple[str, str, str], dict[str, Any]] = {}
    facts = []
    for r in rows:
        if r["subject_id"] not in mentioned:
            continue
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
    facts = _rank_facts([*newest.values(), *facts], words)
    conflicts = [
        _conflict(c)
        for c in conflict_rows
        if c.get("subject_id") in mentioned
        # both sides must be visible: a conflict shows each side's text
        and may_see(asker, c["visibility_a"])
        and may_see(asker, c["visibility_b"])
    ]
    return [_fact(r) for r in facts[: config.max_state_facts]], conflicts


def _state_rows(home: MemcHome, words: set[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(state rows, conflicts rows) about every subject ``words`` can name, in mart order: from the
    current dossiers when they cover the question, else from the index of the marts. Records
    which in ``state_source()``."""
    from views.profile import STATE_SOURCE, load_dossiers, state_index

    dossiers = load_dossiers(home)
    hit = dossiers.rows_for(words) if dossiers is not None else None
    if hit is not None:
        STATE_SOURCE.set("dossier")
        return hit
    STATE_SOURCE.set("state_current")
    index = state_index(home)
    return (index.rows_for(words) if index is not None else None) or ([], [])


def state_source() -> str:
    """Where the latest ``_state_facts`` in this thread (or task) read state from: "dossier",
    "state_current" or "none" (no state mart, or no state facts wanted). For the query log's plan."""
    from views.profile import STATE_SOURCE

    return STATE_SOURCE.get()


def _rank_facts(rows: list[dict[str, Any]], words: set[str]) -> list[dict[str, Any]]:
    """Facts about the entities the question names, those sharing words with the question first
    (a question about Elena's job wants works_at before likes), then the most recent."""

    def overlap(r: dict[str, Any]) -> int:
        said = set(re.findall(r"[\w'-]+", f"{r['predicate'].replace('_', ' ')} {r['object']} {r['quote']}".casefold()))
        return len((said & words) - _STOP)

    return sorted(rows, key=lambda r: (-overlap(r), -r["valid_from"].timestamp(), r["claim_id"]))


# Words that say nothing about which fact is wanted.
_STOP = frozenset(
    "a an the i me my you your he she her his it its we our they their is are was were be been do does did "
    "to of in on at for with and or what when where who whom which why how now then this that".split()
)


def _fact(r: dict[str, Any]) -> StateFact:
    return StateFact(
        subject=r["subject"],
        predicate=r["predicate"],
        object=r["object"],
        valid_from=_iso(r["valid_from"]),
        valid_to=_iso(r["valid_to"]) if r.get("valid_to") else None,
        source_entry_id=r["source_entry_id"],
        source_ref=r["source_ref"],
        quote=r["quote"],
        scope=r["scope"],
    )


def _state_as_of(home, subjects, asker, scope, config, as_of, known_at) -> tuple[list[StateFact], list[dict[str, Any]]]:
    from datetime import timezone

    from query.state import StateQueryError, state_for_entity

    now = datetime.now(timezone.utc)
    facts, conflicts = [], []
    for subject_id in subjects:
        try:
            res = state_for_entity(home.marts, subject_id, principal=asker, as_of=as_of or now, known_at=known_at or now, scope=scope)
        except StateQueryError:
            return [], []  # the history marts are not built yet
        facts += res["facts"]
        conflicts += [_conflict(c) for c in res["conflicts"]]
    return [_fact(r) for r in facts[: config.max_state_facts]], conflicts


def _conflict(c: dict[str, Any]) -> dict[str, Any]:
    return {
        "subject": c["subject"],
        "predicate": c["predicate"],
        "valid_at": _iso(c["valid_at"]),
        "resolution": c["resolution"],
        "sides": [
            {
                "object": c[f"object_{side}"],
                "source_entry_id": c[f"source_entry_id_{side}"],
                "source_ref": c[f"source_ref_{side}"],
                "quote": c[f"quote_{side}"],
                "recorded_at": _iso(c[f"recorded_at_{side}"]),
            }
            for side in ("a", "b")
        ],
        "source_entry_ids": [c["source_entry_id_a"], c["source_entry_id_b"]],
    }


def _recheck_visibility(ctx: Context, ledger: Ledger) -> None:
    """Independent of the store filters: query/acl.py looks every cited entry up in the ledger
    itself (each turn of a window, each state fact's source, a derived entry's whole lineage)
    and drops anything the asker may not see or that an erasure names (a store filter bug must
    not become a leak). ``ctx.acl_dropped`` counts the drops; each is logged."""
    from query.acl import check_context

    ctx.acl_dropped = check_context(ctx, ledger).dropped

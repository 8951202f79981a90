"""The evidence routes and their fusion: full text and vectors over the evidence index, the
time-window route when the question names a window (query/timewindow.py), the graph route when
it names someone with typed relations. Routes run concurrently on a small pool and are fused by
weighted reciprocal rank (with decay when set); conversation hits are shown with their windows,
near-duplicates fold, and top hits may bring their memory unit's turns (query/units.py).
While the index lags the ledger, its tail is patched from the ledger.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any

from ledger import Ledger
from memc.home import MemcHome
from query.config import EVIDENCE_KINDS, QueryConfig
from query.context import ContextItem, iso
from query.entities import named_entities, related_entities
from query.facts import event_lookup
from query.plan import PlanRecorder
from query.rerank import FEATURE_DEPTH, load_ranker, rerank, wants_features
from query.timewindow import TimeWindow, question_window
from query.units import with_units
from query.windows import Windows, join_stretch, later_span, later_window, said, session_windows, turn_item, within_time
from views.build import vector_store
from views.embedder_onnx import question_embedder
from views.evidence import CLAIM_KIND, ENTRY_COLUMNS, EXCHANGE_KIND, evidence_rows
from views.profile import evidence_usage
from views.units import load_units

# Stands for the question's embedding in a route's search arguments until it is computed.
EMBEDDING = object()
_POOL: ThreadPoolExecutor | None = None

_POOL_LOCK = threading.Lock()


def route_pool() -> ThreadPoolExecutor:
    """The threads the routes of every compile in this process run on (created on first use;
    a route's search is a leaf task, so compiles sharing the pool never wait on each other's)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memc-route")
        return _POOL


def embed_question(home: MemcHome, question: str, config: QueryConfig, embedder: Any, patch: tuple[int, int] | None) -> tuple[Any, Future | None]:
    """(the question embedder, the question's vector being computed on the route pool), or no
    vector when no route needs one: a compile starts it first, so that the ~7 ms of the model
    (ONNX Runtime releases the GIL) run beside the state facts, the entities and the full-text
    routes rather than before the vector routes (docs/benchmarks.md, "Tables kept open, the
    question embedded first"). An index never built loads no model."""
    if not config.vector_weight or (patch is None and not vector_store(home).built()):
        return embedder, None
    embedder = embedder if embedder is not None else question_embedder()
    return embedder, route_pool().submit(lambda: embedder.encode([question])[0])


def retrieve(
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
    keys: list[str] | None = None,
    goal: str | None = None,
    recorder: PlanRecorder | None = None,
    embedding: Future | None = None,
) -> tuple[list[ContextItem], TimeWindow | None]:
    """The evidence items, best first, and the time window the question named (if any).

    ``keys``: source entries of the state facts the question asks for (query/current.py),
    ranked in that order as the `state` route: evidence reached through the fact drawn from it.
    ``goal``: the agent's task, one more full-text route (`goal`). ``recorder``: the compile's
    plan, to which each route, the fusion, the items and the units are added as they run.
    ``embedding``: the question's vector already under way (:func:`embed_question`)."""
    recorder = recorder or PlanRecorder()

    named = named_entities(home, question, asker, scope)
    window = question_window(question, anchor=when[0], event_time=event_lookup(home, asker, scope, named))
    store = vector_store(home).pinned()
    if patch is None and not store.built():
        return [], window  # nothing to search: no model load

    if embedder is None:
        embedder = question_embedder()
    principals = [asker]
    model_version = getattr(embedder, "model_version", None)
    stores = [store] + ([tail_store(ledger, patch, embedder)] if patch else [])
    # The routes run concurrently: LanceDB's searches and torch release the GIL, so the question
    # is embedded while the full-text routes run, and the vector routes follow the embedding. At
    # 100k entries on two cores, with the one torch thread the servers use, compile p50 85 ->
    # ~70 ms and p95 112 -> ~93 ms (docs/benchmarks.md).
    pool = route_pool()
    if embedding is None:  # a caller that did not start it
        embedding = embed_question(home, question, config, embedder, patch)[1]
    # Sub-routes ("family/how"): each ranks on its own and counts once per entry in the fusion.
    plan: dict[str, tuple[float, dict[str, Any]]] = {
        "fulltext": (config.fulltext_weight, {"text": question, "k": config.fulltext_k}),
        "vector": (config.vector_weight, {"vector": EMBEDDING, "k": config.vector_k}),
    }
    if window is not None and config.time_weight:
        for how, (w, kw) in list(plan.items()):
            plan[f"time/{how}"] = (w * config.time_weight, {**kw, "valid_between": window.bounds()})
    related = related_entities(home, named, asker, scope) if config.graph_weight else []
    if related:
        for how, (w, kw) in list(plan.items()):
            if "/" not in how:
                plan[f"graph/{how}"] = (w * config.graph_weight, {**kw, "entity_ids": related})

    if config.facts_weight:
        # Facts as keys: the claim sentences of the index ("Elena works at Helio Labs (since
        # 2024-05-14)") point at the turns they were drawn from, so a question
        # reaches a turn through the fact drawn from it; the hits become their source turns below.
        for how in ("fulltext", "vector") if config.facts_fulltext else ("vector",):
            w, kw = plan[how]
            plan[f"facts/{how}"] = (w * config.facts_weight, {**kw, "kinds": (CLAIM_KIND,), "k": config.facts_k or kw["k"]})
    if keys and config.state_weight:
        plan["state"] = (config.state_weight, {"entry_ids": keys})
    if goal and goal.strip() and config.goal_weight:
        plan["goal"] = (config.goal_weight, {"text": goal, "k": config.fulltext_k})

    def search(kw: dict[str, Any]) -> list[dict[str, Any]]:
        if "entry_ids" in kw:  # the state route: the turns the asked facts were drawn from, in the facts' order
            rank = {e: i for i, e in enumerate(kw["entry_ids"])}
            rows = [r for st in stores for r in st.entry_rows(principals=principals, scope=scope, kinds=EVIDENCE_KINDS, **kw) if within_time(r, when)]
            return sorted(rows, key=lambda r: (rank[r["entry_id"]], r["id"]))
        kw = {"kinds": EVIDENCE_KINDS, **kw}
        if kw["kinds"] == EVIDENCE_KINDS and ((config.exchange_fulltext and "text" in kw) or (config.exchange_vector and "vector" in kw)):
            # Replies keyed with the question they answer (views/evidence.py exchange_rows) ranked
            # with the turns: "Lovely! Moist and tart." is found by the words of "How was the plum
            # cake?"; a key's hit stands for its reply below.
            kw["kinds"] = (*EVIDENCE_KINDS, EXCHANGE_KIND)
        # Each store ranks on its own; the patch store's hits interleave by score within a route.
        hits = [
            h
            for st in stores
            for h in st.search(principals=principals, scope=scope, model_version=model_version, **kw)
            if within_time(h, when)
        ]
        if patch:
            hits.sort(key=lambda h: -(h.get("score") or 0.0))
        if kw["kinds"] == (CLAIM_KIND,):
            hits = source_turns(hits)
        elif EXCHANGE_KIND in kw["kinds"]:
            hits = replies(hits)
        return hits

    def replies(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The route's hits with each exchange key's hit in its place as the reply it points at
        (scored by the key), the turns' own hits as they are."""
        keyed = [h for h in hits if h["kind"] == EXCHANGE_KIND]
        if not keyed:
            return hits
        turns = {t["entry_id"]: t for t in source_turns(keyed)}
        out = [h if h["kind"] != EXCHANGE_KIND else {**turns[h["entry_id"]], "score": h.get("score"), "route": h.get("route")} for h in hits
               if h["kind"] != EXCHANGE_KIND or h["entry_id"] in turns]  # fmt: skip
        return [{**h, "rank": n} for n, h in enumerate(out, 1)]

    def source_turns(claim_hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Key hits (claims, exchanges) as the turns they point at, in the keys' rank, each turn
        once, scored by its best key (the key's own row is not evidence to show)."""
        wanted = list(dict.fromkeys(h["entry_id"] for h in claim_hits))
        turns: dict[str, dict[str, Any]] = {}
        for r in store.entry_rows(entry_ids=wanted, principals=principals, scope=scope, kinds=EVIDENCE_KINDS):
            turns.setdefault(r["entry_id"], r)
        out, seen = [], set()
        for h in claim_hits:
            turn = turns.get(h["entry_id"])
            if turn is not None and h["entry_id"] not in seen and within_time(turn, when):
                seen.add(h["entry_id"])
                out.append({**turn, "score": h.get("score"), "route": h.get("route"), "rank": len(out) + 1})
        return out

    wanted = {route: kw for route, (weight, kw) in plan.items() if weight}
    running = {route: pool.submit(search, kw) for route, kw in wanted.items() if kw.get("vector") is not EMBEDDING}
    if embedding is not None:
        vector = embedding.result()
        running |= {route: pool.submit(search, {**kw, "vector": vector}) for route, kw in wanted.items() if kw.get("vector") is EMBEDDING}
    routes = {route: running[route].result() for route in wanted}  # in plan order: the fusion's tie order
    for route, hits in routes.items():
        kw = wanted[route]
        found = list(dict.fromkeys(h["entry_id"] for h in hits))  # a long entry's chunks count once
        extra = {"valid_between": [iso(t) if t else None for t in kw["valid_between"]]} if "valid_between" in kw else {}
        extra |= {"entities": len(kw["entity_ids"])} if "entity_ids" in kw else {}
        recorder.add("route", route, weight=plan[route][0], k=kw.get("k", len(kw.get("entry_ids", ()))), candidates=len(found), entry_ids=found, **extra)
    fused: dict[str, dict[str, Any]] = {}
    for route, hits in routes.items():
        # Relevance on the route's own scale (BM25, cosine): the hit's score over the route's
        # best, so "no route ranked it near its best" is a share (QueryConfig.relevance_floor).
        # Rank fusion forgets that scale: a 40th hit far below the first still adds 1/(60+40).
        best = max((h.get("score") or 0.0 for h in hits), default=0.0)
        for rank, hit in enumerate(hits):
            slot = fused.setdefault(hit["entry_id"], {"hit": hit, "score": 0.0, "routes": [], "relevance": 0.0})
            rel = (hit["score"] / best) if best > 0 and hit.get("score") is not None else 1.0  # the state route's rows: asked for
            slot["relevance"] = max(slot["relevance"], rel)
            if route in slot["routes"]:
                continue  # another chunk of the same entry already counted on this route
            slot["score"] += plan[route][0] / (config.rrf_k + rank + 1)
            slot["routes"].append(route)
            slot.setdefault("ranks", {})[route] = rank
    if config.decay_weight:
        decay(fused.values(), config.decay_half_life_days, config.decay_weight, when[0], usage=evidence_usage(home))
    ranked = sorted(fused.values(), key=lambda s: (-s["score"], s["hit"]["entry_id"]))
    recorder.add("fusion", method="weighted_rrf", rrf_k=config.rrf_k, decay=config.decay_weight, candidates=len(ranked), entry_ids=[s["hit"]["entry_id"] for s in ranked])
    # Windows for the hits an item may show with its neighbours: the first ``wide_items`` items'
    # (among the first hits) and later hits that show more than themselves (a question with its
    # reply). A later statement is shown alone, so its session is not read: at 100k entries the
    # session windows' read took 5.8 ms for 60 hits and 9.2 ms for 90 (docs/benchmarks.md). A hit
    # further down that still becomes one of the first items reads its session when it does.
    if config.ranker or wants_features():
        # The learned order (query/rerank.py): its neighbour features come from the sessions of
        # the first FEATURE_DEPTH hits (deeper hits have them only when they share such a session).
        # every hit's features look its window up: all made in the read's one take
        windows = session_windows(store, ranked[:FEATURE_DEPTH], principals, scope, config, when, look_up=[s["hit"]["entry_id"] for s in ranked])
        ranker = load_ranker(config.ranker) if config.ranker else None
        ranked = rerank(ranked, windows, named, ranker=ranker, keep=config.wide_items, rrf_k=config.rrf_k)
        if ranker is not None:
            recorder.add("rerank", ranker=ranker.name[:100], kept=min(config.wide_items, len(ranked)), entry_ids=[s["hit"]["entry_id"] for s in ranked])
    else:
        windows = Windows()
    scan = ranked[: config.k * 3]
    early = config.wide_items * 5
    wanted = [s for i, s in enumerate(scan) if s["hit"]["entry_id"] not in windows and (i < early or any(later_span(s["hit"], config)))]
    windows |= session_windows(store, wanted, principals, scope, config, when)
    scanned = {s["hit"]["entry_id"] for s in scan}

    items: list[ContextItem] = []
    covered: set[str] = set()
    shown: list[tuple[str, ContextItem]] = []  # normalised text of each kept item
    stretches: list[list[dict[str, Any]]] = []  # the turns each item shows
    considered, inside, folded, joins = 0, [], [], []  # for the plan: what became of each fused hit
    for s in ranked:
        hit = s["hit"]
        considered += 1
        if hit["entry_id"] in covered:
            inside.append(hit["entry_id"])
            continue  # already shown inside an earlier item's window
        words = normalised(said(hit))
        twin = next((it for seen, it in shown if same_words(words, seen)), None)
        if twin is not None:
            # The same words from another source (a forwarded mail, a pasted note): named on
            # the item that shows them instead of taking a second slot. Disagreeing sources
            # never match (their words differ), so conflicts stay side by side.
            twin.duplicates.append(hit["entry_id"])
            covered.add(hit["entry_id"])
            folded.append(hit["entry_id"])
            continue
        # the hit with its neighbours, less the turns an earlier item already shows; after the
        # first ``wide_items`` items, the narrower window, by whether the hit asks or states
        # (QueryConfig.wide_items, narrow_after_statement)
        around = windows.get(hit["entry_id"])
        if around is None and hit["entry_id"] in scanned and len(items) < config.wide_items:
            windows |= session_windows(store, [s], principals, scope, config, when)
            around = windows.get(hit["entry_id"])
        around = around or [hit]
        if len(items) >= config.wide_items:
            around = later_window(around, hit, config)
        turns = [t for t in around if t["entry_id"] not in covered]
        covered.update(t["entry_id"] for t in turns)
        joined = join_stretch(items, stretches, turns, limit=2 * (config.window_before + config.window_after + 1))
        if joined is not None:
            joined.routes = sorted(set(joined.routes) | {r.split("/")[0] for r in s["routes"]})
            joined.relevance = max(joined.relevance, round(s["relevance"], 4))
            shown = [(normalised(it.text) if it is joined else seen, it) for seen, it in shown]
            joins.append(hit["entry_id"])
            continue
        items.append(
            turn_item(hit, turns, routes=sorted({r.split("/")[0] for r in s["routes"]}), score=round(s["score"], 6), relevance=round(s["relevance"], 4))
        )
        stretches.append(turns)
        shown.append((normalised(items[-1].text), items[-1]))
        if len(items) == config.k:
            break
    recorder.add(
        "items", k=config.k, window=[config.window_before, config.window_after], wide_items=config.wide_items,
        narrow=[config.narrow_before, config.narrow_after, config.narrow_after_statement], considered=considered, entry_ids=[it.entry_id for it in items],
        in_windows=inside, joined=joins, duplicates=folded,
    )  # fmt: skip
    units = load_units(home) if config.unit_seeds and embedding is not None else None
    if units is not None:
        items = with_units(items, units, store, embedding.result(), principals, scope, config, when)
        added = [it for it in items if it.unit_id]
        recorder.add("units", seeds=config.unit_seeds, turns=config.unit_turns, units=[it.unit_id for it in added], entry_ids=[e for it in added for e in it.entry_ids])
    return items, window


def decay(slots, half_life_days: float, weight: float, as_of: datetime | None, *, usage: dict[str, datetime]) -> None:
    """Decay as a ranking signal: a fused hit loses up to ``weight`` of its score with age, half
    of that share after ``half_life_days`` (score x (1 - weight x (1 - 0.5^(age/half-life)))).
    Age counts from the later of when the evidence was valid and when a context last showed it
    (``usage``: the query profile's evidence usage), up to ``as_of`` or else the newest
    candidate, so a home ingested from an old archive does not decay as a whole. Only the order
    changes: an old hit still ranks, below an equally relevant recent one, and is never dropped."""
    slots = list(slots)
    if not slots:
        return
    now = as_of or max(s["hit"]["valid_at"] for s in slots)
    for s in slots:
        valid = s["hit"]["valid_at"]
        seen = max(valid, usage.get(s["hit"]["entry_id"], valid))
        age = max(0.0, (now - seen).total_seconds() / 86400)
        s["score"] *= 1.0 - weight * (1.0 - 0.5 ** (age / half_life_days))


# Containment counts only for texts this long: "Yes, sounds good." occurs in many a turn.
_MIN_DUPLICATE_WORDS = 6


def same_words(a: str, b: str) -> bool:
    """One normalised text inside the other (a forward quoting a note, a note pasted into a mail)."""
    if not a or not b:
        return False
    if a == b:
        return True
    shorter, longer = (a, b) if len(a) < len(b) else (b, a)
    return shorter.count(" ") - 1 >= _MIN_DUPLICATE_WORDS and shorter in longer


def normalised(text: str) -> str:
    """Lower-case words joined by single spaces, with a space at each end, so that ``a in b``
    means the words of ``a`` occur in ``b`` in a row."""
    words = re.findall(r"\w+", text.casefold())
    return f" {' '.join(words)} " if words else ""


# Patched tails by (ledger directory, patch range, embedding model, ledger signature): between
# builds every compile patches the same tail, and embedding it costs 117 ms for 12 entries, 844
# ms for 100. The signature changes with every append and every erasure's rewrite.
_TAIL_STORES: OrderedDict[tuple, Any] = OrderedDict()

_TAIL_STORES_MAX = 4

_TAIL_LOCK = threading.Lock()


def tail_store(ledger: Ledger, patch: tuple[int, int], embedder: Any):
    """The ledger entries the evidence index has not compiled yet, embedded and indexed in an
    in-memory LanceDB (the same engine and filters as the real index): a fact ingested a second
    ago is answerable before the next build. Bounded by the staleness policy's lag limit; kept
    for the next compiles while the ledger and the index stay as they are."""

    since, until = patch
    key = (str(ledger.root), since, until, getattr(embedder, "model_version", None), id(embedder), ledger.signature())
    with _TAIL_LOCK:
        store = _TAIL_STORES.get(key)
        if store is not None:
            _TAIL_STORES.move_to_end(key)
            return store
    store = vector_store()  # the in-memory twin
    # The tail's turns alone: a reply in it is keyed with its question (views/evidence.py
    # exchange_rows) by the next build, which reads each session whole.
    store.sync(evidence_rows(ledger.read(ENTRY_COLUMNS, since_seq=since, until_seq=until)), embedder)
    with _TAIL_LOCK:
        _TAIL_STORES[key] = store
        while len(_TAIL_STORES) > _TAIL_STORES_MAX:
            _TAIL_STORES.popitem(last=False)
    return store

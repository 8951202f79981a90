"""compile_context: for one question and one asker, a bounded context with provenance.

Walking skeleton of the context compiler: retrieve from the vector and full-text routes of the
evidence index and from the current state for entities the question names, fuse by reciprocal
rank, filter by visibility (pushed into every store query, then re-checked against the ledger
independently), and report the watermarks every view was compiled against.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import pyarrow.parquet as pq
from pydantic import BaseModel, Field

from ledger import Ledger
from memc.home import MemcHome
from memc.visibility import may_see
from memc.watermark import read_watermark

# What the evidence routes rank: the ledger's own text (claims rows in the same index are ranked
# by their own route).
EVIDENCE_KINDS = ("message", "document", "event", "observation", "correction")


class QueryConfig(BaseModel):
    """How much each route retrieves, how they are fused, and how much context is packed."""

    k: int = Field(default=10, ge=1, le=200)
    vector_k: int = Field(default=40, ge=1)
    fulltext_k: int = Field(default=40, ge=1)
    rrf_k: int = Field(default=60, ge=1)  # reciprocal rank fusion constant (Cormack et al.)
    max_state_facts: int = Field(default=20, ge=0)
    budget_tokens: int = Field(default=2000, ge=50)
    # Route weights in the fusion. Full text leads: on LoCoMo dev, BM25-style full text alone
    # reaches recall@10 0.62 and MiniLM vectors 0.44; plain RRF of the two (equal weights) drops
    # to 0.58, while a 0.2 weight on vectors lifts it to 0.64.
    fulltext_weight: float = Field(default=1.0, ge=0)
    vector_weight: float = Field(default=0.2, ge=0)
    # Conversation turns before and after a hit shown with it, in the same session.
    window_before: int = Field(default=2, ge=0, le=10)
    window_after: int = Field(default=2, ge=0, le=10)

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


@dataclass
class StateFact:
    subject: str
    predicate: str
    object: str
    valid_from: str
    source_entry_id: str
    source_ref: str | None
    quote: str
    scope: str


@dataclass
class Context:
    question: str
    asker: str
    scope: str | None
    ledger_head: int
    watermarks: dict[str, int | None]
    items: list[ContextItem] = field(default_factory=list)
    state: list[StateFact] = field(default_factory=list)
    tokens: int = 0  # of the rendered context, counted with a real tokenizer

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def header(self) -> list[str]:
        marks = ", ".join(f"{k}@{v if v is not None else 'missing'}" for k, v in self.watermarks.items())
        return [
            f'Context for "{self.question}" as {self.asker}' + (f" in scope {self.scope}" if self.scope else ""),
            f"ledger head {self.ledger_head}; views {marks}",
        ]

    def render(self) -> str:
        lines = self.header()
        if self.state:
            lines += ["", "What holds now:", *(_state_line(f) for f in self.state)]
        lines.append("")
        lines.append("Evidence:" if self.items else "Evidence: none visible to this asker.")
        for i, it in enumerate(self.items, 1):
            lines += _item_lines(i, it)
        return "\n".join(lines)


def _state_line(f: StateFact) -> str:
    return (
        f"  {f.subject} {f.predicate} {f.object}  (since {f.valid_from[:10]}; "
        f"source {f.source_ref or '-'} {f.source_entry_id}: \"{f.quote}\")"
    )


def _item_lines(i: int, it: ContextItem) -> list[str]:
    head = f"  {i:>2}. [{it.source_ref or '-'}] {it.valid_at[:10]} entry {it.entry_id}, routes {'+'.join(it.routes)}, score {it.score:.4f}"
    if len(it.entry_ids) <= 1:
        return [head, f"      {_one_line(it.text, 600)}"]
    # a window: one line per turn, the hit marked
    return [head] + [
        f"    {'>' if ref == it.source_ref else ' '} [{ref}] {_one_line(line, 600)}"
        for ref, line in zip(it.source_refs, it.text.split("\n"))
    ]


def _one_line(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _iso(v: Any) -> str:
    return v.isoformat() if isinstance(v, datetime) else str(v)


def view_watermarks(home: MemcHome) -> dict[str, int | None]:
    from claims.extract import RULES
    from claims.store import extractor_dir

    dirs = {
        "claims": extractor_dir(home.claims, RULES.key),
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
    config: QueryConfig | None = None,
    embedder: Any = None,
) -> Context:
    home = home or MemcHome.resolve()
    config = config or QueryConfig()
    ledger = Ledger(home.ledger)
    ctx = Context(
        question=question,
        asker=asker,
        scope=scope,
        ledger_head=ledger.head(),
        watermarks=view_watermarks(home),
    )
    ctx.items = _retrieve(home, question, asker, scope, config, embedder)
    ctx.state = _state_facts(home, question, asker, scope, config)
    _recheck_visibility(ctx, ledger)
    _pack(ctx, config.budget_tokens)
    return ctx


def _pack(ctx: Context, budget: int) -> None:
    """Keep the state facts, then the evidence items, that fit the token budget, in rank order."""
    from query.tokens import count_tokens

    # Fixed lines (header, section titles) first; then each line as it would be rendered.
    used = count_tokens("\n".join([*ctx.header(), "", "What holds now:", "", "Evidence:"]))
    kept_state, kept_items = [], []
    for f in ctx.state:
        cost = count_tokens(_state_line(f))
        if used + cost > budget:
            break
        kept_state.append(f)
        used += cost
    for it in ctx.items:
        cost = count_tokens("\n".join(_item_lines(len(kept_items) + 1, it)))
        if used + cost > budget:
            break
        kept_items.append(it)
        used += cost
    ctx.state, ctx.items = kept_state, kept_items
    ctx.tokens = count_tokens(ctx.render())


def _retrieve(home: MemcHome, question: str, asker: str, scope: str | None, config: QueryConfig, embedder: Any) -> list[ContextItem]:
    if not home.vectors.exists():
        return []
    from views.vectors import LanceVectorStore

    if embedder is None:
        from views.embedder import Embedder

        embedder = Embedder()
    store = LanceVectorStore(str(home.vectors))
    principals = [asker]
    vector = embedder.encode([question])[0]
    routes = {
        "fulltext": store.search(text=question, principals=principals, scope=scope, k=config.fulltext_k, kinds=EVIDENCE_KINDS),
        "vector": store.search(
            vector=vector, principals=principals, scope=scope, k=config.vector_k, kinds=EVIDENCE_KINDS,
            model_version=getattr(embedder, "model_version", None),
        ),
    }
    weights = {"fulltext": config.fulltext_weight, "vector": config.vector_weight}
    fused: dict[str, dict[str, Any]] = {}
    for route, hits in routes.items():
        for rank, hit in enumerate(h for h in hits if h.get("route", route) == route):
            slot = fused.setdefault(hit["entry_id"], {"hit": hit, "score": 0.0, "routes": []})
            if route in slot["routes"]:
                continue  # another chunk of the same entry already counted on this route
            slot["score"] += weights[route] / (config.rrf_k + rank + 1)
            slot["routes"].append(route)
    ranked = sorted(fused.values(), key=lambda s: (-s["score"], s["hit"]["entry_id"]))
    windows = _session_windows(store, ranked[: config.k * 3], principals, scope, config)

    items: list[ContextItem] = []
    covered: set[str] = set()
    for s in ranked:
        hit = s["hit"]
        if hit["entry_id"] in covered:
            continue  # already shown inside an earlier item's window
        turns = windows.get(hit["entry_id"]) or [hit]
        covered.update(t["entry_id"] for t in turns)
        items.append(
            ContextItem(
                entry_id=hit["entry_id"],
                source_ref=hit.get("source_ref"),
                scope=hit["scope"],
                kind=hit["kind"],
                actor=hit.get("actor"),
                text="\n".join(t["text"] for t in turns),
                valid_at=_iso(hit["valid_at"]),
                recorded_at=_iso(hit["recorded_at"]),
                routes=s["routes"],
                score=round(s["score"], 6),
                source_refs=[t.get("source_ref") for t in turns],
                entry_ids=[t["entry_id"] for t in turns],
            )
        )
        if len(items) == config.k:
            break
    return items


def _session_windows(store, ranked: list[dict[str, Any]], principals: list[str], scope: str | None, config: QueryConfig) -> dict[str, list[dict[str, Any]]]:
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
            out[r["entry_id"]] = unique[max(0, i - config.window_before) : i + config.window_after + 1]
    return out


def _state_facts(home: MemcHome, question: str, asker: str, scope: str | None, config: QueryConfig) -> list[StateFact]:
    path = home.marts / "state_current.parquet"
    if not path.exists() or config.max_state_facts == 0:
        return []
    rows = [
        r
        for r in pq.read_table(path).to_pylist()
        # dbt-duckdb exports an empty model as one all-null row: skip it
        if r["claim_id"] is not None
        and (scope is None or r["scope"] == scope)
        and may_see(asker, r["visibility"])
        # closed by a later claim or a retraction this asker may see
        and asker not in (r.get("closed_for") or ())
    ]
    words = set(re.findall(r"[\w'-]+", question.casefold()))
    mentioned = {r["subject_id"] for r in rows if r["subject"].casefold() in words}
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
    facts = sorted([*newest.values(), *facts], key=lambda r: (r["subject"], r["predicate"], str(r["valid_from"])))
    return [
        StateFact(
            subject=r["subject"],
            predicate=r["predicate"],
            object=r["object"],
            valid_from=_iso(r["valid_from"]),
            source_entry_id=r["source_entry_id"],
            source_ref=r["source_ref"],
            quote=r["quote"],
            scope=r["scope"],
        )
        for r in facts[: config.max_state_facts]
    ]


def _recheck_visibility(ctx: Context, ledger: Ledger) -> None:
    """Independent of the store filters: look every cited entry up in the ledger itself and drop
    anything the asker may not see (a store filter bug must not become a leak)."""
    cited = {e for it in ctx.items for e in (it.entry_ids or [it.entry_id])} | {f.source_entry_id for f in ctx.state}
    if not cited:
        return
    vis = {r["entry_id"]: r["visibility"] for r in ledger.read(["entry_id", "visibility"]).to_pylist() if r["entry_id"] in cited}
    ctx.items = [it for it in ctx.items if all(may_see(ctx.asker, vis.get(e)) for e in (it.entry_ids or [it.entry_id]))]
    ctx.state = [f for f in ctx.state if may_see(ctx.asker, vis.get(f.source_entry_id))]

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


class QueryConfig(BaseModel):
    """How much each route retrieves, how they are fused, and how much context is packed."""

    k: int = Field(default=10, ge=1, le=200)
    vector_k: int = Field(default=40, ge=1)
    fulltext_k: int = Field(default=40, ge=1)
    rrf_k: int = Field(default=60, ge=1)  # reciprocal rank fusion constant (Cormack et al.)
    max_state_facts: int = Field(default=20, ge=0)
    budget_tokens: int = Field(default=2000, ge=50)

    @classmethod
    def preset(cls, name: str) -> "QueryConfig":
        try:
            return PRESETS[name].model_copy()
        except KeyError:
            raise ValueError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}") from None


PRESETS: dict[str, QueryConfig] = {
    "fast": QueryConfig(k=5, vector_k=15, fulltext_k=15, max_state_facts=8, budget_tokens=800),
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
    return [
        f"  {i:>2}. [{it.source_ref or '-'}] {it.valid_at[:10]} {_one_line(it.text)}",
        f"      entry {it.entry_id}, recorded {it.recorded_at[:19]}, routes {'+'.join(it.routes)}, score {it.score:.4f}",
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
    vector = embedder.encode([question])[0]
    routes = {
        "vector": store.search(vector=vector, principals=[asker], scope=scope, k=config.vector_k),
        "fulltext": store.search(text=question, principals=[asker], scope=scope, k=config.fulltext_k),
    }
    fused: dict[str, dict[str, Any]] = {}
    for route, hits in routes.items():
        for rank, hit in enumerate(h for h in hits if h.get("route", route) == route):
            key = hit["entry_id"]
            slot = fused.setdefault(key, {"hit": hit, "score": 0.0, "routes": []})
            if route in slot["routes"]:
                continue  # another chunk of the same entry already counted on this route
            slot["score"] += 1.0 / (config.rrf_k + rank + 1)
            slot["routes"].append(route)
    best = sorted(fused.values(), key=lambda s: (-s["score"], s["hit"]["entry_id"]))[: config.k]
    return [
        ContextItem(
            entry_id=s["hit"]["entry_id"],
            source_ref=s["hit"].get("source_ref"),
            scope=s["hit"]["scope"],
            kind=s["hit"]["kind"],
            actor=s["hit"].get("actor"),
            text=s["hit"]["text"],
            valid_at=_iso(s["hit"]["valid_at"]),
            recorded_at=_iso(s["hit"]["recorded_at"]),
            routes=s["routes"],
            score=round(s["score"], 6),
        )
        for s in best
    ]


def _state_facts(home: MemcHome, question: str, asker: str, scope: str | None, config: QueryConfig) -> list[StateFact]:
    path = home.marts / "state_current.parquet"
    if not path.exists() or config.max_state_facts == 0:
        return []
    rows = [
        r
        for r in pq.read_table(path).to_pylist()
        if (scope is None or r["scope"] == scope) and may_see(asker, r["visibility"])
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
    cited = {it.entry_id for it in ctx.items} | {f.source_entry_id for f in ctx.state}
    if not cited:
        return
    vis = {r["entry_id"]: r["visibility"] for r in ledger.read(["entry_id", "visibility"]).to_pylist() if r["entry_id"] in cited}
    ctx.items = [it for it in ctx.items if may_see(ctx.asker, vis.get(it.entry_id))]
    ctx.state = [f for f in ctx.state if may_see(ctx.asker, vis.get(f.source_entry_id))]

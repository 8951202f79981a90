"""`memc eval locomo DIR`: evidence recall of compiled contexts on LoCoMo-format data.

For each conversation: a fresh memory home, the conversation ingested with scope =
conversation_id, every view built through Dagster, every question asked scoped to its
conversation. Recall@k is the share of a question's evidence turns among the top k items
(matched by source_ref = turn id; an item that shows a window of turns covers each of them),
averaged over questions that have evidence — the same definition as
../shared/eval/locomo_score.py, which can score the run file this writes.

The headline is the recall of the whole context (``context``: every turn the context shows, in
its items and in the quotes of its state facts, whose refs the run file keeps under ``facts``), at
a token budget: an item showing five turns is not one BM25 turn, so memc is compared with plain
retrieval given the same tokens (../shared/eval/budget_baseline.py packs BM25 hits, alone or
with +-2 turns, into the same budget). ``budgets`` sweeps several budgets over one build.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from ingestion import ingest_paths
from ledger import Ledger
from memc.home import MemcHome
from orchestration.runner import build
from query import compile_context
from query.compile import view_watermarks
from query.config import QueryConfig
from query.context import item_lines
from query.tokens import count_tokens
from views.embedder import TextEmbedder
from views.embedder_onnx import question_embedder

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
EVAL_ASKER = "eval"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@dataclass
class EvalResult:
    ks: tuple[int, ...]
    budget: int = 0  # the context's token budget (QueryConfig.budget_tokens)
    recall: dict[str, dict[str, float]] = field(default_factory=dict)  # group -> "R@k" -> mean
    counts: dict[str, int] = field(default_factory=dict)
    median_tokens: float = 0.0
    # Of the context's tokens, the share in items that show an evidence turn (mean over the
    # questions with evidence): how much of what the reader is given is worth reading.
    evidence_token_share: float = 0.0
    latency_ms_p50: float = 0.0
    latency_ms_p95: float = 0.0
    questions: int = 0
    conversations: list[str] = field(default_factory=list)
    build_seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()

    def render(self) -> str:
        cols = ["context", *(f"R@{k}" for k in self.ks)]
        lines = [
            f"LoCoMo evidence recall over {self.questions} questions in {len(self.conversations)} conversations, "
            f"at a budget of {self.budget:,} tokens (context: everything the context shows)",
            "",
            "| group | n | " + " | ".join(cols) + " |",
            "|---|---:|" + "---:|" * len(cols),
        ]
        order = [*CATEGORIES.values(), "overall"]
        for g in order:
            if g in self.recall:
                lines.append(f"| {g} | {self.counts[g]} | " + " | ".join(f"{self.recall[g][c]:.3f}" for c in cols) + " |")
        lines += [
            "",
            f"median context tokens: {self.median_tokens:.0f} ({self.evidence_token_share:.0%} of them in items holding evidence); "
            f"compile latency p50 {self.latency_ms_p50:.1f} ms, "
            f"p95 {self.latency_ms_p95:.1f} ms",
        ]
        return "\n".join(lines)


def conversation_home(root: Path, conv: str, turns: list[dict[str, Any]], *, reuse: bool = False) -> tuple[MemcHome, float | None]:
    """A fresh memory home for one conversation (scope = its id), its turns ingested and every
    view built through Dagster; and the build's seconds. With ``reuse``, a home an earlier run
    left in ``root`` is asked again without a build (seconds None) when it was built from the
    same turns and every view is at the ledger head (with the active extractor's claims):
    tuning the compiler then costs the compiles alone (about a minute on dev instead of seven)."""
    home = MemcHome.resolve(root / conv)
    source = root / f"{conv}.jsonl"  # the conversation's turns, outside the repository
    text = "".join(json.dumps(t) + "\n" for t in turns)
    if reuse and source.is_file() and source.read_text() == text and built(home):
        return home, None
    home.ensure()
    source.write_text(text)
    ingest_paths(Ledger(home.ledger), [source], scope=conv, visibility=("public",))
    t0 = time.perf_counter()
    report = build(home)
    if not report.success:
        raise RuntimeError(f"build failed for {conv}: {report.failed_steps}")
    return home, round(time.perf_counter() - t0, 1)


def built(home: MemcHome) -> bool:
    """Every view of ``home`` compiled from its whole ledger."""
    if not home.ledger.exists():
        return False
    head = Ledger(home.ledger).head()
    return head > 0 and all(mark == head for mark in view_watermarks(home).values())


def recall_at(evidence: Iterable[str], retrieved: list[list[str]], k: int) -> float:
    """Share of the evidence turns covered by the first k items (an item may show several turns)."""
    ev = set(evidence)
    covered = {ref for item in retrieved[:k] for ref in item}
    return len(ev & covered) / len(ev)


def render_sweep(results: list[EvalResult]) -> str:
    """One line per budget: recall of the whole context, overall and multi-hop, and its tokens."""
    lines = [
        "| budget (tokens) | context recall | multi-hop | temporal | single-hop | median context tokens | evidence token share |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        g = {k: r.recall.get(k, {}).get("context", float("nan")) for k in ("overall", "multi-hop", "temporal", "single-hop")}
        lines.append(
            f"| {r.budget:,} | {g['overall']:.3f} | {g['multi-hop']:.3f} | {g['temporal']:.3f} | {g['single-hop']:.3f} "
            f"| {r.median_tokens:.0f} | {r.evidence_token_share:.2f} |"
        )
    return "\n".join(lines)


def run_locomo_sweep(
    data_dir: Path,
    *,
    budgets: tuple[int, ...] = (),
    ks: tuple[int, ...] = (1, 5, 10),
    outs: tuple[Path, ...] = (),
    work_dir: Path | None = None,
    conversations: list[str] | None = None,
    preset: str | None = None,
    settings: dict[str, Any] | None = None,
    reuse: bool = False,
    on_progress: Callable[[str], None] | None = None,
) -> list[EvalResult]:
    """One result per budget (none given: the preset's budget), every conversation built once
    and every question compiled once per budget; ``outs`` the run files, one per budget.
    ``settings``: QueryConfig fields set over the preset's (validated like the preset's own);
    ``reuse``: ask homes an earlier run left in ``work_dir`` again without building them
    (conversation_home)."""
    data_dir = Path(data_dir)
    turns = read_jsonl(data_dir / "conversations.jsonl")
    questions = read_jsonl(data_dir / "questions.jsonl")
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in turns:
        by_conv[t["conversation_id"]].append(t)
    conv_ids = conversations or sorted(by_conv)
    base = QueryConfig.preset(preset) if preset else QueryConfig()
    if settings:
        base = QueryConfig.model_validate({**base.model_dump(), **settings})
    base = base.model_copy(update={"k": max(base.k, max(ks))})
    configs = [base.model_copy(update={"budget_tokens": b}) for b in budgets] or [base]
    if outs and len(outs) != len(configs):
        raise ValueError(f"{len(outs)} run files for {len(configs)} budgets")
    embedder = question_embedder()  # the questions embedded as a serving process embeds them

    tmp = tempfile.TemporaryDirectory(prefix="memc-eval-") if work_dir is None else None
    root = Path(tmp.name) if tmp else Path(work_dir)
    runs = [BudgetRun(EvalResult(ks=tuple(ks), budget=c.budget_tokens, conversations=conv_ids)) for c in configs]
    try:
        for conv in conv_ids:
            home, seconds = conversation_home(root, conv, by_conv[conv], reuse=reuse and work_dir is not None)
            if seconds is not None:
                for run in runs:
                    run.result.build_seconds[conv] = seconds
            if on_progress:
                on_progress(f"{conv}: built in {seconds} s" if seconds is not None else f"{conv}: reusing the home built in {root / conv}")
            for q in (q for q in questions if q["conversation_id"] == conv):
                for run, config in zip(runs, configs):
                    run.ask(q, home, conv, config, embedder, ks)
    finally:
        if tmp:
            tmp.cleanup()
    for i, run in enumerate(runs):
        run.finish()
        if outs:
            Path(outs[i]).write_text("\n".join(run.lines) + "\n")
    return [run.result for run in runs]


@dataclass
class BudgetRun:
    """What one budget's questions gave, while the sweep goes."""

    result: EvalResult
    per_group: dict[str, list[dict[str, float]]] = field(default_factory=lambda: defaultdict(list))
    latencies: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    shares: list[float] = field(default_factory=list)  # per question: share of tokens in evidence-holding items

    def ask(self, q: dict[str, Any], home: MemcHome, conv: str, config: QueryConfig, embedder: TextEmbedder, ks: tuple[int, ...]) -> None:
        t1 = time.perf_counter()
        ctx = compile_context(q["question"], EVAL_ASKER, home=home, scope=conv, config=config, embedder=embedder)
        self.latencies.append((time.perf_counter() - t1) * 1000)
        self.tokens.append(ctx.tokens)
        # each item lists every turn it shows (a hit with its neighbours in the session)
        retrieved = [[r for r in (it.source_refs or [it.source_ref]) if r] for it in ctx.items]
        # The state facts quote turns too, with their refs: the whole context shows those turns.
        # Kept apart in the run file, so that R@k (and scorers of `retrieved`) count items only.
        facts = sorted({f.source_ref for f in ctx.state if f.source_ref})
        self.lines.append(json.dumps({"question_id": q["question_id"], "retrieved": retrieved, "facts": facts}))
        if not q.get("evidence"):
            return
        wanted = set(q["evidence"])
        holding = [it for it, refs in zip(ctx.items, retrieved) if wanted.intersection(refs)]
        self.shares.append(sum(count_tokens("\n".join(item_lines(1, it, EVAL_ASKER))) for it in holding) / max(1, ctx.tokens))
        whole = [*retrieved, facts]
        metrics = {"context": recall_at(q["evidence"], whole, len(whole)), **{f"R@{k}": recall_at(q["evidence"], retrieved, k) for k in ks}}
        self.per_group[CATEGORIES.get(q["category"], str(q["category"]))].append(metrics)
        self.per_group["overall"].append(metrics)

    def finish(self) -> None:
        r = self.result
        for group, ms in self.per_group.items():
            r.recall[group] = {c: sum(m[c] for m in ms) / len(ms) for c in ms[0]}
            r.counts[group] = len(ms)
        r.questions = len(self.lines)
        if self.tokens:
            r.median_tokens = statistics.median(self.tokens)
        if self.shares:
            r.evidence_token_share = sum(self.shares) / len(self.shares)
        if self.latencies:
            lat = sorted(self.latencies)
            r.latency_ms_p50 = statistics.median(lat)
            r.latency_ms_p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))]

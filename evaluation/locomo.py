"""`memc eval locomo DIR`: evidence recall of compiled contexts on LoCoMo-format data.

For each conversation: a fresh memory home, the conversation ingested with scope =
conversation_id, every view built through Dagster, every question asked scoped to its
conversation. Recall@k is the share of a question's evidence turns among the top k items
(matched by source_ref = turn id; an item that shows a window of turns covers each of them), averaged over questions that have evidence — the same
definition as ../shared/eval/locomo_score.py, which can score the run file this writes.
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
from query.config import QueryConfig
from views.embedder import Embedder

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
EVAL_ASKER = "eval"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@dataclass
class EvalResult:
    ks: tuple[int, ...]
    recall: dict[str, dict[str, float]] = field(default_factory=dict)  # group -> "R@k" -> mean
    counts: dict[str, int] = field(default_factory=dict)
    median_tokens: float = 0.0
    latency_ms_p50: float = 0.0
    latency_ms_p95: float = 0.0
    questions: int = 0
    conversations: list[str] = field(default_factory=list)
    build_seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()

    def render(self) -> str:
        cols = [f"R@{k}" for k in self.ks]
        lines = [
            f"LoCoMo evidence recall over {self.questions} questions in {len(self.conversations)} conversations",
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
            f"median context tokens: {self.median_tokens:.0f}; compile latency p50 {self.latency_ms_p50:.1f} ms, "
            f"p95 {self.latency_ms_p95:.1f} ms",
        ]
        return "\n".join(lines)


def conversation_home(root: Path, conv: str, turns: list[dict[str, Any]]) -> tuple[MemcHome, float]:
    """A fresh memory home for one conversation (scope = its id), its turns ingested and every
    view built through Dagster; and the build's seconds."""
    home = MemcHome.resolve(root / conv).ensure()
    source = root / f"{conv}.jsonl"  # the conversation's turns, outside the repository
    source.write_text("".join(json.dumps(t) + "\n" for t in turns))
    ingest_paths(Ledger(home.ledger), [source], scope=conv, visibility=("public",))
    t0 = time.perf_counter()
    report = build(home)
    if not report.success:
        raise RuntimeError(f"build failed for {conv}: {report.failed_steps}")
    return home, round(time.perf_counter() - t0, 1)


def recall_at(evidence: Iterable[str], retrieved: list[list[str]], k: int) -> float:
    """Share of the evidence turns covered by the first k items (an item may show several turns)."""
    ev = set(evidence)
    covered = {ref for item in retrieved[:k] for ref in item}
    return len(ev & covered) / len(ev)


def run_locomo(
    data_dir: Path,
    *,
    ks: tuple[int, ...] = (1, 5, 10),
    out: Path | None = None,
    work_dir: Path | None = None,
    conversations: list[str] | None = None,
    preset: str | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> EvalResult:
    data_dir = Path(data_dir)
    turns = read_jsonl(data_dir / "conversations.jsonl")
    questions = read_jsonl(data_dir / "questions.jsonl")
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in turns:
        by_conv[t["conversation_id"]].append(t)
    conv_ids = conversations or sorted(by_conv)
    config = QueryConfig.preset(preset) if preset else QueryConfig()
    config = config.model_copy(update={"k": max(config.k, max(ks))})
    embedder = Embedder()

    tmp = tempfile.TemporaryDirectory(prefix="memc-eval-") if work_dir is None else None
    root = Path(tmp.name) if tmp else Path(work_dir)
    result = EvalResult(ks=tuple(ks), conversations=conv_ids)
    per_group: dict[str, list[dict[str, float]]] = defaultdict(list)
    latencies: list[float] = []
    tokens: list[int] = []
    run_lines: list[str] = []
    try:
        for conv in conv_ids:
            home, result.build_seconds[conv] = conversation_home(root, conv, by_conv[conv])
            if on_progress:
                on_progress(f"{conv}: built in {result.build_seconds[conv]} s")
            for q in (q for q in questions if q["conversation_id"] == conv):
                t1 = time.perf_counter()
                ctx = compile_context(q["question"], EVAL_ASKER, home=home, scope=conv, config=config, embedder=embedder)
                latencies.append((time.perf_counter() - t1) * 1000)
                tokens.append(ctx.tokens)
                # each item lists every turn it shows (a hit with its neighbours in the session)
                retrieved = [[r for r in (it.source_refs or [it.source_ref]) if r] for it in ctx.items]
                run_lines.append(json.dumps({"question_id": q["question_id"], "retrieved": retrieved}))
                if not q.get("evidence"):
                    continue
                metrics = {f"R@{k}": recall_at(q["evidence"], retrieved, k) for k in ks}
                per_group[CATEGORIES.get(q["category"], str(q["category"]))].append(metrics)
                per_group["overall"].append(metrics)
    finally:
        if tmp:
            tmp.cleanup()
    for group, ms in per_group.items():
        result.recall[group] = {c: sum(m[c] for m in ms) / len(ms) for c in ms[0]}
        result.counts[group] = len(ms)
    result.questions = len(run_lines)
    if tokens:
        result.median_tokens = statistics.median(tokens)
    if latencies:
        latencies.sort()
        result.latency_ms_p50 = statistics.median(latencies)
        result.latency_ms_p95 = latencies[min(len(latencies) - 1, int(round(0.95 * (len(latencies) - 1))))]
    if out:
        Path(out).write_text("\n".join(run_lines) + "\n")
    return result

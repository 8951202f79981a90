"""`memc eval ranker DIR`: fit the compiler's learned order (query/rerank.py) on LoCoMo-format
data, and say what it is worth by cross-validation over the conversations.

For each conversation a home is built (or reused) as `memc eval locomo` builds it, and every
question with evidence is compiled once with the fused order, collecting each fused hit's
features; a hit is labelled by whether its turn is one of the question's evidence turns. Then,
for each conversation in turn, a logistic regression is fitted on the other conversations and
that conversation's questions are compiled again with it, at each budget: the recall of the
whole context beside the fused order's on the same homes is the ranker's honest figure (it never
saw the conversation it is measured on). Last, one ranker is fitted on every conversation and
written to ``out`` with those figures and what it was fitted on.
"""

from __future__ import annotations

import datetime as dt
import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from evaluation.locomo import EVAL_ASKER, BudgetRun, EvalResult, conversation_home, read_jsonl
from ledger import Ledger
from query import compile_context
from query.config import QueryConfig
from query.rerank import FEATURES, Ranker, collecting
from views.embedder_onnx import question_embedder


@dataclass
class RankerReport:
    conversations: list[str]
    questions: int
    candidates: int
    positives: int
    # budget -> {"fused": {group: recall}, "ranked": {group: recall}}, held-out conversations only
    cross_validated: dict[int, dict[str, dict[str, float]]] = field(default_factory=dict)
    ranker: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        lines = [
            f"ranker fitted on {self.questions} questions of {len(self.conversations)} conversations "
            f"({self.candidates:,} fused hits, {self.positives:,} of them evidence turns)",
            "",
            "whole-context recall, each conversation ranked by a ranker fitted on the others (overall / multi-hop):",
            "",
            "| budget (tokens) | fused order | learned order |",
            "|---:|---:|---:|",
        ]
        for budget, r in sorted(self.cross_validated.items()):
            f, g = r["fused"], r["ranked"]
            lines.append(f"| {budget:,} | {f['overall']:.3f} / {f.get('multi-hop', float('nan')):.3f} | {g['overall']:.3f} / {g.get('multi-hop', float('nan')):.3f} |")
        lines += ["", "coefficients (on standardised features): " + ", ".join(f"{n} {c:+.2f}" for n, c in zip(FEATURES, self.ranker["coef"]))]
        return "\n".join(lines)


def fit(x: np.ndarray, y: np.ndarray, name: str) -> Ranker:
    """A logistic regression on standardised features, as a :class:`Ranker`."""
    from sklearn.linear_model import LogisticRegression  # lazy: only the trainer fits
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)  # a constant feature: no weight to learn
    model = LogisticRegression(max_iter=5000).fit((x - scaler.mean_) / scale, y)
    return Ranker(name=name, mean=scaler.mean_.copy(), scale=scale, coef=model.coef_[0].copy(), intercept=float(model.intercept_[0]))


def train_ranker(
    data_dir: Path,
    *,
    out: Path,
    work_dir: Path | None = None,
    budgets: tuple[int, ...] = (500, 1000, 2000),
    reuse: bool = False,
    settings: dict[str, Any] | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> RankerReport:
    """Fit, cross-validate and write a ranker (see the module's docstring); ``out`` is its JSON.
    ``settings``: QueryConfig fields over the balanced preset's, for every compile (the ranker is
    fitted on the routes and fusion they give, and should be used with them)."""
    data_dir = Path(data_dir)
    turns = read_jsonl(data_dir / "conversations.jsonl")
    questions = [q for q in read_jsonl(data_dir / "questions.jsonl") if q.get("evidence")]
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in turns:
        by_conv[t["conversation_id"]].append(t)
    convs = sorted(by_conv)
    if len(convs) < 2:
        raise ValueError(f"{data_dir}: cross-validation over conversations needs at least two, found {len(convs)}")
    base = QueryConfig.preset("balanced")
    fused = QueryConfig.model_validate({**base.model_dump(), **(settings or {}), "ranker": None})
    embedder = question_embedder()  # the questions embedded as a serving process embeds them
    tmp = tempfile.TemporaryDirectory(prefix="memc-ranker-")
    root = Path(work_dir) if work_dir is not None else Path(tmp.name) / "homes"
    try:
        homes, xs, ys, owners = {}, [], [], []
        for conv in convs:
            home, seconds = conversation_home(root, conv, by_conv[conv], reuse=reuse and work_dir is not None)
            homes[conv] = home
            if on_progress:
                on_progress(f"{conv}: built in {seconds} s" if seconds is not None else f"{conv}: reusing the home in {root / conv}")
            ledger = Ledger(home.ledger).read(["entry_id", "source_ref"])
            ref = dict(zip(ledger.column("entry_id").to_pylist(), ledger.column("source_ref").to_pylist()))
            for q in (q for q in questions if q["conversation_id"] == conv):
                with collecting() as got:
                    compile_context(q["question"], EVAL_ASKER, home=home, scope=conv, config=fused, embedder=embedder)
                if not got:
                    continue  # nothing was searched (an empty home)
                ids, x = got[-1]
                evidence = set(q["evidence"])
                xs.append(x)
                ys.append(np.array([ref.get(e) in evidence for e in ids], dtype=bool))
                owners.append(np.full(len(ids), conv))
        x, y, owner = np.vstack(xs), np.concatenate(ys), np.concatenate(owners)
        report = RankerReport(conversations=convs, questions=len(xs), candidates=len(y), positives=int(y.sum()))
        runs = {(b, how): BudgetRun(EvalResult(ks=(10,), budget=b, conversations=convs)) for b in budgets for how in ("fused", "ranked")}
        for i, conv in enumerate(convs):
            held_out = owner == conv
            ranker = fit(x[~held_out], y[~held_out], f"cv-{i}")
            path = Path(tmp.name) / f"cv-{i}.json"  # by position: a conversation id is not a file name
            path.write_text(json.dumps(ranker.to_dict()))
            if on_progress:
                on_progress(f"{conv}: compiled again with a ranker fitted on the other conversations")
            for q in (q for q in questions if q["conversation_id"] == conv):
                for b in budgets:
                    for how, name in (("fused", None), ("ranked", str(path))):
                        config = fused.model_copy(update={"budget_tokens": b, "ranker": name})
                        runs[(b, how)].ask(q, homes[conv], conv, config, embedder, (10,))
        for (b, how), run in runs.items():
            run.finish()
            report.cross_validated.setdefault(b, {})[how] = {g: round(m["context"], 4) for g, m in run.result.recall.items()}
        final = fit(x, y, Path(out).stem)
        report.ranker = final.to_dict()
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(
            json.dumps(
                {
                    "ranker": report.ranker,
                    # What it was fitted on, as counts and the folder it was read from: nothing of
                    # the data itself (ids, texts, labels) is kept beside the coefficients.
                    "fitted": {
                        "data": str(data_dir),
                        "conversations": len(convs),
                        "questions": report.questions,
                        "candidates": report.candidates,
                        "positives": report.positives,
                        "preset": "balanced",
                        "settings": {name: getattr(fused, name) for name in settings or {}},  # as validated: 0.01, not "0.01"
                        "on": dt.date.today().isoformat(),
                    },
                    "cross_validated": {str(b): r for b, r in sorted(report.cross_validated.items())},
                },
                indent=1,
            )
            + "\n"
        )
        return report
    finally:
        tmp.cleanup()

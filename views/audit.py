"""Audits of the compiled views against their sources (plain functions; checks/views.py runs them
as Dagster asset checks). Each returns an :class:`Audit`: passed, a few numbers, and the first
problems found, named by opaque ids (never content)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

MAX_PROBLEMS = 50


@dataclass
class Audit:
    passed: bool
    metadata: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, problems: list[str], **metadata: Any) -> "Audit":
        return cls(passed=not problems, metadata={**metadata, "problems": len(problems)}, problems=problems[:MAX_PROBLEMS])


def evidence_rows_match(stored_ids: Iterable[str], expected: pa.Table) -> Audit:
    """The index holds exactly the rows its sources render to (entry chunks + claim sentences)."""
    stored = list(stored_ids)
    want = set(expected.column("id").to_pylist())
    have = set(stored)
    problems = [f"missing row {i}" for i in sorted(want - have)]
    problems += [f"row {i} has no source" for i in sorted(have - want)]
    if len(stored) != len(have):
        problems.append(f"{len(stored) - len(have)} duplicate row ids")
    return Audit.of(problems, rows=len(stored), expected_rows=len(want))


def vectors_sound(health: Mapping[str, Any] | None, *, model_version: str, dim: int) -> Audit:
    """No null, wrong-dimension, non-finite or non-unit vectors; the table's model is the code's;
    the full-text index exists and covers every row."""
    if health is None:
        return Audit.of(["the evidence index does not exist"])
    problems = []
    for key in ("null_vectors", "wrong_dimension", "non_finite_vectors", "non_unit_vectors"):
        if health.get(key):
            problems.append(f"{health[key]} {key.replace('_', ' ')}")
    if health.get("embedding_model_version") != model_version:
        problems.append(f"table embedded by {health.get('embedding_model_version')!r}, code uses {model_version!r}")
    if health.get("stored_dim") != dim or health.get("embedding_dim") != dim:
        problems.append(f"vector dimension {health.get('stored_dim')}/{health.get('embedding_dim')}, expected {dim}")
    if health.get("rows") and not health.get("fts_index"):
        problems.append("no full-text index on text")
    elif health.get("fts_unindexed_rows"):
        problems.append(f"{health['fts_unindexed_rows']} rows not in the full-text index")
    return Audit.of(problems, **{k: v for k, v in health.items() if isinstance(v, (int, str, bool)) and v is not None})


def expected_graph_counts(marts: Mapping[str, pa.Table | None]) -> dict[str, int]:
    """What each Kùzu table must hold, from the marts (interactions are stored both ways)."""

    def n(name: str) -> int:
        t = marts.get(name)
        return 0 if t is None else t.num_rows

    entries = marts.get("entries")
    in_session = 0 if entries is None else entries.num_rows - entries.column("session_key").null_count
    return {
        "Entity": n("entities"),
        "Session": n("sessions"),
        "Entry": n("entries"),
        "INTERACTS": 2 * n("interactions"),
        "RELATES": n("relations"),
        "MENTIONS": n("mentions"),
        "IN_SESSION": in_session,
    }


def graph_counts_match(counts: Mapping[str, int], marts: Mapping[str, pa.Table | None]) -> Audit:
    expected = expected_graph_counts(marts)
    problems = [f"{t}: graph {counts.get(t)} vs marts {want}" for t, want in expected.items() if counts.get(t) != want]
    return Audit.of(problems, **{f"graph/{t}": int(counts.get(t) or 0) for t in expected}, **{f"marts/{t}": v for t, v in expected.items()})


def graph_traces_to_ledger(node_evidence: Mapping[str, Mapping[str, list[str]]], ledger_ids: set[str]) -> Audit:
    """Every node names at least one ledger entry, and every entry it names exists."""
    found: list[tuple[str, str, str]] = []  # (label, node, problem): sorted once, not every node
    nodes = 0
    for label, nodes_of in node_evidence.items():
        for node, evidence in nodes_of.items():
            nodes += 1
            if not evidence:
                found.append((label, node, f"{label} {node} traces to no ledger entry"))
                continue
            missing = [e for e in evidence if e not in ledger_ids]
            if missing:
                found.append((label, node, f"{label} {node} names unknown entries {missing[:3]}"))
    return Audit.of([problem for *_, problem in sorted(found)], nodes=nodes)


def derived_claims_sound(derived: Iterable[Mapping[str, Any]], node_ids: set[str], seq_of: Mapping[str, int], head: int) -> Audit:
    """Every dreaming claim names an existing graph node, a watermark no higher than the ledger
    head and equal to the highest seq of the entries it was derived from (all in the ledger)."""

    problems = []
    n = 0
    for d in derived:
        n += 1
        eid = d["entry_id"]
        attrs = json.loads(d.get("attributes") or "{}")
        if attrs.get("subject_id") not in node_ids:
            problems.append(f"{eid}: names no graph node ({attrs.get('subject_id')})")
        wm = d.get("watermark")
        if wm is None or wm > head:
            problems.append(f"{eid}: watermark {wm} above the ledger head {head}")
        sources = list(d.get("derived_from") or [])
        unknown = [s for s in sources if s not in seq_of]
        if not sources or unknown:
            problems.append(f"{eid}: derived from unknown entries {unknown[:3]}" if sources else f"{eid}: no derived_from")
        elif wm is not None and max(seq_of[s] for s in sources) != wm:
            problems.append(f"{eid}: watermark {wm} is not its inputs' highest seq {max(seq_of[s] for s in sources)}")
        if wm is not None and wm >= d["seq"]:
            problems.append(f"{eid}: watermark {wm} not below its own seq {d['seq']}")
    return Audit.of(problems, derived_claims=n, ledger_head=head)

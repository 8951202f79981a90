"""Dreaming: compile the interaction graph, rank who is central, and write the results back to
the ledger as derived claims with lineage.

A derived claim's watermark is the highest seq among its inputs (not the ledger head), and its
content, valid time and id follow from its inputs alone. Re-running at the same inputs therefore
produces the same entries, which the ledger's idempotency check turns into a no-op; dreaming's
own write-back does not change its inputs, so it never feeds on itself.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pyarrow as pa

from ledger.schema import NewEntry
from memc.ids import digest
from memc.visibility import meet

PRODUCER = "dreaming"
PRODUCER_VERSION = "1.0"


def centrality_entries(
    interactions: pa.Table,
    entities: pa.Table,
    ranks_by_scope: dict[str, list[tuple[str, float]]],
    seq_of: dict[str, int],
) -> list[NewEntry]:
    """Derived ``centrality`` claims, one per ranked entity.

    ``interactions`` and ``entities`` are the dbt marts; ``ranks_by_scope`` maps a scope to its
    PageRank results; ``seq_of`` maps the interactions' evidence entry ids to their seqs."""
    names = {r["entity_id"]: r["name"] for r in entities.select(["entity_id", "name"]).to_pylist()}
    by_scope: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in interactions.to_pylist():
        by_scope[row["scope"]].append(row)

    out: list[NewEntry] = []
    for scope, ranks in sorted(ranks_by_scope.items()):
        rows = sorted(by_scope.get(scope, []), key=lambda r: (r["src"], r["dst"]))
        if not rows or not ranks:
            continue
        evidence = sorted({e for r in rows for e in r["evidence"]})
        watermark = max(seq_of[e] for e in evidence)
        visibility = meet(r["visibility"] for r in rows)
        if not visibility:
            # Inputs no single principal may all see: the claim would be visible to nobody but
            # an administrator, and the policy validator would refuse to derive anything from it.
            continue
        valid_at = max(r["last_at"] for r in rows)
        graph_version = digest([(r["src"], r["dst"], r["weight"]) for r in rows])[:12]
        for entity_id, rank in ranks:
            name = names.get(entity_id, entity_id)
            value = f"{rank:.4f}"
            out.append(
                NewEntry(
                    kind="derived_claim",
                    scope=scope,
                    content=(
                        f"claim: {name} centrality = {value}; graph: interactions {graph_version}; "
                        f"ledger watermark: {watermark}; producer: {PRODUCER} {PRODUCER_VERSION}"
                    ),
                    valid_at=valid_at,
                    actor=PRODUCER,
                    source_ref=f"centrality:{entity_id}:{graph_version}",
                    visibility=tuple(visibility),
                    confidence=1.0,
                    attributes={
                        "subject": name,
                        "subject_id": entity_id,
                        "predicate": "centrality",
                        "object": value,
                        "graph_version": graph_version,
                        "algorithm": "pagerank",
                    },
                    derived_from=tuple(evidence),
                    producer=PRODUCER,
                    producer_version=PRODUCER_VERSION,
                    watermark=watermark,
                )
            )
    return out

"""What an erasure leaves of an entry in the ledger: a stub with its seq, id, transaction time and
idempotency key and nothing it said (Ledger.purge writes them; readers tell them by
``is_erased_stub``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ledger.schema import LEDGER_COLUMNS
from memc.ids import text_hash
from memc.visibility import ADMIN


@dataclass
class PurgeReport:
    files_rewritten: list[str] = field(default_factory=list)
    rows_stubbed: int = 0  # rows replaced by a stub now
    already_stubbed: int = 0  # rows a previous (interrupted) purge had already replaced
    missing: list[str] = field(default_factory=list)  # ids not found in any batch


def is_erased_stub(row: dict[str, Any]) -> bool:
    """A row an erasure replaced: kind "erasure" with ``erased_by`` in its attributes (a tombstone
    proper lists ``erased_entry_ids`` instead)."""
    if row.get("kind") != "erasure" or not row.get("attributes"):
        return False
    try:
        return "erased_by" in json.loads(row["attributes"])
    except (TypeError, ValueError):
        return False


def erased_stub(row: dict[str, Any], erasure_id: str) -> dict[str, Any]:
    """What is left of an erased entry: its seq, id, transaction time, scope and idempotency key,
    nothing it said. The seq keeps the ledger gap-free; the id lets tombstones and lineage still
    name it; the idempotency key (a hash, not the text) makes re-ingesting the same evidence a
    no-op, so an erased entry does not come back with the next inbox delivery. valid_at is set to
    recorded_at (when it happened is about the content); visibility is administrators only (a
    well-formed list, so the ledger's own checks still pass)."""
    stub = {c: None for c in LEDGER_COLUMNS}
    stub.update(
        seq=row["seq"],
        entry_id=row["entry_id"],
        recorded_at=row["recorded_at"],
        valid_at=row["recorded_at"],
        kind="erasure",
        scope=row["scope"],
        content="",
        content_hash=text_hash(""),
        visibility=[ADMIN],
        confidence=0.0,
        idempotency_key=row["idempotency_key"],
        attributes=json.dumps({"erased_by": erasure_id}, sort_keys=True),
        derived_from=[],
    )
    return stub


def stubbed_batch(table, erased: dict[str, str], found: set[str], report: PurgeReport):
    """A batch with the rows of ``erased`` (entry id -> erasure id) replaced by stubs, as a
    table of LEDGER_SCHEMA, or None when the batch holds none of them or only stubs already;
    adds what it finds to ``found`` and counts stubs already there. The caller writes the table
    by its own store's protocol and counts ``rows_stubbed`` (the second value) once written."""
    import pyarrow as pa

    from ledger.schema import LEDGER_SCHEMA

    ids = table.column("entry_id").to_pylist()
    hits = [i for i, e in enumerate(ids) if e in erased]
    if not hits:
        return None, 0
    rows = table.to_pylist()
    todo = []
    for i in hits:
        found.add(ids[i])
        if is_erased_stub(rows[i]):
            report.already_stubbed += 1
        else:
            todo.append(i)
    if not todo:
        return None, 0
    for i in todo:
        rows[i] = erased_stub(rows[i], erased[ids[i]])
    return pa.Table.from_pylist(rows, schema=LEDGER_SCHEMA), len(todo)

"""The state index every compile reads: state_current and conflicts rows by subject, and subject ids
by case-folded name, built once per version of the two marts in a warm process. The entity
dossiers (views/dossiers.py) have the same shape, for the subjects asked about most.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from memc.filecache import cached
from memc.home import MemcHome
from views.grouped import Grouped, Keep, table_rows
from views.marts import CONFLICTS, STATE_CURRENT, mart_path, read_mart


ROW = "_row"  # a dossier row's position in its mart file: the compiler keeps the scan's order


@dataclass(frozen=True)
class SubjectIndex:
    """The compiled dossiers as a reader sees them."""

    identity: dict[str, Any]  # the state build they were compiled from (``state_identity``)
    names: dict[str, frozenset[str]]  # case-folded subject name -> the subject ids it names
    by_subject: Mapping[str, dict[str, Any]]  # subject id -> dossier (facts, conflicts, neighbours, ...)

    def rows_for(self, words: Iterable[str], keep: Keep | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """Every state_current row and conflicts row about the subjects ``words`` can name, in
        mart order, or None when one of those subjects has no dossier (the caller then scans).
        ``keep``: a mask over the state rows of the marts' index, applied before they become
        Python (the caller checks each row again; dossiers' rows are Python already, returned
        whole)."""
        wanted: set[str] = set()
        for w in words:
            wanted |= self.names.get(w, frozenset())
        if not wanted <= self.by_subject.keys():
            return None
        if isinstance(self.by_subject, _Subjects):
            return self.by_subject.rows_of(wanted, keep)
        ds = [self.by_subject[s] for s in wanted]
        facts = sorted((r for d in ds for r in d["facts"]), key=lambda r: r[ROW])
        conflicts = sorted((c for d in ds for c in d.get("conflicts") or ()), key=lambda c: c[ROW])
        return facts, conflicts


def numbered(table: pa.Table) -> pa.Table:
    return table.append_column(ROW, pa.array(range(table.num_rows), pa.int64()))


def state_index(home: MemcHome) -> SubjectIndex | None:
    """Every subject's state_current rows and conflicts rows, indexed by subject and by case-folded
    subject name the way the dossiers are (None without a state_current mart): what the compiler
    reads when no dossier covers a question. Built once per version of the marts in a warm process
    (0.14 s at 100k ledger entries, 52k state rows, grouped in Arrow; 1.2 s when every row was
    converted to Python), it spares each compile a filter over every row (at 100k ledger entries
    the state stage went 38 -> 0.7 ms per compile, with the same rows in the same order)."""
    state_path, conflicts_path = mart_path(home, STATE_CURRENT), mart_path(home, CONFLICTS)
    paths = [state_path, *([conflicts_path] if conflicts_path.exists() else [])]
    return cached("state_index", paths, lambda: _index_marts(*paths))


def _index_marts(state_path: Path, conflicts_path: Path | None = None) -> SubjectIndex:
    state = numbered(read_mart(state_path))
    facts = Grouped(state, "subject_id")
    conflicts = Grouped(numbered(read_mart(conflicts_path)), "subject_id") if conflicts_path is not None else None
    names: dict[str, set[str]] = {}
    for r in state.select(["subject", "subject_id"]).group_by(["subject", "subject_id"]).aggregate([]).to_pylist():
        if r["subject"] is not None and r["subject_id"]:
            names.setdefault(r["subject"].casefold(), set()).add(r["subject_id"])
    return SubjectIndex(identity={}, names={k: frozenset(v) for k, v in names.items()}, by_subject=_Subjects(facts, conflicts))


def _in_mart_order(rows: pa.Table) -> list[dict[str, Any]]:
    return table_rows(rows.take(pc.sort_indices(rows.column(ROW))))


class _Subjects(Mapping[str, dict[str, Any]]):
    """subject id -> its state_current rows (``facts``) and conflicts rows, in mart order, made on
    lookup from the marts grouped in Arrow: converting every row when the index was built cost
    the first compile after each build 1.9 s at 100k ledger entries (52k state rows); a compile
    asks for a few subjects."""

    def __init__(self, facts: Grouped, conflicts: Grouped | None) -> None:
        self._facts, self._conflicts = facts, conflicts
        self._ids = facts.keys()

    def __getitem__(self, subject_id: str) -> dict[str, Any]:
        if subject_id not in self._ids:
            raise KeyError(subject_id)
        conflicts = self._conflicts.rows_of([subject_id]) if self._conflicts is not None else []
        return {"facts": self._facts.rows_of([subject_id]), "conflicts": conflicts}

    def rows_of(self, subject_ids: Iterable[str], keep: Keep | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The state rows (those ``keep`` passes) and conflicts rows of these subjects, each in mart
        order. A subject much asked about holds thousands of rows at 1M ledger entries (a thing
        described again and again, the asker), and under half of them are the asker's to see:
        made Python, every one was most of a compile's state route (docs/benchmarks.md)."""
        facts = _in_mart_order(self._facts.table_of(subject_ids, keep))
        conflicts = _in_mart_order(self._conflicts.table_of(subject_ids)) if self._conflicts is not None else []
        return facts, conflicts

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def keys(self):  # a set-like view: rows_for compares it with the subjects it wants
        return self._ids


# Which source the compiler's state route read in this thread's (or task's) latest compile:
# "dossier" (the profile-guided dossiers answered it), "state_current" (the mart was scanned) or
# "none" (no state mart, or no state facts wanted). query/facts.py sets it; compile_context
# records it in the query log's plan, and the profile counts the compiles the dossiers served.
STATE_SOURCE: ContextVar[str] = ContextVar("memc_state_source", default="none")

"""Arrow tables kept in memory by a warm process, grouped by a key for lookups: the evidence
index's rows by session (views/evidence_rows.py) and the state_closings mart by subject and
predicate (query/current.py). A group's rows are one slice of the table, so a lookup converts to
Python only the rows it returns; converting a whole table up front was the cost (state_closings
at 100k ledger entries: 2.9 s for the first compile after each build)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


Keep = Callable[[pa.Table], pa.Array]  # a boolean mask over rows, applied before they become Python


class Grouped:
    """``rows`` grouped by the string column ``key``, each group's rows in table order. Rows
    whose key is null or empty belong to no group.

    The rows stay where they are; what is sorted is their positions (a stable argsort by group,
    so each group is one run of positions, in table order). Reordering the table itself, as this
    did first, took 10.4 s of the first compile on the 1M-entry bench home (three tables, the
    state_closings mart's 5.4M rows among them: `Table.take` copies every column)."""

    def __init__(self, rows: pa.Table, key: str) -> None:
        encoded = pc.dictionary_encode(pc.fill_null(rows.column(key), "")).combine_chunks()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        self.rows = rows
        self._order = np.argsort(codes, kind="stable")
        # Where each chunk starts: a take over a table of many chunks (45 for state_closings read
        # from its row groups, one per LanceDB batch for the evidence rows) concatenates every
        # column first, 1.2 s for 50 rows of state_closings at 1M; taken chunk by chunk, 0.4 ms.
        lengths = [len(c) for c in rows.column(0).chunks] if rows.num_columns else []
        self._bounds = np.cumsum([0, *lengths])
        counts = np.bincount(codes, minlength=len(encoded.dictionary))
        starts = np.cumsum(counts) - counts
        self._spans = {k: span for k, span in zip(encoded.dictionary.to_pylist(), zip(starts.tolist(), counts.tolist())) if k}

    def __len__(self) -> int:
        return len(self._spans)

    def keys(self):  # a set-like view of the groups' keys
        return self._spans.keys()

    def rows_of(self, keys: Iterable[str], keep: Keep | None = None) -> list[dict[str, Any]]:
        """Every row of these groups (each group once), as ``Table.to_pylist`` gives them;
        ``keep``: a mask over the groups' rows, applied before they are converted."""
        return table_rows(self.table_of(keys, keep))

    def table_of(self, keys: Iterable[str], keep: Keep | None = None) -> pa.Table:
        """:meth:`rows_of` as an Arrow table, for a caller that converts only the rows it uses."""
        parts = [self._order[start : start + count] for start, count in (self._spans[k] for k in dict.fromkeys(keys) if k in self._spans)]
        rows = self.take(np.concatenate(parts) if parts else [])
        return rows.filter(keep(rows)) if keep is not None and rows.num_rows else rows

    def take(self, positions: Sequence[int] | np.ndarray) -> pa.Table:
        """The rows at ``positions`` of the table, in that order, taken chunk by chunk (see above)."""
        positions = np.asarray(positions, dtype=np.int64)
        if len(positions) == 0:
            return self.rows.slice(0, 0)
        chunk = np.searchsorted(self._bounds, positions, side="right") - 1
        parts = []
        for run in np.split(np.arange(len(positions)), np.flatnonzero(np.diff(chunk)) + 1):
            c = int(chunk[run[0]])
            start, end = int(self._bounds[c]), int(self._bounds[c + 1])
            parts.append(self.rows.slice(start, end - start).take(pa.array(positions[run] - start)))
        return pa.concat_tables(parts)


def table_rows(table: pa.Table) -> list[dict[str, Any]]:
    """``table.to_pylist()``, faster where the table has zone-aware timestamps (see _pylist)."""
    names = table.column_names
    return [dict(zip(names, values)) for values in zip(*(_pylist(table.column(n)) for n in names))]


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _pylist(column: pa.ChunkedArray) -> list[Any]:
    """``column.to_pylist()``, with UTC microsecond timestamps made from their integers: pyarrow
    builds each zone-aware datetime through its time zone, 2.3 us a value, which was half of
    the rows' conversion (the valid and recorded times of ~700 window rows: 3.4 of 5 ms)."""
    kind = column.type
    if not (pa.types.is_timestamp(kind) and kind.unit == "us" and kind.tz in ("UTC", "+00:00")):
        return column.to_pylist()
    micros = pc.cast(column, pa.int64()).to_pylist()
    return [None if us is None else _EPOCH + timedelta(microseconds=us) for us in micros]

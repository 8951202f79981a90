"""The evidence index's conversation sessions held in memory, one version of the table at a time.

A compile shows each hit with the turns around it in its session (query/windows.py), so it reads
every turn of the ~20 sessions its hits fall in. Read from LanceDB, that was the largest stage of a
compile at 100k ledger entries (23 ms of 60: a filtered scan through the session_id B-tree, on the
asyncio thread LanceDB's sync API hops to). Grouped once per table version in memory, the same
rows are a slice per session (~1 ms for 20 sessions). At 100k entries the message rows without
their vectors are ~30 MB and take ~0.1 s to read and group, once after each build that changed
the table (the first compile after it pays that).

Only the grouping lives here. :class:`views.vectors.LanceVectorStore` owns the table, decides
when the grouping is stale (a new table version, or a table swapped in by an erasure rebuild)
and applies the asker's visibility and scope to the rows, as it does to the rows LanceDB returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class SessionIndex:
    """The rows of one table version with a session, contiguous per session (their order
    within a session is the table's; callers sort what they show)."""

    def __init__(self, rows: pa.Table) -> None:
        rows = rows.filter(pc.is_valid(rows.column("session_id")))
        encoded = pc.dictionary_encode(rows.column("session_id")).combine_chunks()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        # A stable sort by session keeps each session's rows in table order: one slice each.
        self.rows = rows.take(pa.array(np.argsort(codes, kind="stable")))
        counts = np.bincount(codes, minlength=len(encoded.dictionary))
        starts = np.cumsum(counts) - counts
        self._spans = dict(zip(encoded.dictionary.to_pylist(), zip(starts.tolist(), counts.tolist())))

    def __len__(self) -> int:
        return self.rows.num_rows

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes

    def rows_of(self, sessions: Iterable[str]) -> list[dict[str, Any]]:
        """Every row of these sessions, unfiltered (the store filters them for the asker), as
        ``Table.to_pylist`` gives them."""
        parts = [self.rows.slice(*self._spans[s]) for s in dict.fromkeys(sessions) if s in self._spans]
        if not parts:
            return []
        return table_rows(pa.concat_tables(parts))


def table_rows(table: pa.Table) -> list[dict[str, Any]]:
    """``table.to_pylist()``, faster where the table has zone-aware timestamps (see _pylist):
    the evidence index's rows as the compiler reads them (its routes' hits, its windows)."""
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

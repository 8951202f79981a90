"""The evidence index's rows held in memory, one version of the table at a time, without vectors.

A compile reads the rows of its hits (two searches of 80 hits each) and every turn of the ~40
sessions those hits fall in, to show each hit with the turns around it (query/windows.py). Read
from LanceDB, that was 40 of 60 ms of a compile at 100k ledger entries: a filtered scan through
the session_id B-tree for the windows (23 ms), and each search's hit rows, whose text LanceDB
reads page by page (a full-text search selecting its hits' ids only takes 3.4 ms, with their
rows 7.5 ms; a vector search 9 against 12 ms). Held once per table version, the searches select
ids, the rows are a lookup, and a session's turns one slice (~2 ms for 40 sessions). At 100k
entries (161k rows) that is ~55 MB, read and grouped in ~0.13 s once after each build that changed
the table (the first compile after it pays that).

Only the holding lives here. :class:`views.vectors.LanceVectorStore` owns the table, decides when
what is held is stale (a new table version, or a table swapped in by an erasure rebuild), and
filters the rows for the asker as it does the rows LanceDB returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class EvidenceRows:
    """The rows of one table version, by id and by session (a session's rows contiguous, in
    table order within it: callers sort what they show)."""

    def __init__(self, rows: pa.Table) -> None:
        sessions = rows.column("session_id")
        encoded = pc.dictionary_encode(pc.fill_null(sessions, "")).combine_chunks()
        codes = encoded.indices.to_numpy(zero_copy_only=False)
        # A stable sort by session keeps each session's rows in table order: one slice each.
        self.rows = rows.take(pa.array(np.argsort(codes, kind="stable")))
        counts = np.bincount(codes, minlength=len(encoded.dictionary))
        starts = np.cumsum(counts) - counts
        self._spans = {s: span for s, span in zip(encoded.dictionary.to_pylist(), zip(starts.tolist(), counts.tolist())) if s}
        self._at = {row_id: i for i, row_id in enumerate(self.rows.column("id").to_pylist())}

    def __len__(self) -> int:
        return self.rows.num_rows

    @property
    def nbytes(self) -> int:
        return self.rows.nbytes

    def by_id(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        """The rows of these ids, in their order (an id not held is skipped)."""
        at = [self._at[i] for i in ids if i in self._at]
        return table_rows(self.rows.take(pa.array(at, pa.int64()))) if at else []

    def of_sessions(self, sessions: Iterable[str]) -> list[dict[str, Any]]:
        """Every row of these sessions, unfiltered (the store filters them for the asker)."""
        parts = [self.rows.slice(*self._spans[s]) for s in dict.fromkeys(sessions) if s in self._spans]
        return table_rows(pa.concat_tables(parts)) if parts else []


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

"""The evidence index's rows held in memory, one version of the table at a time, without vectors.

A compile reads the rows of its hits (two searches of 80 hits each) and every turn of the ~40
sessions those hits fall in, to show each hit with the turns around it (query/windows.py). Read
from LanceDB, that was 40 of 60 ms of a compile at 100k ledger entries: a filtered scan through
the session_id B-tree for the windows (23 ms), and each search's hit rows, whose text LanceDB
reads page by page (a full-text search selecting its hits' ids only takes 3.4 ms, with their
rows 7.5 ms; a vector search 9 against 12 ms). Held once per table version, the searches select
LanceDB's row ids alone, the rows are a lookup, and a session's turns one slice (~2 ms for 40
sessions). At 100k entries (161k rows) that is ~55 MB, read and grouped in ~0.13 s once after each
build that changed the table (the first compile after it pays that).

Only the holding lives here. :class:`views.vectors.LanceVectorStore` owns the table, decides when
what is held is stale (a new table version, or a table swapped in by an erasure rebuild), and
filters the rows for the asker as it does the rows LanceDB returns.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from views.grouped import Grouped, Keep, table_rows

ROW_ID = "_rowid"  # LanceDB's row id column, in a scan or a search that asks for it


class EvidenceRows:
    """The rows of one table version, by LanceDB row id, by session (a session's rows contiguous,
    in table order within it: callers sort what they show) and by ledger entry."""

    def __init__(self, rows: pa.Table) -> None:
        """``rows``: a scan of the table version with LanceDB's row ids (:data:`ROW_ID`)."""
        row_ids = rows.column(ROW_ID).to_numpy()
        # One chunk: a LanceDB scan comes in a chunk per batch (~1,500 at 1.6M rows), and every
        # search takes its hits' rows by position; combined once, a take is one gather.
        self._sessions = Grouped(rows.drop_columns([ROW_ID]).combine_chunks(), "session_id")
        self.rows = self._sessions.rows
        # The row ids sorted, and each one's position: two arrays, not a dict of every row.
        order = np.argsort(row_ids, kind="stable")
        self._row_ids, self._row_at = row_ids[order], order

    def __len__(self) -> int:
        return self.rows.num_rows

    def by_row_id(self, row_ids: Sequence[int]) -> list[dict[str, Any]] | None:
        """The rows of these LanceDB row ids, in their order, or None when one is not held (the
        caller then reads the rows from the table). A search selects the row ids alone and so
        reads no column of the table (docs/benchmarks.md).

        A row id names a row of one fragment of the table's files (the fragment and the row's
        place in it), and fragments are never rewritten: an append, an update or a compaction
        writes new fragments under new ids, a deletion only hides rows. So an id a search returns
        on any version of the table names the row it named when these rows were read, or one
        not held here."""
        wanted = np.asarray(row_ids, dtype=np.uint64)
        if not len(wanted):
            return []
        at = np.searchsorted(self._row_ids, wanted)
        if (at >= len(self._row_ids)).any() or (self._row_ids[at] != wanted).any():
            return None
        return table_rows(self._sessions.take(self._row_at[at]))

    def of_sessions(self, sessions: Iterable[str], keep: Keep | None = None) -> pa.Table:
        """Every row of these sessions that ``keep`` keeps (a mask over them; the store's filter
        for the asker, which checks again the rows a caller converts)."""
        return self._sessions.table_of(sessions, keep)

    def of_entries(self, entry_ids: Iterable[str], keep: Keep | None = None) -> pa.Table:
        """Every row of these ledger entries (a turn's chunks and the claims drawn from it) that
        ``keep`` keeps: the turns the state and facts routes reach through a claim. Read from
        LanceDB by an ``entry_id IN (...)`` filter, the facts routes' turns took a compile's
        retrieval stage from 5 to 39 ms at 100k entries; grouped here (once per version, on
        first use) they are a lookup."""
        return self._entries.table_of(entry_ids, keep)

    def of_texts(self, texts: Iterable[str]) -> list[dict[str, Any]]:
        """Every row of these texts, unfiltered: the rows a vector search's tie at its k-th place
        is made of (rows of one text share one vector, so they score alike). A scan of the text
        column (ties are rare, and an index by text would hold every text twice)."""
        found = self.rows.filter(pc.is_in(self.rows.column("text"), value_set=pa.array(list(dict.fromkeys(texts)), pa.string())))
        return table_rows(found)

    @functools.cached_property
    def _entries(self) -> Grouped:
        return Grouped(self.rows, "entry_id")

"""Ledger days: the UTC date of an entry's transaction time (``recorded_at``), the partition
key of every view partitioned by ledger day.

Read through the ledger's verified reader: two columns for the list of days, and one pass
over the whole ledger for a range of days (a filter on ``recorded_at`` after the read; at
ledger scale here, ~2,000 entries, the read is tens of milliseconds).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from typing import Any, Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc


def day_column(table: pa.Table) -> pa.Array:
    # recorded_at is timestamp[us, UTC]: casting to date32 takes its UTC date.
    return pc.cast(table.column("recorded_at"), pa.date32())


def ledger_days(ledger) -> list[str]:
    """Every ledger day that has at least one entry, sorted (ISO dates)."""
    t = ledger.read(["recorded_at"])
    if not t.num_rows:
        return []
    return sorted(d.isoformat() for d in pc.unique(day_column(t)).to_pylist())


def entries_by_day(ledger, days: Iterable[str], *, until_seq: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """The entries of each of ``days`` (every day present as a key, possibly empty), in seq order."""
    wanted = set(days)
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    t = ledger.read(until_seq=until_seq)
    if t.num_rows:
        day_strs = [d.isoformat() for d in day_column(t).to_pylist()]
        mask = pa.array([d in wanted for d in day_strs])
        keep = t.filter(mask)
        kept_days = [d for d in day_strs if d in wanted]
        for day, row in zip(kept_days, keep.to_pylist()):
            out[day].append(row)
    return {d: out.get(d, []) for d in sorted(wanted)}


def day_range(start: str, end: str) -> list[str]:
    """Every ISO day from ``start`` to ``end`` inclusive; ValueError with a clear message otherwise."""
    try:
        a, b = date.fromisoformat(start), date.fromisoformat(end)
    except ValueError:
        raise ValueError(f"dates must be YYYY-MM-DD, got {start!r} and {end!r}") from None
    if a > b:
        raise ValueError(f"--from {start} is after --to {end}")
    return [(a + timedelta(days=i)).isoformat() for i in range((b - a).days + 1)]


def contiguous(days: Iterable[str], among: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """Sorted ISO days grouped into (first, last) runs of consecutive days: consecutive in the
    calendar, or with ``among`` (every ledger day, sorted) consecutive in it, so that a day with
    no entries between two ledger days does not split a run (it is no partition)."""
    wanted = sorted(set(days))
    if among is not None:
        index = {d: i for i, d in enumerate(among)}
        unknown = [d for d in wanted if d not in index]
        if unknown:
            raise ValueError(f"not ledger days: {unknown}")
        position = index.__getitem__
    else:
        position = lambda d: date.fromisoformat(d).toordinal()  # noqa: E731
    runs: list[list[str]] = []
    for d in wanted:
        if runs and position(d) - position(runs[-1][1]) == 1:
            runs[-1][1] = d
        else:
            runs.append([d, d])
    return [(a, b) for a, b in runs]

"""Conversation windows: a hit shown with the turns around it in its session, and hits a few
turns apart joined into one stretch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from query.config import QueryConfig
from query.context import ContextItem, iso
from views.evidence import asks
from views.grouped import table_rows
from views.lance_filters import visible_rows


def set_turns(item: ContextItem, turns: list[dict[str, Any]]) -> ContextItem:
    # One line per turn (a turn's own line breaks become spaces), so that the rendering and the
    # packer can tell the turns of a window apart.
    item.text = turns[0]["text"] if len(turns) == 1 else "\n".join(" ".join(t["text"].split()) for t in turns)
    item.source_refs = [t.get("source_ref") for t in turns]
    item.entry_ids = [t["entry_id"] for t in turns]
    return item


def turn_item(row: dict[str, Any], turns: list[dict[str, Any]], *, routes: list[str], score: float, relevance: float, valid_at: Any = None, **kw: Any) -> ContextItem:
    """An evidence item for the index row ``row`` (its hit: entry, ref, scope, kind, speaker,
    valid and recorded time) showing ``turns``; ``valid_at`` dates it otherwise."""
    return set_turns(
        ContextItem(
            entry_id=row["entry_id"],
            source_ref=row.get("source_ref"),
            scope=row["scope"],
            kind=row["kind"],
            actor=row.get("actor"),
            text="",
            valid_at=iso(row["valid_at"] if valid_at is None else valid_at),
            recorded_at=iso(row["recorded_at"]),
            routes=routes,
            score=score,
            relevance=relevance,
            **kw,
        ),
        turns,
    )


def join_stretch(items: list[ContextItem], stretches: list[list[dict[str, Any]]], turns: list[dict[str, Any]], *, limit: int) -> ContextItem | None:
    """The earlier item whose turns run on into ``turns`` (the same session, overlapping or next to
    them), now showing both as one stretch of the conversation, or None. Two hits a few turns
    apart then take one item slot, not two, while the stretch stays under ``limit`` turns: on
    LoCoMo dev recall@5 0.780 -> 0.803, recall@10 0.855 -> 0.856."""
    if not turns or "turn_no" not in turns[0]:
        return None  # not a conversation turn
    lo, hi = turns[0]["turn_no"], turns[-1]["turn_no"]
    for item, shown in zip(items, stretches):
        if (
            "turn_no" in shown[0]
            and shown[0].get("session_id") == turns[0].get("session_id")
            and lo <= shown[-1]["turn_no"] + 1
            and hi >= shown[0]["turn_no"] - 1
            and len(shown) + len(turns) <= limit
        ):
            shown[:] = sorted(shown + turns, key=lambda t: t["turn_no"])
            return set_turns(item, shown)
    return None


class Windows(Mapping[str, list[dict[str, Any]]]):
    """Each conversation turn's window by its entry id: the turns around it in its session as
    the asker sees them, each row with ``turn_no`` (its place in the session) and
    ``session_turns`` (how many the asker sees there).

    The sessions' rows stay in Arrow and a turn becomes a Python row when a window showing it is
    first looked up; :func:`session_windows` converts the windows of the hits it was given in one
    go. At 100k ledger entries a compile's windows read ~800 turns of ~40 sessions, and the windows
    it looks up hold under a third of them (~230): converting every one (and checking it) was ~11
    of ~75 ms (docs/benchmarks.md).
    ``|=`` adds another read's windows (an entry's later window replaces its earlier one)."""

    def __init__(self) -> None:
        self._at: dict[str, tuple[_Read, list[int], int]] = {}  # entry id -> (read, its session's rows, its place)

    def add(self, read: "_Read") -> None:
        for p, (session, i) in read.place.items():
            self._at[read.entry_ids[p]] = (read, session, i)

    def window(self, entry_id: str) -> tuple["_Read", list[int]] | None:
        """The read that holds ``entry_id`` and the positions of its window's rows there."""
        found = self._at.get(entry_id)
        if found is None:
            return None
        read, session, i = found
        return read, session[max(0, i - read.before) : i + read.after + 1]

    def __getitem__(self, entry_id: str) -> list[dict[str, Any]]:
        found = self.window(entry_id)
        if found is None:
            raise KeyError(entry_id)
        read, positions = found
        return read.rows(positions)

    def prepare(self, entry_ids: Iterable[str]) -> None:
        """Make the windows of these entries Python now, one take per read (each lookup alone
        would take its own)."""
        wanted: dict[int, tuple[_Read, list[int]]] = {}
        for e in entry_ids:
            if (found := self.window(e)) is not None:
                read, positions = found
                wanted.setdefault(id(read), (read, []))[1].extend(positions)
        for read, positions in wanted.values():
            read.make(positions)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._at

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def __ior__(self, other: "Windows") -> "Windows":
        self._at.update(other._at)
        return self


class _Read:
    """The rows of one read of sessions (an Arrow table), each turn's place in its session (the
    session's turns as positions in turn order), and the rows made Python so far, checked again
    for the asker as they are made."""

    def __init__(self, table: pa.Table, sessions: list[list[int]], entry_ids: list[str], before: int, after: int, check: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
        self.table, self.entry_ids, self.before, self.after, self.check = table, entry_ids, before, after, check
        self.place = {p: (session, i) for session in sessions for i, p in enumerate(session)}  # position -> (its session's, its index)
        self._made: dict[int, dict[str, Any] | None] = {}  # None: a row the check refused

    def rows(self, positions: list[int]) -> list[dict[str, Any]]:
        self.make(positions)
        return [r for p in positions if (r := self._made[p]) is not None]

    def make(self, positions: Iterable[int]) -> None:
        """Convert the rows at ``positions`` not made yet, in one take."""
        missing = sorted({p for p in positions if p not in self._made})
        if not missing:
            return
        made = table_rows(self.table.take(pa.array(missing, pa.int64())))
        kept = {id(r) for r in self.check(made)}
        for p, r in zip(missing, made):
            session, r["turn_no"] = self.place[p]
            r["session_turns"] = len(session)
            self._made[p] = r if id(r) in kept else None


def session_windows(
    store,
    ranked: list[dict[str, Any]],
    principals: list[str],
    scope: str | None,
    config: QueryConfig,
    when: tuple[datetime | None, datetime | None] = (None, None),
    look_up: Iterable[str] | None = None,
) -> Windows:
    """For conversation turns, the turns around each hit in the same session (``window_before``
    and ``window_after``): the answer to a question is often the reply to the hit, or the line
    that set it up. On LoCoMo dev, windows of 2+2 turns lift evidence recall@10 from 0.64 to 0.86
    for about 5x the tokens per item. The neighbours are fetched under the same visibility filter.
    Every turn of the hits' sessions has its window; those of ``look_up`` (entry ids; by default
    the hits of ``ranked``) are made Python here, in one take."""
    windows = Windows()
    if not (config.window_before or config.window_after):
        return windows
    sessions = sorted({s["hit"]["session_id"] for s in ranked if s["hit"].get("kind") == "message" and s["hit"].get("session_id")})
    if not sessions:
        return windows
    kinds = ("message",)
    rows = store.session_table(session_ids=sessions, principals=principals, scope=scope, kinds=kinds)
    as_of, known_at = when
    for column, bound in (("valid_at", as_of), ("recorded_at", known_at)):
        if bound is not None and rows.num_rows:
            rows = rows.filter(pc.fill_null(pc.less_equal(rows.column(column), pa.scalar(bound, rows.schema.field(column).type)), False))
    # Turn order within each session, one row per entry (a long message may have several chunks:
    # the first is kept).
    order = pc.sort_indices(rows, sort_keys=[("session_id", "ascending"), ("valid_at", "ascending"), ("seq", "ascending"), ("id", "ascending")])
    entry_ids, session_ids = rows.column("entry_id").to_pylist(), rows.column("session_id").to_pylist()
    turns: dict[str, list[int]] = {}
    seen: set[str] = set()
    for p in order.to_pylist():
        if entry_ids[p] not in seen:
            seen.add(entry_ids[p])
            turns.setdefault(session_ids[p], []).append(p)
    read = _Read(rows, list(turns.values()), entry_ids, config.window_before, config.window_after, lambda made: visible_rows(made, principals, scope, kinds))
    windows.add(read)
    windows.prepare(look_up if look_up is not None else (s["hit"]["entry_id"] for s in ranked))
    return windows


def narrowed(window: list[dict[str, Any]], entry_id: str, before: int, after: int) -> list[dict[str, Any]]:
    """The turns of ``window`` from ``before`` turns before the hit ``entry_id`` to ``after``
    turns after it (the whole window when the hit is not in it)."""
    at = next((i for i, t in enumerate(window) if t["entry_id"] == entry_id), None)
    return window if at is None else window[max(0, at - before) : at + after + 1]


def said(row: dict[str, Any]) -> str:
    """What an index row's speaker said: its text without the "<speaker>: " prefix the index
    puts before a turn (views/evidence.py)."""
    text, actor = row.get("text") or "", row.get("actor")
    return text[len(actor) + 2 :] if actor and text.startswith(f"{actor}: ") else text


def later_span(hit: dict[str, Any], config: QueryConfig) -> tuple[int, int]:
    """Turns before and after ``hit`` that an item after the first ``wide_items`` shows:
    ``narrow_before``, then ``narrow_after`` when the hit asks something and
    ``narrow_after_statement`` when it only states."""
    return config.narrow_before, config.narrow_after if asks(hit.get("text") or "") else config.narrow_after_statement


def later_window(window: list[dict[str, Any]], hit: dict[str, Any], config: QueryConfig) -> list[dict[str, Any]]:
    """The turns of ``window`` that a later item for ``hit`` shows (:func:`later_span`)."""
    return narrowed(window, hit["entry_id"], *later_span(hit, config))


def within_time(row: dict[str, Any], when: tuple[datetime | None, datetime | None]) -> bool:
    """A time-travel ask sees only evidence valid by ``as_of`` and recorded by ``known_at``."""
    as_of, known_at = when
    return (as_of is None or row["valid_at"] <= as_of) and (known_at is None or row["recorded_at"] <= known_at)

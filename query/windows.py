"""Conversation windows: a hit shown with the turns around it in its session, and hits a few
turns apart joined into one stretch.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from query.config import QueryConfig
from query.context import ContextItem, iso
from views.evidence import asks


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


def session_windows(
    store,
    ranked: list[dict[str, Any]],
    principals: list[str],
    scope: str | None,
    config: QueryConfig,
    when: tuple[datetime | None, datetime | None] = (None, None),
) -> dict[str, list[dict[str, Any]]]:
    """For conversation turns, the turns around each hit in the same session (``window_before``
    and ``window_after``): the answer to a question is often the reply to the hit, or the line
    that set it up. On LoCoMo dev, windows of 2+2 turns lift evidence recall@10 from 0.64 to 0.86
    for about 5x the tokens per item. The neighbours are fetched under the same visibility filter."""
    if not (config.window_before or config.window_after):
        return {}
    sessions = sorted({s["hit"]["session_id"] for s in ranked if s["hit"].get("kind") == "message" and s["hit"].get("session_id")})
    if not sessions:
        return {}
    by_session: dict[str, list[dict[str, Any]]] = {}
    for row in store.session_rows(session_ids=sessions, principals=principals, scope=scope, kinds=("message",)):
        if not within_time(row, when):
            continue
        by_session.setdefault(row["session_id"], []).append(row)
    out: dict[str, list[dict[str, Any]]] = {}
    for turns in by_session.values():
        turns.sort(key=lambda r: (r["valid_at"], r["seq"], r["id"]))
        # one row per entry (a long message may have several chunks): keep the first chunk
        seen, unique = set(), []
        for r in turns:
            if r["entry_id"] not in seen:
                seen.add(r["entry_id"])
                unique.append(r)
        for i, r in enumerate(unique):
            r["turn_no"] = i  # its place in the session as this asker sees it
            r["session_turns"] = len(unique)
        for i, r in enumerate(unique):
            out[r["entry_id"]] = unique[max(0, i - config.window_before) : i + config.window_after + 1]
    return out


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

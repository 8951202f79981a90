"""Evidence rows for retrieval: ledger entries rendered as searchable text, long ones chunked,
and claims rendered as short sentences ("Elena lives in Berlin (since 2024-05-14)").

One row per chunk or claim; a row id is a hash of its entry (or claim) and its text, so
re-rendering the same ledger gives the same ids and only new text is ever embedded. Claim rows
are extra keys pointing at their source turn: their ``entry_id`` is the claim's source entry, so
the query module fuses and ACL-checks them like the turn itself.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from memc.ids import content_id, entity_id, text_hash
from views.evidence_schema import EVIDENCE_SCHEMA

# Kinds that carry retrievable evidence. Derived claims reach retrieval through the state view.
RETRIEVABLE_KINDS = ("message", "document", "event", "observation", "correction")

# ~200 tokens: MiniLM truncates at 256 word pieces, so a longer chunk would be embedded in part.
CHUNK_CHARS = 800

# Bump when render(), chunk() or claim_sentence() change what a row says: it is part of the
# evidence index's code version, so the change marks the index out of date.
RENDER_VERSION = "evidence-rows-2"

CLAIM_KIND = "claim"

def render(entry: dict[str, Any]) -> str:
    """The text a person would search for: who said it, what, and any shared picture's caption."""
    attrs = json.loads(entry["attributes"] or "{}")
    parts = []
    if attrs.get("subject"):
        parts.append(f"Subject: {attrs['subject']}.")
    parts.append(f"{entry['actor']}: {entry['content']}" if entry["actor"] else entry["content"])
    if attrs.get("image_caption"):
        parts.append(f"[shared a photo: {attrs['image_caption']}]")
    return " ".join(parts)


def chunk(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Split on paragraph, then sentence boundaries, so that no chunk exceeds ``limit`` chars."""
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    for para in text.split("\n\n"):
        while len(para) > limit:
            cut = max(para.rfind(". ", 0, limit), para.rfind(" ", 0, limit))
            cut = cut + 1 if cut > 0 else limit
            pieces.append(para[:cut])
            para = para[cut:]
        pieces.append(para)
    chunks: list[str] = []
    for piece in (p.strip() for p in pieces):
        if not piece:
            continue
        if chunks and len(chunks[-1]) + 2 + len(piece) <= limit:
            chunks[-1] += "\n\n" + piece
        else:
            chunks.append(piece)
    return chunks


def mentions_from_entities(entities: pa.Table | None) -> dict[str, list[str]]:
    """entry_id -> sorted entity ids, from the entities mart (each entity lists the entries that
    mention it: the turns it spoke and the sources of claims about it)."""
    out: dict[str, set[str]] = defaultdict(set)
    if entities is None or entities.num_rows == 0:
        return {}
    for ent, evidence in zip(entities.column("entity_id").to_pylist(), entities.column("evidence").to_pylist()):
        for e in evidence or ():
            out[e].add(ent)
    return {k: sorted(v) for k, v in out.items()}


# The ledger columns evidence_rows (and render) read: a ledger read of these alone, not every
# column, turned into dicts (``Ledger.iter_entries(columns=...)``).
ENTRY_COLUMNS = [
    "seq", "entry_id", "recorded_at", "valid_at", "kind", "scope", "session_id", "actor", "content",
    "source_ref", "visibility", "attributes",
]  # fmt: skip


def evidence_rows(entries: Iterable[dict[str, Any]], mentions: Mapping[str, Sequence[str]] | None = None) -> pa.Table:
    """One row per chunk of each retrievable entry. ``mentions`` (entry_id -> entity ids, see
    :func:`mentions_from_entities`) fills ``entity_ids``; without it a message is tagged with its
    speaker only."""
    rows = []
    for e in entries:
        if e["kind"] not in RETRIEVABLE_KINDS:
            continue
        if mentions is not None:
            ents = sorted(mentions.get(e["entry_id"], ()))
        else:
            ents = [entity_id(e["scope"], e["actor"])] if e["kind"] == "message" and e["actor"] else []
        for i, text in enumerate(chunk(render(e))):
            h = text_hash(text)
            rows.append(
                {
                    "id": content_id("ch", e["entry_id"], i, h),
                    "entry_id": e["entry_id"],
                    "seq": e["seq"],
                    "kind": e["kind"],
                    "scope": e["scope"],
                    "session_id": e["session_id"],
                    "actor": e["actor"],
                    "source_ref": e["source_ref"],
                    "visibility": list(e["visibility"] or []),
                    "valid_at": e["valid_at"],
                    "recorded_at": e["recorded_at"],
                    "text": text,
                    "content_hash": h,
                    "entity_ids": ents,
                    "claim_id": None,
                }
            )
    return pa.Table.from_pylist(rows, schema=EVIDENCE_SCHEMA)


def claim_sentence(claim: Mapping[str, Any]) -> str:
    """``Elena lives in Berlin (since 2024-05-14)``: what a person would type, plus the valid time
    (functional predicates hold *since* it; multi-valued ones were stated *as of* it)."""
    verb = str(claim["predicate"]).replace("_", " ")
    when = claim["valid_at"]
    day = when.date().isoformat() if isinstance(when, datetime) else str(when)[:10]
    if claim.get("polarity") == "retract":
        # A retraction closes a claim: rendering it as the claim itself would assert the opposite.
        return f"{claim['subject']} no longer {verb} {claim['object']} (from {day})"
    since = "since" if claim.get("cardinality", "functional") == "functional" else "as of"
    return f"{claim['subject']} {verb} {claim['object']} ({since} {day})"


def claim_rows(claims: pa.Table | Iterable[Mapping[str, Any]], known_entities: Iterable[str] = ()) -> pa.Table:
    """One row per claim, rendered by :func:`claim_sentence`, with the claim's own scope,
    visibility (never broader than its source's) and valid/recorded time. ``entity_ids`` holds the
    subject and, when the object is an entity too (``object_id``, or a name in
    ``known_entities``), the object."""
    known = set(known_entities)
    records = claims.to_pylist() if isinstance(claims, pa.Table) else list(claims)
    rows = []
    for c in records:
        if c["predicate"] == "mentions_identifier":
            # The identifier is already in the source turn's text, where full text finds it.
            continue
        text = claim_sentence(c)
        h = text_hash(text)
        ents = {c["subject_id"]}
        obj = c.get("object_id") or entity_id(c["scope"], c["object"])
        if c.get("object_id") or obj in known:
            ents.add(obj)
        rows.append(
            {
                "id": content_id("cl", c["claim_id"], h),
                "entry_id": c["source_entry_id"],
                "seq": c["source_seq"],
                "kind": CLAIM_KIND,
                "scope": c["scope"],
                "session_id": None,
                "actor": None,
                "source_ref": c.get("source_ref"),
                "visibility": list(c["visibility"] or []),
                "valid_at": c["valid_at"],
                "recorded_at": c["recorded_at"],
                "text": text,
                "content_hash": h,
                "entity_ids": sorted(ents),
                "claim_id": c["claim_id"],
            }
        )
    return pa.Table.from_pylist(rows, schema=EVIDENCE_SCHEMA)


def index_rows(
    entries: Iterable[dict[str, Any]],
    claims: pa.Table | None = None,
    entities: pa.Table | None = None,
) -> pa.Table:
    """Everything the evidence index holds: entry chunks, then claim sentences, sorted by id (the
    same inputs give the same table, whatever order they came in)."""
    mentions = mentions_from_entities(entities) if entities is not None else None
    known = set(entities.column("entity_id").to_pylist()) if entities is not None and entities.num_rows else set()
    parts = [evidence_rows(entries, mentions)]
    if claims is not None and claims.num_rows:
        parts.append(claim_rows(claims, known))
    out = pa.concat_tables(parts)
    return out.sort_by([("id", "ascending")]) if out.num_rows else out

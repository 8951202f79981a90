"""Evidence rows for retrieval: ledger entries rendered as searchable text, long ones chunked.

One row per chunk; a chunk id is a hash of its entry and its text, so re-rendering the same
ledger gives the same ids and only new text is ever embedded.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

import pyarrow as pa

from memc.ids import content_id, text_hash
from views.vectors import EVIDENCE_SCHEMA

# Kinds that carry retrievable evidence. Derived claims reach retrieval through the state view.
RETRIEVABLE_KINDS = ("message", "document", "event", "observation", "correction")

# ~200 tokens: MiniLM truncates at 256 word pieces, so a longer chunk would be embedded in part.
CHUNK_CHARS = 800

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


def evidence_rows(entries: Iterable[dict[str, Any]]) -> pa.Table:
    rows = []
    for e in entries:
        if e["kind"] not in RETRIEVABLE_KINDS:
            continue
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
                }
            )
    return pa.Table.from_pylist(rows, schema=EVIDENCE_SCHEMA)

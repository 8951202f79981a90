"""The ledger entry: its Arrow schema and the validated shape of an entry before commit."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from typing import Any, Literal, Sequence

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memc.ids import content_id, digest, text_hash
from memc.visibility import PRINCIPAL_PATTERN, PUBLIC, RESERVED_PREFIX, SCOPE_PATTERN

__all__ = ["PRINCIPAL_PATTERN", "PUBLIC", "RESERVED_PREFIX", "SCOPE_PATTERN"]  # re-exported: the entry's rules

EntryKind = Literal[
    "message",  # a turn in a conversation
    "document",  # a text, Markdown or e-mail body
    "event",  # a generic structured event
    "observation",  # something an agent or tool observed
    "correction",  # a user correcting an earlier statement
    "erasure",  # a tombstone: who, when, why, which ids (never the erased content)
    "derived_claim",  # written back by a producer (e.g. dreaming) with lineage
]
ENTRY_KINDS: tuple[str, ...] = EntryKind.__args__  # type: ignore[attr-defined]

TS = pa.timestamp("us", tz="UTC")

LEDGER_SCHEMA = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("entry_id", pa.string(), nullable=False),
        pa.field("recorded_at", TS, nullable=False),
        pa.field("valid_at", TS, nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("scope", pa.string(), nullable=False),
        pa.field("session_id", pa.string()),
        pa.field("actor", pa.string()),
        pa.field("content", pa.string(), nullable=False),
        pa.field("content_hash", pa.string(), nullable=False),
        pa.field("source_uri", pa.string()),
        pa.field("source_ref", pa.string()),
        pa.field("visibility", pa.list_(pa.string()), nullable=False),
        pa.field("confidence", pa.float64(), nullable=False),
        pa.field("idempotency_key", pa.string(), nullable=False),
        pa.field("attributes", pa.string()),  # JSON object: format-specific extras (subject, image caption...)
        pa.field("derived_from", pa.list_(pa.string())),
        pa.field("producer", pa.string()),
        pa.field("producer_version", pa.string()),
        pa.field("watermark", pa.int64()),
        # Who put the entry in the ledger: the principal of the API key or MCP server, or the
        # home's operator (``memc:cli``, ``memc:inbox``) or a producer (``memc:dreaming``).
        # Null in batches written before the column existed. Never set from a file's contents.
        pa.field("ingested_by", pa.string()),
    ]
)
LEDGER_COLUMNS = tuple(LEDGER_SCHEMA.names)

# The attributes key of the caption of a picture an entry shares (a chat app's alt text, a
# conversation file's ``image_caption``): said with the entry, so a claim may quote it.
IMAGE_CAPTION = "image_caption"


def image_caption(attributes: str | None) -> str | None:
    """The caption of the picture an entry shares, from its attributes JSON, or None."""
    if not attributes or IMAGE_CAPTION not in attributes:
        return None  # most entries share none: no JSON parse for them
    caption = json.loads(attributes).get(IMAGE_CAPTION)
    return caption if isinstance(caption, str) and caption.strip() else None


def said_in(quote: str | None, content: str | None, attributes: str | None) -> bool:
    """Whether a claim's quote occurs verbatim in what its entry says: the content, or the
    caption of the picture the entry shares (never across the two)."""
    if not quote:
        return False
    return quote in (content or "") or quote in (image_caption(attributes) or "")


class NewEntry(BaseModel):
    """An entry as a producer hands it to the ledger; seq and recorded_at are assigned at commit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: EntryKind
    scope: str = Field(default="default", pattern=SCOPE_PATTERN)
    content: str = Field(max_length=1_000_000)
    valid_at: datetime
    session_id: str | None = Field(default=None, max_length=512)
    actor: str | None = Field(default=None, max_length=256)
    source_uri: str | None = Field(default=None, max_length=4096)
    source_ref: str | None = Field(default=None, max_length=512)
    visibility: tuple[str, ...] = Field(default=(PUBLIC,), min_length=1)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=256)
    attributes: dict[str, Any] = Field(default_factory=dict)
    derived_from: tuple[str, ...] = ()
    producer: str | None = None
    producer_version: str | None = None
    watermark: int | None = Field(default=None, ge=0)
    ingested_by: str | None = Field(default=None, pattern=PRINCIPAL_PATTERN)

    @field_validator("valid_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        # Naive times are taken as UTC: the ledger stores one time zone so that folds compare.
        try:
            return v.replace(tzinfo=timezone.utc) if v.tzinfo is None else v.astimezone(timezone.utc)
        except OverflowError:  # e.g. 0001-01-01T00:00:00+05:00: before year 1 in UTC
            raise ValueError("out of range: in UTC this time falls outside the years 1-9999") from None

    @field_validator("visibility")
    @classmethod
    def _principals(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [p for p in v if not re.match(PRINCIPAL_PATTERN, p)]
        if bad:
            raise ValueError(f"malformed principal(s) {bad!r}: use letters, digits and _.@:-")
        return tuple(sorted(set(v)))

    @property
    def content_hash(self) -> str:
        return text_hash(self.content)

    def identity(self, content_hash: str | None = None) -> list[Any]:
        """What makes two entries the same evidence (the source path is not part of it, so the
        same file ingested from another folder is still a duplicate).

        A principal's writes are its own evidence: who ingested is part of the identity, so a
        principal cannot pre-empt another's entries by writing their twin first (the twin would
        make the other's later append a "duplicate" it may not see). The home's operator and
        memc's producers (``memc:`` names) keep the identity entries had before the column
        existed, so re-ingesting an old file stays a no-op."""
        writer = [self.ingested_by] if self.ingested_by and not self.ingested_by.startswith(RESERVED_PREFIX) else []
        return [
            self.kind,
            self.scope,
            self.session_id,
            self.actor,
            self.valid_at.isoformat(),
            self.source_ref,
            content_hash or self.content_hash,
            list(self.derived_from),
            self.producer,
            self.producer_version,
            self.watermark,
            *writer,
        ]

    @property
    def key(self) -> str:
        """The idempotency key: given by the caller, or derived from the entry's identity."""
        return self.idempotency_key or "k_" + digest(*self.identity())[:32]

    @property
    def entry_id(self) -> str:
        return content_id("e", self.key, *self.identity())

    def derived(self) -> tuple[str, str, str]:
        """``(content_hash, key, entry_id)`` in one pass: the same values as the properties
        (memc.ids' canonical JSON, byte for byte; tests/unit/test_ledger_schema.py holds the two
        to it), with the content hashed once and the identity rendered by a prebuilt encoder.
        The properties hash the content three times and build a JSON encoder per call: 7.5 us of
        CPU an entry for the three against 4.7 here (10,000 entries, 2026-12; the old append also
        computed the entry id twice)."""
        ch = text_hash(self.content)
        if _ID_ENCODER is None:  # pragma: no cover - CPython always has the C accelerator
            return ch, self.key, self.entry_id
        rendered = "".join(_ID_ENCODER(self.identity(ch), 0))  # '[kind,scope,...]'
        key = self.idempotency_key or "k_" + _sha(rendered)[:32]
        # content_id("e", key, *identity) renders '[key,kind,scope,...]': the same text with the
        # key spliced in, so the identity is encoded once.
        return ch, key, "e_" + _sha("[" + _encode_basestring(key) + "," + rendered[1:])[:24]

    def to_row(self, seq: int, recorded_at: datetime) -> dict[str, Any]:
        return {
            "seq": seq,
            "entry_id": self.entry_id,
            "recorded_at": recorded_at,
            "valid_at": self.valid_at,
            "kind": self.kind,
            "scope": self.scope,
            "session_id": self.session_id,
            "actor": self.actor,
            "content": self.content,
            "content_hash": self.content_hash,
            "source_uri": self.source_uri,
            "source_ref": self.source_ref,
            "visibility": list(self.visibility),
            "confidence": float(self.confidence),
            "idempotency_key": self.key,
            "attributes": json.dumps(self.attributes, sort_keys=True, ensure_ascii=False) if self.attributes else None,
            "derived_from": list(self.derived_from),
            "producer": self.producer,
            "producer_version": self.producer_version,
            "watermark": self.watermark,
            "ingested_by": self.ingested_by,
        }


# memc.ids.digest renders its parts with json.dumps(sort_keys=True, separators=(",", ":"),
# ensure_ascii=False, default=str); json.dumps builds a JSONEncoder and a C encoder on every call
# (about 2.5 us of a 4 us digest here). This is that C encoder, built once, with the same
# arguments, so the bytes hashed are the same. No circular check: identities are fresh lists.
try:
    from json.encoder import c_make_encoder as _c_make_encoder, encode_basestring as _encode_basestring
except ImportError:  # pragma: no cover - CPython always has the C accelerator
    _c_make_encoder = None
_ID_ENCODER = (
    _c_make_encoder(None, str, _encode_basestring, None, ":", ",", True, False, True) if _c_make_encoder else None
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _attributes_encoder():
    """The attributes column as to_row writes it, json.dumps(sort_keys=True, ensure_ascii=False):
    the C encoder json.dumps would build for each entry (0.9 us of its 1.8), built once a batch
    (its circular-reference markers are per call, so per batch, never shared between threads)."""
    if _c_make_encoder is None:  # pragma: no cover
        return lambda obj: json.dumps(obj, sort_keys=True, ensure_ascii=False)
    enc = _c_make_encoder({}, json.JSONEncoder().default, _encode_basestring, None, ": ", ", ", True, False, True)
    return lambda obj: "".join(enc(obj, 0))


def entries_table(entries: Sequence[NewEntry], derived: Sequence[tuple[str, str, str]], first_seq: int,
                  recorded_at: datetime) -> pa.Table:
    """The batch as Arrow, column by column: the table ``pa.Table.from_pylist([e.to_row(...)])``
    builds (tests/unit/test_ledger_schema.py compares them), without a dict per row. Every
    value was validated when its NewEntry was built; Arrow checks each column's type here.
    At 10,000 entries 38 ms of CPU against 190 ms for to_row + from_pylist (which computed the
    ids again inside to_row; docs/benchmarks.md)."""
    n = len(entries)
    attrs = _attributes_encoder()
    cols: dict[str, Any] = {
        "seq": pa.array(range(first_seq, first_seq + n), pa.int64()),
        "entry_id": [d[2] for d in derived],
        "recorded_at": pa.array([recorded_at] * n, TS),
        "valid_at": pa.array([e.valid_at for e in entries], TS),
        "kind": [e.kind for e in entries],
        "scope": [e.scope for e in entries],
        "session_id": [e.session_id for e in entries],
        "actor": [e.actor for e in entries],
        "content": [e.content for e in entries],
        "content_hash": [d[0] for d in derived],
        "source_uri": [e.source_uri for e in entries],
        "source_ref": [e.source_ref for e in entries],
        "visibility": [e.visibility for e in entries],  # tuples: Arrow takes them as lists, no list per row
        "confidence": [float(e.confidence) for e in entries],
        "idempotency_key": [d[1] for d in derived],
        "attributes": [attrs(e.attributes) if e.attributes else None for e in entries],
        "derived_from": [e.derived_from for e in entries],
        "producer": [e.producer for e in entries],
        "producer_version": [e.producer_version for e in entries],
        "watermark": [e.watermark for e in entries],
        "ingested_by": [e.ingested_by for e in entries],
    }
    arrays = [v if isinstance(v, pa.Array) else pa.array(v, f.type) for f, v in zip(LEDGER_SCHEMA, cols.values())]
    return pa.Table.from_arrays(arrays, schema=LEDGER_SCHEMA)
